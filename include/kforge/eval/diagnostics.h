// Compiler output trimmed for an LLM: the first errors with their context, without the template
// instantiation chains, notes and repeated lines that bury them.
#ifndef KFORGE_EVAL_DIAGNOSTICS_H_
#define KFORGE_EVAL_DIAGNOSTICS_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace kforge {

struct TrimOptions {
  std::size_t max_errors = 5;      // error diagnostics kept
  std::size_t max_lines = 40;      // lines kept in all
  std::size_t max_line_chars = 300;
};

// Keeps, in order, the lines of the first `max_errors` errors (an "error" line and the source /
// caret lines that follow it), drops "In instantiation of", "required from", "note:" chains and
// warnings, replaces `work_dir` by "." so paths are short, and ends with a count of what was
// dropped. Falls back to the head of the log when no line looks like an error.
std::string TrimDiagnostics(std::string_view log, std::string_view work_dir = {},
                            const TrimOptions& options = {});

}  // namespace kforge

#endif  // KFORGE_EVAL_DIAGNOSTICS_H_
