// GenerationPromptInputs: everything the generation prompt can say, as typed values. The renderer
// turns them into text; which sections appear depends on which fields are set.
#ifndef KFORGE_PROMPT_GENERATION_INPUTS_H_
#define KFORGE_PROMPT_GENERATION_INPUTS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/prompt/device_facts.h"
#include "kforge/prompt/recommendation.h"
#include "kforge/target/target.h"
#include "kforge/task/task.h"

namespace kforge {

// Why a candidate is asked for. Functional: make it correct (the previous candidate, if any,
// failed). Optimization: make the previous, correct candidate faster.
enum class GenerationPass { kFunctional, kOptimization };
std::string_view GenerationPassName(GenerationPass pass);  // "functional", "optimization"

// The candidate the next one starts from, with what the harness said about it.
struct PreviousCandidate {
  std::string file_name;    // "kernel.cu"; empty when the answer held no usable file
  std::string source;       // empty when the answer could not be parsed
  std::string status;       // an evaluation status ("compile_error", "correct") or
                            // "malformed_answer" when the answer could not be parsed
  std::string diagnostics;  // trimmed compiler/runtime output, mismatch figures, or the parse
                            // error's feedback
  std::string timing;       // optimization pass: e.g. "median 41.3 us; eager 55.0 us (1.33x)"
};

// A working implementation of the same task for another target (cross-platform translation).
struct TranslationSource {
  Target target;          // the target it was written for and passes on
  std::string file_name;  // "kernel.cu"
  std::string source;
};

struct GenerationPromptInputs {
  Task task;      // name, origin, reference source, policy
  Target target;  // what to write the kernel for
  GenerationPass pass = GenerationPass::kFunctional;
  int attempt = 1;                              // 1-based attempt number within the pass
  std::optional<DeviceFacts> device;            // hardware facts, when known
  std::optional<PreviousCandidate> previous;    // functional: the failed one; optimization:
                                                // the best correct one
  std::vector<Recommendation> recommendations;  // optimization pass: the analysis agent's advice
  std::optional<TranslationSource> translate_from;  // cross-platform translation
};

}  // namespace kforge

#endif  // KFORGE_PROMPT_GENERATION_INPUTS_H_
