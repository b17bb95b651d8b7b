// AnalysisProfile: one profile of a candidate as the analysis agent reads it, and as the run store
// keeps it beside the candidate's evaluation (the profiles table: tool, raw, summary).
#ifndef KFORGE_PROMPT_ANALYSIS_PROFILE_H_
#define KFORGE_PROMPT_ANALYSIS_PROFILE_H_

#include <string>

namespace kforge {

struct AnalysisProfile {
  std::string tool;  // the tool that captured it: "ncu", "torch", "opencl", ... (profile::ToolName)
  std::string text;  // the reducer's compact summary (about 1K tokens), quoted by the prompt
  std::string raw;   // the tool's own main export (ncu raw CSV, chrome trace, OpenCL events)
};

}  // namespace kforge

#endif  // KFORGE_PROMPT_ANALYSIS_PROFILE_H_
