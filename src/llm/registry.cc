#include "kforge/llm/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <set>
#include <toml++/toml.h>
#include <utility>

#include "kforge/core/files.h"
#include "kforge/llm/anthropic.h"
#include "kforge/llm/gemini.h"
#include "kforge/llm/openai.h"

namespace kforge::llm {
namespace {

namespace fs = std::filesystem;

constexpr std::array<std::string_view, 23> kFields = {
    "id",           "provider",          "model",
    "endpoint",     "api_key_env",       "key_required",
    "context_window", "vision",          "price_input_per_mtok",
    "price_output_per_mtok", "requests_per_minute", "tokens_per_minute",
    "max_concurrency", "burst",          "share_limits",
    "stream",       "connect_timeout_s", "read_timeout_s",
    "call_timeout_s", "max_attempts",    "dir",
    "description",  "enabled"};

std::string Where(const std::string& source, const toml::node& node) {
  return fmt::format("{}:{}", source, node.source().begin.line);
}

// Reads one entry table, checking names and types; every error names file and line.
class EntryReader {
 public:
  EntryReader(const toml::table& table, std::string source)
      : table_(table), source_(std::move(source)) {}

  Status CheckFieldNames() const {
    for (const auto& [key, node] : table_) {
      if (std::find(kFields.begin(), kFields.end(), key.str()) == kFields.end()) {
        return ParseError(fmt::format("{}: unknown field '{}' in a [[models]] entry (known: {})",
                                      Where(source_, node), key.str(), fmt::join(kFields, ", ")));
      }
    }
    return Ok();
  }

  Status String(std::string_view key, std::string* out) const {
    const toml::node* node = table_.get(key);
    if (node == nullptr) return Ok();
    if (!node->is_string()) return TypeError(*node, key, "a string in quotes");
    *out = node->value<std::string>().value_or("");
    return Ok();
  }

  Status Bool(std::string_view key, bool* out) const {
    const toml::node* node = table_.get(key);
    if (node == nullptr) return Ok();
    if (!node->is_boolean()) return TypeError(*node, key, "true or false");
    *out = node->value<bool>().value_or(false);
    return Ok();
  }

  Status Int(std::string_view key, std::int64_t* out) const {
    const toml::node* node = table_.get(key);
    if (node == nullptr) return Ok();
    if (!node->is_integer() || node->value<std::int64_t>().value_or(-1) < 0) {
      return TypeError(*node, key, "a non-negative integer");
    }
    *out = node->value<std::int64_t>().value_or(0);
    return Ok();
  }

  Status Number(std::string_view key, double* out) const {
    const toml::node* node = table_.get(key);
    if (node == nullptr) return Ok();
    if (!node->is_number() || node->value<double>().value_or(-1.0) < 0) {
      return TypeError(*node, key, "a non-negative number");
    }
    *out = node->value<double>().value_or(0.0);
    return Ok();
  }

  std::string Here() const { return Where(source_, table_); }
  bool Has(std::string_view key) const { return table_.contains(key); }

 private:
  std::unexpected<Error> TypeError(const toml::node& node, std::string_view key,
                                   std::string_view want) const {
    return ParseError(fmt::format("{}: field '{}' must be {}", Where(source_, node), key, want));
  }

  const toml::table& table_;
  const std::string source_;
};

std::chrono::milliseconds Seconds(double s) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(s * 1000));
}

