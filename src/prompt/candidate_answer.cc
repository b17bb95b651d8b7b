#include "kforge/prompt/candidate_answer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <tuple>

#include "code_blocks.h"

namespace kforge {
namespace {

using prompt_internal::CodeBlock;
using prompt_internal::ExtensionOf;
using prompt_internal::FindCodeBlocks;
using prompt_internal::Trim;

bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// C/C++ source without comments (string literals are kept; a "//" inside one is rare in kernels
// and only makes the check stricter).
std::string StripCComments(std::string_view code) {
  std::string out;
  out.reserve(code.size());
  std::size_t i = 0;
  while (i < code.size()) {
    if (code.compare(i, 2, "//") == 0) {
      while (i < code.size() && code[i] != '\n') ++i;
    } else if (code.compare(i, 2, "/*") == 0) {
      std::size_t close = code.find("*/", i + 2);
      i = close == std::string_view::npos ? code.size() : close + 2;
      out += ' ';
    } else {
      out += code[i++];
    }
  }
  return out;
}

std::size_t SkipSpace(std::string_view text, std::size_t i) {
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])) != 0) ++i;
  return i;
}

// Offsets of `word` in `text` as a whole identifier.
std::vector<std::size_t> FindWord(std::string_view text, std::string_view word) {
  std::vector<std::size_t> at;
  for (std::size_t pos = text.find(word); pos != std::string_view::npos;
       pos = text.find(word, pos + 1)) {
    const bool left = pos == 0 || !IsIdentChar(text[pos - 1]);
    const bool right = pos + word.size() >= text.size() || !IsIdentChar(text[pos + word.size()]);
    if (left && right) at.push_back(pos);
  }
  return at;
}

// Offsets of `extern "C"` and whether each opens a block (`extern "C" {`).
struct ExternC {
  std::size_t pos = 0;
  bool block = false;
};
std::vector<ExternC> FindExternC(std::string_view code) {
  std::vector<ExternC> found;
  for (std::size_t pos : FindWord(code, "extern")) {
    std::size_t i = SkipSpace(code, pos + 6);
    if (code.compare(i, 3, "\"C\"") != 0) continue;
    i = SkipSpace(code, i + 3);
    found.push_back({pos, i < code.size() && code[i] == '{'});
  }
  return found;
}

enum class NativeCheck { kOk, kNoDefinition, kNotExternC };

NativeCheck CheckNative(std::string_view source) {
  const std::string code = StripCComments(source);
  const std::vector<ExternC> externs = FindExternC(code);
  bool defined = false;
  for (std::size_t pos : FindWord(code, "kforge_forward")) {
    std::size_t i = SkipSpace(code, pos + 14);
    if (i >= code.size() || code[i] != '(') continue;
    int depth = 0;
    for (; i < code.size(); ++i) {
      if (code[i] == '(') ++depth;
      if (code[i] == ')' && --depth == 0) break;
    }
    if (i >= code.size()) continue;
    i = SkipSpace(code, i + 1);
    if (code.compare(i, 8, "noexcept") == 0) i = SkipSpace(code, i + 8);
    if (i >= code.size() || code[i] != '{') continue;  // a call or a declaration
    defined = true;
    // Linkage: `extern "C"` in the same declaration (after the previous ';' or '}'), or an
    // `extern "C" {` block opened before it.
    std::size_t decl_start = code.find_last_of(";}", pos);
    decl_start = decl_start == std::string::npos ? 0 : decl_start + 1;
    for (const ExternC& e : externs) {
      if (e.pos < pos && (e.block || e.pos >= decl_start)) return NativeCheck::kOk;
    }
  }
  return defined ? NativeCheck::kNotExternC : NativeCheck::kNoDefinition;
}

