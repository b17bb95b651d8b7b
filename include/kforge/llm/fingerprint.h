// The canonical serialisation of a request and its fingerprint, used by cassettes and the inbox.
//
// The canonical form is compact JSON with keys sorted: {"max_tokens", "messages": [{"role",
// "content": [{"type":"text","text"} | {"type":"image","media_type","bytes","xxh3"} |
// {"type":"image","url"}]}], "model_id", "stop", "temperature"}, absent options omitted. Image
// bytes are represented by their size and hash. The fingerprint is the XXH3-128 hex of it.
#ifndef KFORGE_LLM_FINGERPRINT_H_
#define KFORGE_LLM_FINGERPRINT_H_

#include <string>
#include <string_view>

#include "kforge/llm/request.h"

namespace kforge::llm {

std::string CanonicalRequestJson(const Request& request, std::string_view model_id);
std::string RequestFingerprint(const Request& request, std::string_view model_id);

// Describes the first difference between two canonical request JSON texts, e.g.
// `messages[2].content[0].text: recorded "abc…" now "abd…"` (values shortened, redacted).
std::string DescribeCanonicalDifference(std::string_view recorded, std::string_view now);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_FINGERPRINT_H_
