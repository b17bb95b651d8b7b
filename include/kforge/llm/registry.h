// The model registry: which LLMs KForge can use and how to reach them, read from TOML files.
//
// Files are read in order and later files win: the default registry shipped with KForge
// (examples/models.toml under KforgeHome()), the user's $XDG_CONFIG_HOME/kforge/models.toml
// (~/.config/kforge/models.toml when XDG_CONFIG_HOME is unset), then any --models FILE. An entry
// whose id is already known replaces the earlier entry as a whole. The format is in docs/llm.md.
#ifndef KFORGE_LLM_REGISTRY_H_
#define KFORGE_LLM_REGISTRY_H_

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/llm/pricing.h"
#include "kforge/llm/rate_limiter.h"
#include "kforge/llm/retry.h"

namespace kforge::llm {

enum class ProviderKind { kOpenAi, kAnthropic, kGemini, kOpenAiCompatible, kInbox };

// "openai", "anthropic", "gemini", "openai_compatible", "inbox" (the TOML spelling).
std::string_view ProviderKindName(ProviderKind kind);
std::optional<ProviderKind> ParseProviderKind(std::string_view name);

struct ModelEntry {
  std::string id;  // what users type: `--model claude-sonnet-4`
  ProviderKind provider = ProviderKind::kOpenAi;
  std::string model;        // model name on the wire; the id when omitted
  std::string endpoint;     // base URL; the provider's public URL when omitted in the file
  std::string api_key_env;  // environment variable holding the key; "" = no key
  bool key_required = true;  // false for local servers that accept calls without a key
  std::int64_t context_window = 0;  // tokens; 0 = unknown
  bool vision = false;
  Pricing pricing;
  RateLimits limits;
  // The limits hold for every kforge process of this host together (RateLimiter::OpenShared),
  // not per process.
  bool share_limits = true;
  bool stream = false;  // openai_compatible: use server-sent events
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds read_timeout{300'000};  // idle: the longest time without progress
  std::chrono::milliseconds call_timeout{900'000};  // the whole call, retries included; 0 = none
  RetryPolicy retry;
  std::string inbox_dir;  // inbox: the directory prompts and answers go to
  std::string description;
  std::string source;  // "file:line" the entry was read from
};

struct RegistryPaths {
  std::optional<std::filesystem::path> default_file;  // skipped when unset or missing
  std::optional<std::filesystem::path> user_file;     // skipped when unset or missing
  std::vector<std::filesystem::path> extra_files;     // --models: must exist
};

// The usual paths: KforgeHome()/examples/models.toml, the XDG user file, and `extra_files`.
RegistryPaths DefaultRegistryPaths(std::vector<std::filesystem::path> extra_files = {});

class ModelRegistry {
 public:
  // Reads `paths` in order. Errors name the file and line: a TOML syntax error, an unknown field,
  // a field of the wrong type, a missing id or provider, an unknown provider.
  static Result<ModelRegistry> Load(const RegistryPaths& paths);
  // Parses one document; `source_name` is used in messages. Entries are added after existing ones.
  Status AddToml(std::string_view toml_text, const std::string& source_name);

  // The entry for `id`, or kNotFound listing the known ids.
  Result<ModelEntry> Find(std::string_view id) const;
  // Entries in the order first seen.
  const std::vector<ModelEntry>& entries() const { return entries_; }
  // Files that were read, in order.
  const std::vector<std::string>& files_read() const { return files_read_; }

 private:
  std::vector<ModelEntry> entries_;
  std::vector<std::string> files_read_;
};

}  // namespace kforge::llm

#endif  // KFORGE_LLM_REGISTRY_H_
