// The `kforge e2e` pipeline: a model's workload in, the model with KForge's kernels put in and
// measured out. A script of named steps, each logged:
//   profile (ProfileModel: sites ranked by time, tasks for the top ones)
//   → synthesize (synth::Synthesizer on each task, one run store, streams prefixed "<site>/")
//   → build kernels (the best correct kernel of each native-ABI site, compiled by CompileService)
//   → measure (MeasureModel: equivalence, tokens/s for the four configurations, per-kernel times)
// Everything lands in the run directory: run.sqlite (the syntheses), e2e/profile.json,
// e2e/tasks/*.py, e2e/best/<site>/, e2e/kernels/<site>.so, e2e/measure.json, e2e/sites.json (what
// `kforge export` reads) and e2e/result.json (the whole outcome).
//
// Ownership: the pipeline borrows the store, backend and evaluator (they must outlive RunE2e) and
// shares the providers and budget. RunE2e is called from one thread.
#ifndef KFORGE_E2E_PIPELINE_H_
#define KFORGE_E2E_PIPELINE_H_

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/e2e/phases.h"
#include "kforge/eval/compile_service.h"
#include "kforge/eval/evaluator.h"
#include "kforge/llm/budget.h"
#include "kforge/llm/provider.h"
#include "kforge/store/run_store.h"
#include "kforge/synth/progress.h"
#include "kforge/synth/synthesis_options.h"
#include "kforge/synth/synthesizer.h"
#include "kforge/target/backend.h"

namespace kforge::e2e {

struct E2eSetup {
  std::filesystem::path model_file;  // absolute
  std::string config;                // a name of the model file's CONFIGS
  std::filesystem::path run_dir;     // absolute; holds run.sqlite
  // What every site's synthesis shares: store (its run row `run_id` must exist), run_id,
  // backend, evaluator and generation provider (all required), analysis provider, budget,
  // options (per site), on_progress. The pipeline sets each site's task, stream prefix, best
  // folder and profile pass.
  synth::SynthesisSetup synthesis;
  CompileService* compiler = nullptr;  // required (native kernels are built with it)
  // The composition root's per-site parts of each site's synthesis setup (its profile pass and
  // device facts, app::Setup::CompleteSynthesis); unset: none.
  std::function<void(const Task&, synth::SynthesisSetup&)> complete_synthesis;
  int top = 3;               // sites by time ...
  std::vector<std::string> sites;  // ... unless named
  int seed = 0;                    // weights of the model (torch.manual_seed before build_model)
  int warmup_steps = 3;
  int timed_steps = 20;
  int kernel_repeats = 50;
  PhaseRun phase;                                   // phase.dir is set from run_dir when empty
  std::function<void(const std::string&)> on_step;  // optional; one line per pipeline step
};

// One site's synthesis and what became of its kernel.
struct SiteOutcome {
  std::string site;
  std::filesystem::path task_file;
  bool correct = false;                // the synthesis found a correct kernel
  std::optional<double> task_speedup;  // its speedup against eager PyTorch, in the task
  std::filesystem::path best;          // the best correct kernel's source
  std::filesystem::path kernel;        // the built shared object, when integrated
  std::string not_integrated;          // why a correct kernel was not put in, else empty
  int steps = 0;
  std::string stop_reason;
  bool interrupted = false;  // an LLM call failed (an unanswered inbox prompt): resumable
  bool awaiting_answer = false;  // ... a prompt waits for a person's answer (inbox)
};

struct E2eOutcome {
  Profile profile;
  std::vector<SiteOutcome> sites;
  std::optional<Measurement> measurement;  // unset when no kernel could be put in
  std::string not_measured;                // why, when unset
  bool interrupted = false;                // an LLM call failed (an unanswered inbox prompt)
  bool awaiting_answer = false;            // a site's prompt waits for a person's answer
  // The integration was applied and eager+kforge matched eager at every batch size (logits within
  // tolerance and the same greedy tokens at every step).
  bool Matches() const;
};

// Errors: the model file's or the request's faults (kInvalidArgument), the phases' and the
// store's failures. A site without a correct kernel is an outcome, not an error.
Result<E2eOutcome> RunE2e(E2eSetup setup);

// e2e/result.json: the outcome as one JSON document (docs/e2e.md lists its fields).
std::string OutcomeJson(const E2eOutcome& outcome, const E2eSetup& setup);

}  // namespace kforge::e2e

#endif  // KFORGE_E2E_PIPELINE_H_
