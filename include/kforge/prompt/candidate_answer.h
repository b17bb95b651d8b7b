// ParseCandidateAnswer: the candidate file inside a generation agent's answer.
//
// Tolerant of form: prose before, between and after code; fenced blocks (``` or ~~~) with or
// without a language tag; several blocks, of which the one holding the expected file is picked —
// by a file name on the fence (```cuda title=kernel.cu```, ```kernel.cu```), on its first line
// (// file: kernel.cu, # file: kernel.py) or on the line just above it, else by language tag, then
// completeness, then the last one. An answer without any fence is taken whole when it starts like
// code.
//
// Strict about content: a native candidate must define extern "C" kforge_forward, a module
// candidate class ModelNew, an OpenCL candidate SOURCE and launch(); a block cut off before its
// closing fence is refused. The Error (kParse) is written to be sent back to the model: what was
// missing and the exact format to use.
#ifndef KFORGE_PROMPT_CANDIDATE_ANSWER_H_
#define KFORGE_PROMPT_CANDIDATE_ANSWER_H_

#include <string>
#include <string_view>

#include "kforge/core/error.h"
#include "kforge/target/backend.h"
#include "kforge/target/target.h"

namespace kforge {

struct ParsedCandidate {
  std::string
      file_name;  // the expected name (CandidateFormatOf(model).file_name, target/backend.h)
  std::string source;     // the file's text, ending in one newline
  CandidateKind kind = CandidateKind::kNative;
  std::string prose;    // the answer's text outside the chosen block, trimmed (for the store)
  int block_count = 0;  // fenced blocks in the answer
};

Result<ParsedCandidate> ParseCandidateAnswer(std::string_view answer, ProgrammingModel model);

}  // namespace kforge

#endif  // KFORGE_PROMPT_CANDIDATE_ANSWER_H_
