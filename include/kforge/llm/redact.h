// Keeps API keys out of logs, errors, cassettes, the store and reports.
//
// Every key KForge reads is registered here when it is read (provider_factory does it); Redact()
// then replaces registered keys, and anything shaped like a credential, with "[REDACTED]":
// `Authorization: Bearer ...`, `x-api-key: ...`, `x-goog-api-key: ...`, URL query parameters
// named key/api_key/apikey/access_token/token, and the well-known key shapes `sk-...`,
// `sk-ant-...`, `AIza...`. Apply it to any text that leaves the LLM layer and may contain a
// request, a URL or a response body. Thread-safe.
#ifndef KFORGE_LLM_REDACT_H_
#define KFORGE_LLM_REDACT_H_

#include <string>
#include <string_view>

namespace kforge::llm {

inline constexpr std::string_view kRedacted = "[REDACTED]";

// Remembers `secret` for the life of the process. Values shorter than 8 characters are ignored
// (too likely to occur in ordinary text to be replaced blindly).
void RegisterSecret(std::string_view secret);

// `text` with every registered secret and credential-shaped substring replaced by kRedacted.
std::string Redact(std::string_view text);

// Only the registered secrets replaced (cheap; for response bodies that are stored byte-exactly,
// where pattern matching could alter legitimate content).
std::string RedactRegisteredSecrets(std::string_view text);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_REDACT_H_
