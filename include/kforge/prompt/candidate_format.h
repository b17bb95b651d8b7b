// CandidateFormat: the one file a generated candidate consists of, per programming model — its
// name, its fence language and how the runner loads it (runner/PROTOCOL.md, "Candidate kinds").
// The prompts ask for exactly this file and the answer parser accepts exactly this format.
#ifndef KFORGE_PROMPT_CANDIDATE_FORMAT_H_
#define KFORGE_PROMPT_CANDIDATE_FORMAT_H_

#include <string>
#include <string_view>
#include <vector>

#include "kforge/target/backend.h"
#include "kforge/target/target.h"

namespace kforge {

struct CandidateFormat {
  ProgrammingModel model = ProgrammingModel::kCpp;
  CandidateKind kind = CandidateKind::kNative;
  std::string file_name;                     // the name the prompt asks for: "kernel.cu"
  std::string fence_language;                // the tag the prompt asks for: "cuda"
  std::vector<std::string> extensions;       // endings a named block may carry: {".cu"}
  std::vector<std::string> fence_languages;  // tags accepted on a block, lower case
  std::string requirement;                   // what the file must define, one line for a person
};

// The format of candidates for `model`. Every ProgrammingModel has one.
const CandidateFormat& CandidateFormatOf(ProgrammingModel model);

}  // namespace kforge

#endif  // KFORGE_PROMPT_CANDIDATE_FORMAT_H_
