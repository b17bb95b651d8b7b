#include "kforge/eval/diagnostics.h"

#include <fmt/format.h>

#include <sstream>

#include <fmt/ranges.h>
#include <vector>

namespace kforge {
namespace {

bool Contains(std::string_view line, std::string_view what) {
  return line.find(what) != std::string_view::npos;
}

bool IsErrorLine(std::string_view line) {
  return Contains(line, "error:") || Contains(line, "error #") || Contains(line, "Error:") ||
         Contains(line, ": fatal error") || Contains(line, "undefined reference");
}

// Lines that belong to instantiation chains, notes or warnings: noise for a model.
bool IsNoise(std::string_view line) {
  return Contains(line, "In instantiation of") || Contains(line, "required from") ||
         Contains(line, "In file included from") || Contains(line, "                 from ") ||
         Contains(line, "note:") || Contains(line, "warning:") || Contains(line, "Remark:") ||
         Contains(line, "detected during") || Contains(line, "In function") ||
         Contains(line, "compilation terminated") || Contains(line, "errors detected in the") ||
         Contains(line, "instantiation of");
}

void ReplaceAll(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  for (std::size_t pos = s.find(from); pos != std::string::npos;
       pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
}

}  // namespace

std::string TrimDiagnostics(std::string_view log, std::string_view work_dir,
                            const TrimOptions& options) {
  std::string text(log);
  if (!work_dir.empty()) {
    std::string dir(work_dir);
    if (!dir.ends_with('/')) dir += '/';
    ReplaceAll(text, dir, "");
  }
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.size() > options.max_line_chars) {
      line = line.substr(0, options.max_line_chars) + " [...]";
    }
    lines.push_back(std::move(line));
  }

  std::vector<std::string> kept;
  std::size_t errors = 0;
  std::size_t total_errors = 0;
  bool in_error = false;  // following an error line: keep its source and caret lines
  for (const auto& line : lines) {
    if (IsErrorLine(line)) {
      ++total_errors;
      in_error = errors < options.max_errors;
      if (in_error) {
        ++errors;
        kept.push_back(line);
      }
      continue;
    }
    if (IsNoise(line)) {
      in_error = false;
      continue;
    }
    if (in_error && kept.size() < options.max_lines) kept.push_back(line);
  }
  if (total_errors == 0) {
    // Not a compiler-shaped log (a linker or driver message): keep its head.
    for (const auto& line : lines) {
      if (kept.size() >= options.max_lines) break;
      if (!line.empty()) kept.push_back(line);
    }
    return fmt::format("{}", fmt::join(kept, "\n"));
  }
  if (kept.size() > options.max_lines) kept.resize(options.max_lines);
  std::string out = fmt::format("{}", fmt::join(kept, "\n"));
  if (total_errors > errors) {
    out += fmt::format("\n[{} more errors not shown; fix the first ones first]",
                       total_errors - errors);
  }
  return out;
}

}  // namespace kforge
