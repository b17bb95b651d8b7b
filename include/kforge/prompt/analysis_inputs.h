// AnalysisPromptInputs: what the analysis agent sees — a correct candidate, its timings, a compact
// profile summary when one exists, and the device facts.
#ifndef KFORGE_PROMPT_ANALYSIS_INPUTS_H_
#define KFORGE_PROMPT_ANALYSIS_INPUTS_H_

#include <optional>
#include <string>

#include "kforge/prompt/device_facts.h"
#include "kforge/target/target.h"
#include "kforge/task/task.h"

namespace kforge {

struct AnalysisPromptInputs {
  Task task;
  Target target;
  std::string candidate_file_name;  // "kernel.cu"
  std::string candidate_source;
  std::string timing;           // e.g. "median 41.3 us; eager 55.0 us (1.33x)"; may be empty
  std::string profile_summary;  // the reducer's compact summary (about 1K tokens); empty
                                // when no profile was taken: the prompt then says so
  std::optional<DeviceFacts> device;
  int max_recommendations = 3;  // how many recommendations to ask for, at most
};

}  // namespace kforge

#endif  // KFORGE_PROMPT_ANALYSIS_INPUTS_H_
