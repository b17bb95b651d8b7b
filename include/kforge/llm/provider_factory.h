// Builds the provider for a registry entry: reads its key, registers the key for redaction, and
// wraps the wire-format provider with the entry's rate limits and the run's budget. The outermost
// layer redacts: every error message it returns has passed Redact(), and every answer's text and
// raw body RedactRegisteredSecrets() (an answer that echoes the key does not carry it further).
#ifndef KFORGE_LLM_PROVIDER_FACTORY_H_
#define KFORGE_LLM_PROVIDER_FACTORY_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "kforge/core/error.h"
#include "kforge/llm/budget.h"
#include "kforge/llm/http_transport.h"
#include "kforge/llm/provider.h"
#include "kforge/llm/registry.h"

namespace kforge::llm {

struct ProviderFactoryOptions {
  // Shared transport; a new libcurl transport when null.
  std::shared_ptr<HttpTransport> transport;
  // Run-wide budget; no budget when null.
  std::shared_ptr<Budget> budget;
  // Inbox entries: wait for answers (--wait) instead of exiting.
  bool inbox_wait = false;
  // Reads an environment variable; std::getenv when empty (tests inject their own).
  std::function<std::optional<std::string>(const std::string&)> get_env;
};

// The key for `entry` from the environment: "" when it has no key variable or an optional key is
// unset; kPermissionDenied naming the variable when a required key is unset or empty.
Result<std::string> ReadApiKey(const ModelEntry& entry, const ProviderFactoryOptions& options);

Result<std::shared_ptr<Provider>> NewProviderForModel(const ModelEntry& entry,
                                                      const ProviderFactoryOptions& options);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_PROVIDER_FACTORY_H_