Result<ModelEntry> ReadEntry(const toml::table& table, const std::string& source) {
  EntryReader r(table, source);
  KFORGE_RETURN_IF_ERROR(r.CheckFieldNames());
  ModelEntry e;
  e.source = r.Here();
  KFORGE_RETURN_IF_ERROR(r.String("id", &e.id));
  if (e.id.empty()) return ParseError(fmt::format("{}: a [[models]] entry needs an `id`", r.Here()));
  std::string provider;
  KFORGE_RETURN_IF_ERROR(r.String("provider", &provider));
  const auto kind = ParseProviderKind(provider);
  if (!kind) {
    return ParseError(fmt::format(
        "{}: model '{}' has provider '{}'; use one of openai, anthropic, gemini, "
        "openai_compatible, inbox",
        r.Here(), e.id, provider));
  }
  e.provider = *kind;
  e.key_required = e.provider == ProviderKind::kOpenAi || e.provider == ProviderKind::kAnthropic ||
                   e.provider == ProviderKind::kGemini;
  KFORGE_RETURN_IF_ERROR(r.String("model", &e.model));
  if (e.model.empty()) e.model = e.id;
  KFORGE_RETURN_IF_ERROR(r.String("endpoint", &e.endpoint));
  KFORGE_RETURN_IF_ERROR(r.String("api_key_env", &e.api_key_env));
  KFORGE_RETURN_IF_ERROR(r.Bool("key_required", &e.key_required));
  if (e.api_key_env.empty()) e.key_required = false;
  KFORGE_RETURN_IF_ERROR(r.Int("context_window", &e.context_window));
  KFORGE_RETURN_IF_ERROR(r.Bool("vision", &e.vision));
  KFORGE_RETURN_IF_ERROR(r.Number("price_input_per_mtok", &e.pricing.input_usd_per_mtok));
  KFORGE_RETURN_IF_ERROR(r.Number("price_output_per_mtok", &e.pricing.output_usd_per_mtok));
  KFORGE_RETURN_IF_ERROR(r.Number("requests_per_minute", &e.limits.requests_per_minute));
  KFORGE_RETURN_IF_ERROR(r.Number("tokens_per_minute", &e.limits.tokens_per_minute));
  std::int64_t value = e.limits.max_concurrency;
  KFORGE_RETURN_IF_ERROR(r.Int("max_concurrency", &value));
  e.limits.max_concurrency = static_cast<int>(value);
  value = e.limits.burst;
  KFORGE_RETURN_IF_ERROR(r.Int("burst", &value));
  e.limits.burst = std::max(1, static_cast<int>(value));
  KFORGE_RETURN_IF_ERROR(r.Bool("share_limits", &e.share_limits));
  KFORGE_RETURN_IF_ERROR(r.Bool("stream", &e.stream));
  double seconds = static_cast<double>(e.connect_timeout.count()) / 1000;
  KFORGE_RETURN_IF_ERROR(r.Number("connect_timeout_s", &seconds));
  e.connect_timeout = Seconds(seconds);
  seconds = static_cast<double>(e.read_timeout.count()) / 1000;
  KFORGE_RETURN_IF_ERROR(r.Number("read_timeout_s", &seconds));
  e.read_timeout = Seconds(seconds);
  seconds = static_cast<double>(e.call_timeout.count()) / 1000;
  KFORGE_RETURN_IF_ERROR(r.Number("call_timeout_s", &seconds));
  e.call_timeout = Seconds(seconds);
  value = e.retry.max_attempts;
  KFORGE_RETURN_IF_ERROR(r.Int("max_attempts", &value));
  e.retry.max_attempts = std::max(1, static_cast<int>(value));
  KFORGE_RETURN_IF_ERROR(r.String("dir", &e.inbox_dir));
  KFORGE_RETURN_IF_ERROR(r.String("description", &e.description));
  bool enabled = true;  // only type-checked here; AddToml acts on it
  KFORGE_RETURN_IF_ERROR(r.Bool("enabled", &enabled));
  if (e.provider == ProviderKind::kOpenAiCompatible && e.endpoint.empty()) {
    return ParseError(fmt::format(
        "{}: model '{}' (openai_compatible) needs an `endpoint`, e.g. \"http://localhost:8000/v1\"",
        r.Here(), e.id));
  }
  if (e.provider == ProviderKind::kInbox && e.inbox_dir.empty()) e.inbox_dir = "kforge-inbox";
  if (e.endpoint.empty()) {
    if (e.provider == ProviderKind::kOpenAi) e.endpoint = kOpenAiEndpoint;
    if (e.provider == ProviderKind::kAnthropic) e.endpoint = kAnthropicEndpoint;
    if (e.provider == ProviderKind::kGemini) e.endpoint = kGeminiEndpoint;
  }
  return e;
}

std::optional<std::string> Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || value[0] == '\0') return std::nullopt;
  return std::string(value);
}

}  // namespace

std::string_view ProviderKindName(ProviderKind kind) {
  switch (kind) {
    case ProviderKind::kOpenAi: return "openai";
    case ProviderKind::kAnthropic: return "anthropic";
    case ProviderKind::kGemini: return "gemini";
    case ProviderKind::kOpenAiCompatible: return "openai_compatible";
    case ProviderKind::kInbox: return "inbox";
  }
  return "openai";
}