// A top-level Python statement starting with `prefix` followed by a character in `next`.
bool HasTopLevel(std::string_view source, std::string_view prefix, std::string_view next) {
  std::size_t pos = 0;
  while (pos < source.size()) {
    std::size_t nl = source.find('\n', pos);
    std::string_view line =
        source.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    if (line.starts_with(prefix)) {
      std::size_t i = prefix.size();
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (i < line.size() && next.find(line[i]) != std::string_view::npos) return true;
    }
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return false;
}

bool HasOpenClSource(std::string_view source) {
  // SOURCE = ..., SOURCE: str = ... (but not SOURCE == ...).
  std::size_t pos = 0;
  while (pos < source.size()) {
    std::size_t nl = source.find('\n', pos);
    std::string_view line =
        source.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    if (line.starts_with("SOURCE") && (line.size() == 6 || !IsIdentChar(line[6]))) {
      std::size_t eq = line.find('=');
      if (eq != std::string_view::npos && (eq + 1 >= line.size() || line[eq + 1] != '=')) {
        return true;
      }
    }
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return false;
}

// What `source` lacks for `format`; empty when nothing.
std::string Missing(std::string_view source, const CandidateFormat& format) {
  switch (format.kind) {
    case CandidateKind::kNative:
      switch (CheckNative(source)) {
        case NativeCheck::kOk:
          return {};
        case NativeCheck::kNoDefinition:
          return "it does not define the entry point kforge_forward (a definition with a body, "
                 "not only a declaration or a call)";
        case NativeCheck::kNotExternC:
          return "kforge_forward is defined without extern \"C\" linkage, so the runner cannot "
                 "find the symbol";
      }
      return {};
    case CandidateKind::kModule:
      if (!HasTopLevel(source, "class ModelNew", "(:")) {
        return "it does not define class ModelNew at the top level of the file";
      }
      return {};
    case CandidateKind::kOpenCl: {
      const bool has_source = HasOpenClSource(source);
      const bool has_launch = HasTopLevel(source, "def launch", "(");
      if (!has_source && !has_launch) {
        return "it defines neither SOURCE (the OpenCL C program) nor launch(cl, queue, program, "
               "inputs, outputs)";
      }
      if (!has_source) return "it does not define SOURCE, the OpenCL C program as a string";
      if (!has_launch) {
        return "it does not define launch(cl, queue, program, inputs, outputs) at the top level";
      }
      return {};
    }
  }
  return {};
}

// The block's first meaningful line looks like the start of a source file.
bool LooksWhole(std::string_view source, const CandidateFormat& format) {
  if (format.kind == CandidateKind::kNative) {
    return source.find("#include") != std::string_view::npos;
  }
  return source.find("import ") != std::string_view::npos;
}

bool StartsLikeCode(std::string_view text) {
  text = Trim(text);
  for (std::string_view start : {"#include", "#pragma", "#define", "//", "/*", "#", "import ",
                                 "from ", "\"\"\"", "'''", "extern", "template", "__global__",
                                 "static", "namespace", "using ", "class ", "def ", "SOURCE"}) {
    if (text.starts_with(start)) return true;
  }
  return false;
}

std::string Example(const CandidateFormat& format) {
  return fmt::format("```{} title={}\n<the complete file>\n```", format.fence_language,
                     format.file_name);
}

Error Feedback(const CandidateFormat& format, std::string_view problem) {
  std::string message = fmt::format("Your answer could not be used: {}.\n\n", problem);
  message += fmt::format(
      "Reply with the complete file {} in one fenced code block, like this:\n\n{}\n\n"
      "The file must define {}. Explanations may come before the block; do not split the file "
      "into several blocks.",
      format.file_name, Example(format), format.requirement);
  return Error{ErrorCode::kParse, std::move(message)};
}

std::string Describe(const CodeBlock& block, int index) {
  std::string what = fmt::format("block {}", index + 1);
  if (!block.language.empty()) what += fmt::format(" (```{})", block.language);
  if (!block.file_name.empty()) what += fmt::format(" named {}", block.file_name);
  return what;
}

std::string EnsureNewline(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\t' ||
                           text.back() == '\r')) {
    text.pop_back();
  }
  // Leading blank lines go too; indentation of the first line stays.
  std::size_t first = 0;
  while (first < text.size()) {
    std::size_t nl = text.find('\n', first);
    if (nl == std::string::npos ||
        !Trim(std::string_view(text).substr(first, nl - first)).empty()) {
      break;
    }
    first = nl + 1;
  }
  text.erase(0, first);
  text += '\n';
  return text;
}

bool Contains(const std::vector<std::string>& list, std::string_view value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

}  // namespace

