#include "csv.h"

#include <charconv>
#include <cmath>

namespace kforge::profile {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::vector<CsvRow> ReadCsv(std::string_view text) {
  std::vector<CsvRow> rows;
  CsvRow row;
  std::string field;
  bool quoted = false;      // inside quotes
  bool was_quoted = false;  // the current field had quotes (keep its spaces)
  bool any = false;         // the current row has content
  auto end_field = [&] {
    row.push_back(was_quoted ? field : std::string(Trim(field)));
    field.clear();
    was_quoted = false;
  };
  auto end_row = [&] {
    end_field();
    if (any) rows.push_back(std::move(row));
    row.clear();
    any = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"') {
      if (Trim(field).empty()) field.clear();  // spaces before an opening quote
      quoted = was_quoted = any = true;
    } else if (c == ',') {
      end_field();
      any = true;
    } else if (c == '\n') {
      end_row();
    } else if (c != '\r') {
      field += c;
      if (c != ' ' && c != '\t') any = true;
    }
  }
  if (any || !field.empty()) end_row();
  return rows;
}

std::optional<std::size_t> ColumnOf(const CsvRow& header, std::string_view name) {
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (Trim(header[i]) == name) return i;
  }
  return std::nullopt;
}

std::optional<double> ParseNumber(std::string_view text) {
  std::string clean;
  for (char c : Trim(text)) {
    if (c != ',' && c != '"') clean += c;
  }
  if (clean.empty()) return std::nullopt;
  double value = 0;
  auto [ptr, ec] = std::from_chars(clean.data(), clean.data() + clean.size(), value);
  if (ec != std::errc() || ptr != clean.data() + clean.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

}  // namespace kforge::profile
