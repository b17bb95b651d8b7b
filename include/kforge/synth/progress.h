// ProgressEvent: what the loop reports after each generation step, for the terminal.
#ifndef KFORGE_SYNTH_PROGRESS_H_
#define KFORGE_SYNTH_PROGRESS_H_

#include <cstdint>
#include <functional>
#include <string>

namespace kforge::synth {

struct ProgressEvent {
  int sample = 0;
  int iteration = 0;         // 0-based step within the sample
  std::string pass;          // "functional" or "optimization"
  std::string status;        // evaluation status, "malformed_answer", or why the sample stopped
  std::string candidate_id;  // empty when the answer held no candidate
  bool reused = false;       // the LLM answer came from the store (resume)
  std::string best;          // "none", or e.g. "correct (sample 0, iteration 2)"
  std::int64_t tokens = 0;   // tokens spent by the run so far (input + output)
  double cost_usd = 0.0;     // dollars spent by the run so far
};

// Called from the thread that ran the step (several threads with repeated sampling), one call
// at a time.
using ProgressCallback = std::function<void(const ProgressEvent&)>;

}  // namespace kforge::synth

#endif  // KFORGE_SYNTH_PROGRESS_H_