std::optional<ProviderKind> ParseProviderKind(std::string_view name) {
  for (ProviderKind kind : {ProviderKind::kOpenAi, ProviderKind::kAnthropic, ProviderKind::kGemini,
                            ProviderKind::kOpenAiCompatible, ProviderKind::kInbox}) {
    if (ProviderKindName(kind) == name) return kind;
  }
  return std::nullopt;
}

RegistryPaths DefaultRegistryPaths(std::vector<fs::path> extra_files) {
  RegistryPaths paths;
  paths.default_file = KforgeHome() / "examples" / "models.toml";
  if (auto xdg = Env("XDG_CONFIG_HOME")) {
    paths.user_file = fs::path(*xdg) / "kforge" / "models.toml";
  } else if (auto home = Env("HOME")) {
    paths.user_file = fs::path(*home) / ".config" / "kforge" / "models.toml";
  }
  paths.extra_files = std::move(extra_files);
  return paths;
}

Status ModelRegistry::AddToml(std::string_view toml_text, const std::string& source_name) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    return ParseError(fmt::format("{}:{}:{}: TOML syntax error: {}", source_name,
                                  e.source().begin.line, e.source().begin.column,
                                  e.description()));
  }
  for (const auto& [key, node] : root) {
    if (key.str() == "version") {
      if (node.value<std::int64_t>() != 1) {
        return ParseError(fmt::format("{}: registry version must be 1", Where(source_name, node)));
      }
    } else if (key.str() != "models") {
      return ParseError(fmt::format("{}: unknown top-level key '{}' (expected `version` and "
                                    "[[models]] entries)",
                                    Where(source_name, node), key.str()));
    }
  }
  const toml::node* models = root.get("models");
  if (models == nullptr) return Ok();
  const toml::array* array = models->as_array();
  if (array == nullptr) {
    return ParseError(fmt::format("{}: `models` must be an array of tables, written [[models]]",
                                  Where(source_name, *models)));
  }
  std::set<std::string> ids_in_file;
  for (const toml::node& item : *array) {
    const toml::table* table = item.as_table();
    if (table == nullptr) {
      return ParseError(fmt::format("{}: each [[models]] entry must be a table",
                                    Where(source_name, item)));
    }
    auto entry = ReadEntry(*table, source_name);
    if (!entry) return std::unexpected(entry.error());
    if (!ids_in_file.insert(entry->id).second) {
      return ParseError(fmt::format("{}: model id '{}' appears twice in this file", entry->source,
                                    entry->id));
    }
    auto same = std::find_if(entries_.begin(), entries_.end(),
                             [&](const ModelEntry& e) { return e.id == entry->id; });
    const toml::node* enabled = table->get("enabled");
    if (enabled != nullptr && !enabled->value<bool>().value_or(true)) {
      if (same != entries_.end()) entries_.erase(same);  // `enabled = false` hides the id
      continue;
    }
    if (same != entries_.end()) {
      *same = std::move(*entry);  // a later file overrides an earlier one
    } else {
      entries_.push_back(std::move(*entry));
    }
  }
  return Ok();
}

Result<ModelRegistry> ModelRegistry::Load(const RegistryPaths& paths) {
  ModelRegistry registry;
  auto add_file = [&registry](const fs::path& path, bool must_exist) -> Status {
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      if (!must_exist) return Ok();
      return NotFound(fmt::format("model registry file {} does not exist", path.string()));
    }
    auto text = ReadFile(path);
    if (!text) return std::unexpected(text.error());
    KFORGE_RETURN_IF_ERROR(registry.AddToml(*text, path.string()));
    registry.files_read_.push_back(path.string());
    return Ok();
  };
  if (paths.default_file) KFORGE_RETURN_IF_ERROR(add_file(*paths.default_file, false));
  if (paths.user_file) KFORGE_RETURN_IF_ERROR(add_file(*paths.user_file, false));
  for (const auto& path : paths.extra_files) KFORGE_RETURN_IF_ERROR(add_file(path, true));
  return registry;
}

Result<ModelEntry> ModelRegistry::Find(std::string_view id) const {
  for (const auto& entry : entries_) {
    if (entry.id == id) return entry;
  }
  std::vector<std::string> ids;
  for (const auto& entry : entries_) ids.push_back(entry.id);
  return NotFound(fmt::format(
      "unknown model '{}'; known models: {} (see `kforge models`; add one in "
      "$XDG_CONFIG_HOME/kforge/models.toml or with --models FILE)",
      id, ids.empty() ? std::string("none") : fmt::format("{}", fmt::join(ids, ", "))));
}

}  // namespace kforge::llm
