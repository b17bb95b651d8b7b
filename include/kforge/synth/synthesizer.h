// Synthesizer: the two-agent loop that turns a task into a verified kernel for one target.
//
// Per sample, each step is a script of named steps, each logged:
//   check budgets → (optimization: analyse the best correct candidate) → generate → record
//   candidate → evaluate (guardrails, compile, correctness) → select
// Functional passes repeat until a candidate is correct (at most max_functional_attempts); then
// optimization passes start from the sample's best correct candidate with the analysis agent's
// recommendations. A malformed answer, a compile error or a mismatch becomes the next functional
// prompt's feedback; a failed optimization candidate gets up to max_repair_attempts functional
// passes that repair it before optimization resumes from the best correct candidate. Samples run concurrently; the best candidate over all samples is kept by
// IsBetter() and never replaced by a worse one.
//
// Everything goes to the run store: the task, candidates (parent, sample, iteration, pass kind,
// the call that produced them), evaluations, LLM calls (through the agents' LlmCallLog) and
// recommendations. Resume: run the same configuration against the same run id and store. Finished
// LLM calls are answered from the store (LlmCallLog), a candidate already recorded for that call
// is not added again, a candidate whose source was already evaluated in this run reuses that
// evaluation (timings included) instead of running again, and an analysis reads the profile
// stored with its candidate's evaluation instead of profiling again: what the run measured once
// is what every prompt quotes.
//
// Ownership: the Synthesizer borrows the store, evaluator and backend (they must outlive Run())
// and shares the providers and the budget. Run() is called once, from one thread; it owns the
// loop's state and runs samples on its own thread pool.
#ifndef KFORGE_SYNTH_SYNTHESIZER_H_
#define KFORGE_SYNTH_SYNTHESIZER_H_

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "kforge/core/error.h"
#include "kforge/eval/evaluator.h"
#include "kforge/llm/budget.h"
#include "kforge/llm/call_failure.h"
#include "kforge/llm/cancellation.h"
#include "kforge/llm/provider.h"
#include "kforge/prompt/device_facts.h"
#include "kforge/prompt/generation_inputs.h"
#include "kforge/prompt/analysis_profile.h"
#include "kforge/prompt/prompt_renderer.h"
#include "kforge/store/run_store.h"
#include "kforge/synth/candidate_ranking.h"
#include "kforge/synth/progress.h"
#include "kforge/synth/synthesis_options.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge::synth {

// Evaluates one candidate file of `task` on `backend`; always a verdict (see Evaluator::Evaluate).
using EvaluateFn = std::function<Verdict(const Task& task, const Backend& backend,
                                         const std::filesystem::path& candidate,
                                         std::stop_token stop)>;

struct SynthesisSetup {
  store::RunStore* store = nullptr;  // required; the run row `run_id` must exist
  std::string run_id;
  Task task;
  const Backend* backend = nullptr;  // required; its target is the synthesis target
  Evaluator* evaluator = nullptr;    // required unless `evaluate` is set
  // Used instead of `evaluator` when set: `kforge bench` places evaluations on its device slots,
  // and tests give canned verdicts.
  EvaluateFn evaluate;
  std::shared_ptr<llm::Provider> generation_provider;  // required
  std::shared_ptr<llm::Provider> analysis_provider;    // null: the generation provider
  std::shared_ptr<llm::Budget> budget;                 // null: no token or money limit
  std::optional<PromptRenderer> renderer;              // unset: KforgeHome()/templates
  std::optional<DeviceFacts> device;                   // facts for the prompts, when known
  std::optional<TranslationSource> translate_from;     // cross-platform translation
  SynthesisOptions options;
  ProgressCallback on_progress;  // optional
  // A profile pass before each analysis: (file name, source) of the best correct candidate to
  // the profile module's summary. Unset (no profiler for the target, or turned off): the
  // analysis reads the verdict's timings only. A failed pass is logged, never fatal. Each pass,
  // failed or not, is stored with the candidate's evaluation (profiles table) and read back
  // instead of profiling again, so that a resumed run asks the same analysis prompt.
  std::function<Result<AnalysisProfile>(const std::string& file_name, const std::string& source)>
      profile_summary;
  // The task checked before the first step (also on resume): loaded and its reference run once
  // (eval/task_check.h). A broken task ends Run() with the check's kInvalidArgument error before
  // any prompt is sent. Unset: not checked here (`kforge bench` checks all its tasks at once).
  std::function<Status(const Task& task)> check_task;
  // Stopping (Ctrl-C in `kforge bench`). Once `stop` is requested no step starts, steps in flight
  // finish, and the result is `interrupted` (resumable). `abandon` is passed to evaluations in
  // flight (they end as infra_error "cancelled", which a resume evaluates again) and
  // `cancel_calls` to LLM calls in flight (a cancelled call is not stored as finished).
  std::stop_token stop;
  std::stop_token abandon;
  llm::CancellationToken cancel_calls;
  // Prefix of the LLM call streams ("<prefix>sample-N"): keeps the call keys of several tasks in
  // one run apart. Empty for `kforge run`.
  std::string stream_prefix;
  // Where the best correct kernel is written; empty: <run_dir>/best (a bench: one folder per task).
  std::filesystem::path best_dir;
};

struct SynthesisResult {
  std::optional<EvaluatedCandidate>
      best;                         // the best candidate of all samples, if any was evaluated
  std::filesystem::path best_path;  // <best_dir>/<file> when best is correct, else empty
  int steps = 0;                    // generation steps taken over all samples
  std::string stop_reason;          // why the loop ended, for the terminal
  // The run is resumable rather than finished, and is stored as `interrupted`: it was stopped on
  // request, or a sample ended on a failed LLM call that is not permanent (an unanswered inbox
  // prompt, a provider outage after its retries, the budget).
  bool interrupted = false;
  // A sample ended on a failed LLM call: the most decisive kind over the samples
  // (llm::MoreDecisive) and that call's error message. kPermanent: the run ended and is not
  // `interrupted` (a bad key, no quota, an unknown model); the message says what to fix.
  std::optional<llm::CallFailureKind> call_failure;
  std::string call_error;
  // Among those calls, one was a prompt waiting for a person's answer (an inbox without its
  // answer file): the run is paused rather than failed; the stop reason says which file to write.
  bool awaiting_answer = false;
  // The task's reference failed in an evaluation (reference_error): the task, not the model,
  // must be fixed, so the loop stopped there instead of asking for another candidate. The
  // verdict's message; empty when it did not happen.
  std::string task_error;
};

class Synthesizer {
 public:
  explicit Synthesizer(SynthesisSetup setup);
  ~Synthesizer();
  Synthesizer(const Synthesizer&) = delete;
  Synthesizer& operator=(const Synthesizer&) = delete;

  // Runs every sample to its end. Errors: a missing dependency in the setup, a store failure.
  // Failures of the model or the candidate are not errors: they are steps of the loop.
  Result<SynthesisResult> Run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kforge::synth

#endif  // KFORGE_SYNTH_SYNTHESIZER_H_
