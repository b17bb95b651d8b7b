// Questions the guardrail rules ask of merged tokens: parts of a dotted name, integer values,
// whether a name is called, bracket matching. Internal to src/eval. Thread-safety: pure functions.
#ifndef KFORGE_SRC_EVAL_GUARDRAILS_TOKEN_QUERIES_H_
#define KFORGE_SRC_EVAL_GUARDRAILS_TOKEN_QUERIES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "lexer.h"

namespace kforge::guardrails {

// The last component of a merged name: "torch.cuda.Event" -> "Event", "std::thread" -> "thread".
std::string_view LastPart(std::string_view name);
// Everything before the last component, without the separator ("" if none).
std::string_view Receiver(std::string_view name);
// The first component: "torch.cuda.Event" -> "torch".
std::string_view FirstPart(std::string_view name);
bool StartsWith(std::string_view s, std::string_view prefix);
// `name` is the module `module` or something inside it ("inspect", "inspect.stack").
bool InModule(std::string_view name, std::string_view module);

// An integer literal's value (digit separators and integer suffixes dropped, hex read).
std::optional<std::int64_t> IntValue(const Token& t);

// The name at `i` is called: the next token is "(".
bool IsCall(const std::vector<Token>& t, std::size_t i);
bool NextIs(const std::vector<Token>& t, std::size_t i, std::string_view text);
bool PrevIs(const std::vector<Token>& t, std::size_t i, std::string_view text);
// Index of the token closing the bracket opened at `open`, or t.size().
std::size_t Matching(const std::vector<Token>& t, std::size_t open);
// An assignment operator: `=` or an augmented one (`+=`, `**=`, ...).
bool IsAssignOp(const Token& t);

}  // namespace kforge::guardrails

#endif  // KFORGE_SRC_EVAL_GUARDRAILS_TOKEN_QUERIES_H_
