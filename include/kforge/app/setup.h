// Setup: the composition root. One object, built once from a command's RunConfig, holds what every
// entry point composes — target and backend (probed), budget, LLM providers, run store, compile
// service, evaluator and its options, the profile pass, device facts, the translation source —
// and hands out the synthesis setup of each task. `kforge eval`, `run`, `bench` (local, and each
// Slurm element), `e2e`, `profile` and `resume` build theirs here, so a part added here reaches
// every one of them (that is how bench and e2e profile and carry device facts).
//
// Ownership: Setup owns everything it builds; the synthesis setups it hands out borrow from it,
// so it must outlive them. Thread-safety: the accessors are safe from any thread once built; the
// parts are as thread-safe as their own types (the Evaluator is used by one evaluation at a time).
#ifndef KFORGE_APP_SETUP_H_
#define KFORGE_APP_SETUP_H_

#include <expected>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "kforge/app/providers.h"
#include "kforge/app/run_config.h"
#include "kforge/core/error.h"
#include "kforge/eval/compile_service.h"
#include "kforge/eval/evaluator.h"
#include "kforge/llm/budget.h"
#include "kforge/prompt/device_facts.h"
#include "kforge/prompt/generation_inputs.h"
#include "kforge/store/run_store.h"
#include "kforge/synth/synthesizer.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge::app {

// Which parts a command needs; each default says what an unset field means.
struct SetupOptions {
  // The target must run here (toolchain and device); false for a Slurm submitter, `kforge eval`
  // (its verdict says what is missing) and --skip-target-check.
  bool probe = true;
  // LLM providers and the run's budget (run, bench, e2e); false: none are built.
  bool providers = false;
  bool resuming = false;  // providers append to the run's cassette
  // The run store's folder; empty: no store.
  std::filesystem::path run_dir;
  // The evaluator's options (EvalOptions documents each default).
  EvalOptions eval;
  // The budget is the configuration's divided by this (a Slurm element's share of a bench).
  int budget_share = 1;
};

// Why a setup could not be built, and whose fault it is: the user's input (a bad target,
// translation source, model, cassette or budget: fix the command) or this machine (the target
// cannot run here, the store cannot be opened).
struct SetupError {
  Error error;
  bool user_input = true;
};

class Setup {
 public:
  static std::expected<std::unique_ptr<Setup>, SetupError> Build(const RunConfig& config,
                                                                 SetupOptions options);
  ~Setup();
  Setup(const Setup&) = delete;
  Setup& operator=(const Setup&) = delete;

  const RunConfig& config() const { return config_; }
  const Target& target() const { return target_; }
  const Backend& backend() const { return *backend_; }
  CompileService& compiler() { return *compiler_; }
  Evaluator& evaluator() { return *evaluator_; }
  const EvalOptions& eval_options() const { return options_.eval; }
  store::RunStore* store() { return store_.get(); }
  const std::filesystem::path& run_dir() const { return options_.run_dir; }
  const std::shared_ptr<llm::Budget>& budget() const { return budget_; }
  const Providers& providers() const { return providers_; }
  // What the prompts state about the device (datasheet facts of the target's device or of this
  // machine's GPU); nullopt when nothing is known (CPU targets).
  const std::optional<DeviceFacts>& device_facts() const { return device_facts_; }
  const std::optional<TranslationSource>& translate_from() const { return translate_from_; }
  // The loop's options of the configuration (iterations, samples, wall time).
  synth::SynthesisOptions synthesis_options() const;

  // What every synthesis of run `run_id` shares: store, backend, evaluator, providers, budget,
  // loop options, translation source (no task yet: an e2e run's sites are made later).
  synth::SynthesisSetup SynthesisTemplate(const std::string& run_id);

  // The synthesis setup of `task` in run `run_id`: the template, the task, then
  // CompleteSynthesis. Callers add progress and stopping.
  synth::SynthesisSetup SynthesisFor(const Task& task, const std::string& run_id,
                                     const std::filesystem::path& profiles_dir);

  // The parts of a synthesis setup that come from this root for its task, for setups assembled
  // elsewhere (a bench's tasks, an e2e run's sites): device facts and, when the configuration
  // profiles and the target has a kernel-level profiler, the profile pass (captures under
  // `profiles_dir`). `s.task` must be set.
  void CompleteSynthesis(synth::SynthesisSetup& s, const std::filesystem::path& profiles_dir);

 private:
  Setup() = default;

  RunConfig config_;
  SetupOptions options_;
  Target target_;
  std::unique_ptr<Backend> backend_;
  std::shared_ptr<llm::Budget> budget_;
  Providers providers_;
  std::unique_ptr<store::RunStore> store_;
  std::unique_ptr<CompileService> compiler_;
  std::unique_ptr<Evaluator> evaluator_;
  std::optional<DeviceFacts> device_facts_;
  std::optional<TranslationSource> translate_from_;
};

}  // namespace kforge::app

#endif  // KFORGE_APP_SETUP_H_
