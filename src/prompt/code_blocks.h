// Fenced code blocks of a Markdown-ish LLM answer (internal to the prompt module).
//
// A fence is a line of three or more backticks or tildes, possibly indented, whose info string
// (the rest of the line) has no backtick; the block ends at a line holding only the same character
// at least as many times. A block still open at the end of the text is returned unterminated.
#ifndef KFORGE_SRC_PROMPT_CODE_BLOCKS_H_
#define KFORGE_SRC_PROMPT_CODE_BLOCKS_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::prompt_internal {

struct CodeBlock {
  std::string info;       // the opening fence's info string, trimmed
  std::string language;   // its language tag, lower case; empty when none
  std::string file_name;  // a file name given on the fence (title=, file=, a word with a dot),
                          // on the block's first line (// file: x.cu) or on the line above
  std::string body;       // the lines between the fences, each ending in '\n'
  bool terminated = true;
  std::size_t begin = 0;  // offset of the opening fence line in the text
  std::size_t end = 0;    // offset just past the closing fence line (the text's end if none)
};

std::vector<CodeBlock> FindCodeBlocks(std::string_view text);

// Lower-cased copy.
std::string Lower(std::string_view text);

// `text` without leading and trailing whitespace.
std::string_view Trim(std::string_view text);

// The ending of `file_name` including the dot (".cu"), lower case; empty if none.
std::string ExtensionOf(std::string_view file_name);

}  // namespace kforge::prompt_internal

#endif  // KFORGE_SRC_PROMPT_CODE_BLOCKS_H_
