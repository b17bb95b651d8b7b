// Lexing for the static guardrails. Both lexers drop comments and return string literals as
// single tokens (their content apart), so rules see code only. Names are merged across `.` (and
// `::`, `->` in C) into one token: "torch.cuda.Event", "std::thread"; a member access on an
// expression (`x[0].half`, `f(x).sum`) becomes a name with a leading dot: ".half".
// Internal to src/eval. Thread-safety: pure functions.
#ifndef KFORGE_SRC_EVAL_GUARDRAILS_LEXER_H_
#define KFORGE_SRC_EVAL_GUARDRAILS_LEXER_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::guardrails {

enum class TokKind { kName, kNumber, kString, kPunct };

struct Token {
  TokKind kind = TokKind::kPunct;
  std::string text;         // names joined with '.' ("::" kept in C); a string's content
  int line = 1;             // 1-based line where the token starts
  bool line_start = false;  // Python: first token of a logical line
  int indent = 0;           // Python: indentation of the token's logical line
  int depth = 0;            // bracket depth (Python) or brace depth (C) before the token
  std::size_t offset = 0;   // a string's content offset in the lexed text
};

// Which language a token stream is, for rules that differ.
enum class Lang { kPython, kC };

// Python source to tokens, with logical-line starts and indentation (for scopes).
std::vector<Token> LexPython(std::string_view s);

// C, C++, CUDA, HIP, SYCL or OpenCL C to tokens; `first_line` numbers the first line (code
// embedded in a Python string starts on the string's line). Token::depth is the brace depth.
std::vector<Token> LexC(std::string_view s, int first_line);

// Joins `a . b`, `a :: b` and `a -> b` into one name token; a member access on an expression
// becomes ".b". `c_like` adds "::" and "->".
std::vector<Token> MergeNames(std::vector<Token> raw, bool c_like);

bool IsDigit(char c);

}  // namespace kforge::guardrails

#endif  // KFORGE_SRC_EVAL_GUARDRAILS_LEXER_H_
