// SynthesisOptions: the strategy and the budgets of one synthesis loop. Each default is stated in
// place. The token and money budgets live in the run's llm::Budget, shared with the providers.
#ifndef KFORGE_SYNTH_SYNTHESIS_OPTIONS_H_
#define KFORGE_SYNTH_SYNTHESIS_OPTIONS_H_

#include <chrono>
#include <optional>

namespace kforge::synth {

struct SynthesisOptions {
  // Generation steps per sample, functional and optimization together. Iterative refinement is
  // iterations > 1; single-shot is iterations = 1 with samples = 1.
  int iterations = 5;
  // Independent samples (repeated sampling), run concurrently; the best of all is kept.
  int samples = 1;
  // Functional passes per sample before it gives up without a correct candidate; 0 = as many as
  // `iterations` allows.
  int max_functional_attempts = 0;
  // After an optimization candidate fails (compile error, mismatch, ...), functional passes that
  // repair it (its source and diagnostics as feedback) before optimization starts again from the
  // best correct candidate; 0 = none (the next optimization pass starts from the best at once).
  int max_repair_attempts = 2;
  // Threads running samples at once; 0 = one per sample.
  int parallel_samples = 0;
  // Wall-clock budget of the whole loop; unset = none. No step starts after it; a step in flight
  // finishes (LLM calls get it as their deadline).
  std::optional<std::chrono::seconds> max_wall_time;
  // Recommendations asked from the analysis agent per optimization pass.
  int max_recommendations = 3;
};

}  // namespace kforge::synth

#endif  // KFORGE_SYNTH_SYNTHESIS_OPTIONS_H_
