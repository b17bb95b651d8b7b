#include "kforge/prompt/recommendation.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "code_blocks.h"

namespace kforge {
namespace {

using nlohmann::json;
using prompt_internal::FindCodeBlocks;
using prompt_internal::Trim;

constexpr const char* kFormat =
    "Answer with one JSON object, in a ```json block, of this form:\n\n"
    "```json\n"
    "{\"recommendations\": [{\"bottleneck\": \"what limits the kernel\", "
    "\"evidence\": \"the figures that show it\", "
    "\"changes\": [\"a concrete code change\", \"...\"], "
    "\"expected_gain\": \"e.g. 1.5x, and why\"}]}\n"
    "```";

Error Feedback(std::string_view problem) {
  return Error{ErrorCode::kParse,
               fmt::format("Your analysis could not be used: {}.\n\n{}", problem, kFormat)};
}

// A string field that may also be given as a list of strings (joined by "; ") or a number.
std::optional<std::string> TextOf(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number()) return value.dump();
  if (value.is_array()) {
    std::string joined;
    for (const json& item : value) {
      if (!item.is_string()) return std::nullopt;
      if (!joined.empty()) joined += "; ";
      joined += item.get<std::string>();
    }
    return joined;
  }
  return std::nullopt;
}

Result<Recommendation> ToRecommendation(const json& item, std::size_t index) {
  const std::string where = fmt::format("recommendation {}", index + 1);
  if (!item.is_object()) {
    return std::unexpected(Feedback(fmt::format("{} is not a JSON object", where)));
  }
  Recommendation r;
  for (const char* key : {"bottleneck", "evidence", "changes", "expected_gain"}) {
    if (!item.contains(key)) {
      return std::unexpected(Feedback(fmt::format("{} has no \"{}\"", where, key)));
    }
  }
  auto bottleneck = TextOf(item["bottleneck"]);
  auto evidence = TextOf(item["evidence"]);
  auto gain = TextOf(item["expected_gain"]);
  if (!bottleneck || Trim(*bottleneck).empty()) {
    return std::unexpected(Feedback(fmt::format("{} has an empty \"bottleneck\"", where)));
  }
  if (!evidence) {
    return std::unexpected(Feedback(fmt::format("{}: \"evidence\" is not text", where)));
  }
  if (!gain) {
    return std::unexpected(Feedback(fmt::format("{}: \"expected_gain\" is not text", where)));
  }
  r.bottleneck = std::string(Trim(*bottleneck));
  r.evidence = std::string(Trim(*evidence));
  r.expected_gain = std::string(Trim(*gain));
  const json& changes = item["changes"];
  if (changes.is_string()) {
    if (!Trim(changes.get<std::string>()).empty()) {
      r.changes.emplace_back(Trim(changes.get<std::string>()));
    }
  } else if (changes.is_array()) {
    for (const json& c : changes) {
      auto text = TextOf(c);
      if (!text) {
        return std::unexpected(
            Feedback(fmt::format("{}: every entry of \"changes\" must be text", where)));
      }
      if (!Trim(*text).empty()) r.changes.emplace_back(Trim(*text));
    }
  } else {
    return std::unexpected(
        Feedback(fmt::format("{}: \"changes\" must be a list of strings", where)));
  }
  if (r.changes.empty()) {
    return std::unexpected(
        Feedback(fmt::format("{} proposes no change (\"changes\" is empty)", where)));
  }
  return r;
}

Result<std::vector<Recommendation>> FromJson(const json& doc) {
  const json* list = nullptr;
  json single = json::array();
  if (doc.is_object() && doc.contains("recommendations")) {
    list = &doc["recommendations"];
    if (!list->is_array()) {
      return std::unexpected(Feedback("\"recommendations\" is not a list"));
    }
  } else if (doc.is_array()) {
    list = &doc;
  } else if (doc.is_object() && doc.contains("bottleneck")) {
    single.push_back(doc);
    list = &single;
  } else {
    return std::unexpected(Feedback("the JSON has no \"recommendations\" list"));
  }
  if (list->empty()) return std::unexpected(Feedback("the \"recommendations\" list is empty"));
  std::vector<Recommendation> out;
  for (std::size_t i = 0; i < list->size(); ++i) {
    auto r = ToRecommendation((*list)[i], i);
    if (!r) return std::unexpected(std::move(r).error());
    out.push_back(std::move(*r));
  }
  return out;
}

std::optional<json> TryParse(std::string_view text) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !(doc.is_object() || doc.is_array())) return std::nullopt;
  return doc;
}

// The end (exclusive) of the JSON value starting with the bracket at `start`, counting brackets
// outside strings; npos when it is not closed.
std::size_t BalancedEnd(std::string_view text, std::size_t start) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

}  // namespace

Result<std::vector<Recommendation>> ParseRecommendations(std::string_view answer) {
  std::vector<std::string> texts;  // JSON candidates, most likely first
  const auto blocks = FindCodeBlocks(answer);
  for (const auto& b : blocks) {
    if (b.language == "json") texts.push_back(b.body);
  }
  for (const auto& b : blocks) {
    if (b.language != "json") texts.push_back(b.body);
  }
  texts.emplace_back(answer);

  std::optional<Error> first_error;
  for (const std::string& text : texts) {
    std::string_view view = text;
    if (auto doc = TryParse(view)) {
      auto r = FromJson(*doc);
      if (r) return r;
      if (!first_error) first_error = r.error();
      continue;
    }
    // JSON inside prose: try each object or list that opens at a bracket and closes in balance.
    int tries = 0;
    for (std::size_t i = view.find_first_of("{["); i != std::string_view::npos && tries < 64;
         i = view.find_first_of("{[", i + 1)) {
      std::size_t end = BalancedEnd(view, i);
      if (end == std::string_view::npos) continue;
      ++tries;
      auto doc = TryParse(view.substr(i, end - i));
      if (!doc) continue;
      auto r = FromJson(*doc);
      if (r) return r;
      if (!first_error) first_error = r.error();
      i = end - 1;  // a rejected document: look past it
    }
  }
  if (first_error) return std::unexpected(*first_error);
  return std::unexpected(Feedback("it contains no valid JSON object"));
}

std::string RecommendationsToJson(const std::vector<Recommendation>& recommendations) {
  using ordered = nlohmann::ordered_json;
  ordered list = ordered::array();
  for (const Recommendation& r : recommendations) {
    ordered item = ordered::object();
    item["bottleneck"] = r.bottleneck;
    item["evidence"] = r.evidence;
    item["changes"] = r.changes;
    item["expected_gain"] = r.expected_gain;
    list.push_back(std::move(item));
  }
  ordered doc = ordered::object();
  doc["recommendations"] = std::move(list);
  return doc.dump();
}

}  // namespace kforge