Result<ParsedCandidate> ParseCandidateAnswer(std::string_view answer, ProgrammingModel model) {
  const CandidateFormat& format = CandidateFormatOf(model);
  const std::vector<CodeBlock> blocks = FindCodeBlocks(answer);

  ParsedCandidate parsed;
  parsed.file_name = format.file_name;
  parsed.kind = format.kind;
  parsed.block_count = static_cast<int>(blocks.size());

  if (blocks.empty()) {
    if (Trim(answer).empty()) return std::unexpected(Feedback(format, "the answer was empty"));
    const std::string missing = Missing(answer, format);
    if (StartsLikeCode(answer) && missing.empty()) {
      parsed.source = EnsureNewline(std::string(answer));
      return parsed;
    }
    return std::unexpected(Feedback(
        format, missing.empty() ? "it has no fenced code block (``` ... ```) holding the file"
                                : fmt::format("it has no fenced code block, and {}", missing)));
  }

  // Rank every block that can be the candidate file; blocks in another language or named as
  // another kind of file (a header, a build script, a shell session) are not candidates.
  struct Ranked {
    int index;
    int name_rank;      // 3: the expected name, 2: an expected ending, 1: unnamed
    int language_rank;  // 2: an expected tag, 1: no tag
    bool whole;
    std::string missing;
  };
  std::vector<Ranked> pool;
  std::vector<std::string> rejected;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const CodeBlock& b = blocks[i];
    const int index = static_cast<int>(i);
    int name_rank = 1;
    if (!b.file_name.empty()) {
      const std::string base = b.file_name.substr(b.file_name.rfind('/') + 1);
      if (base == format.file_name) {
        name_rank = 3;
      } else if (Contains(format.extensions, ExtensionOf(base))) {
        name_rank = 2;
      } else {
        rejected.push_back(
            fmt::format("{} is not a {} file", Describe(b, index), format.extensions.front()));
        continue;
      }
    }
    int language_rank = b.language.empty() ? 1 : 0;
    if (Contains(format.fence_languages, b.language)) language_rank = 2;
    if (language_rank == 0 && name_rank < 2) {
      rejected.push_back(
          fmt::format("{} is not {} code", Describe(b, index), format.fence_language));
      continue;
    }
    pool.push_back(
        {index, name_rank, language_rank, LooksWhole(b.body, format), Missing(b.body, format)});
  }

  // An answer that stops inside a code block was cut off (or forgot the closing fence): its last
  // file is incomplete even if it happens to contain the entry point.
  for (const Ranked& r : pool) {
    if (!blocks[static_cast<std::size_t>(r.index)].terminated) {
      return std::unexpected(Feedback(
          format, fmt::format("{} is not closed: the answer ends inside it, so the file is "
                              "probably cut off. Close the block with ``` and keep the answer "
                              "short enough to fit",
                              Describe(blocks[static_cast<std::size_t>(r.index)], r.index))));
    }
  }

  const Ranked* best = nullptr;
  for (const Ranked& r : pool) {
    if (!r.missing.empty()) continue;
    if (best == nullptr ||
        std::tie(r.name_rank, r.language_rank, r.whole, r.index) >=
            std::tie(best->name_rank, best->language_rank, best->whole, best->index)) {
      best = &r;
    }
  }
  if (best == nullptr) {
    std::vector<std::string> reasons;
    for (const Ranked& r : pool) {
      reasons.push_back(fmt::format(
          "{}: {}", Describe(blocks[static_cast<std::size_t>(r.index)], r.index), r.missing));
    }
    for (const std::string& r : rejected) reasons.push_back(r);
    std::string problem = fmt::format("none of its {} code block{} is a usable {}", blocks.size(),
                                      blocks.size() == 1 ? "" : "s", format.file_name);
    for (const std::string& r : reasons) problem += fmt::format("\n- {}", r);
    if (!reasons.empty()) problem += "\n";
    return std::unexpected(Feedback(format, Trim(problem)));
  }

  const CodeBlock& chosen = blocks[static_cast<std::size_t>(best->index)];
  parsed.source = EnsureNewline(chosen.body);
  std::string prose(answer.substr(0, chosen.begin));
  prose += "\n";
  prose += answer.substr(chosen.end);
  parsed.prose = std::string(Trim(prose));
  return parsed;
}

}  // namespace kforge
