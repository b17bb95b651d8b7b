#include "kforge/app/setup.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "kforge/core/files.h"
#include "kforge/eval/profile_capture.h"
#include "kforge/profile/reducer.h"
#include "kforge/eval/task_check.h"
#include "kforge/target/probe.h"

namespace kforge::app {
namespace {

namespace fs = std::filesystem;

// Datasheet facts of the target's named device ("h200"), else of this machine's first NVIDIA GPU
// when the target is NVIDIA's; nullopt for CPUs and devices the datasheet table lacks.
std::optional<DeviceFacts> DeviceFactsFor(const Target& target) {
  if (target.vendor == Vendor::kCpu) return std::nullopt;
  if (!target.device.empty()) {
    if (auto peaks = profile::DatasheetPeaks(target.device); peaks.facts) return peaks.facts;
  }
  if (target.vendor == Vendor::kNvidia) {
    for (const std::string& gpu : NvidiaGpus()) {
      if (auto peaks = profile::DatasheetPeaks(gpu); peaks.facts) return peaks.facts;
    }
  }
  return std::nullopt;
}

Result<std::optional<TranslationSource>> TranslationSourceOf(const RunConfig& config) {
  if (config.reference_impl.empty()) return std::optional<TranslationSource>();
  if (config.reference_target.empty()) {
    return InvalidArgument(
        "--reference-impl needs --reference-target, the target it was written for (e.g. "
        "--reference-target nvidia/cuda)");
  }
  auto target = Target::Parse(config.reference_target);
  if (!target) return std::unexpected(target.error());
  auto source = ReadFile(config.reference_impl);
  if (!source) return std::unexpected(source.error());
  return std::optional<TranslationSource>(
      TranslationSource{.target = *target,
                        .file_name = CandidateFormatOf(target->model).file_name,
                        .source = *source});
}

}  // namespace

Setup::~Setup() = default;

std::expected<std::unique_ptr<Setup>, SetupError> Setup::Build(const RunConfig& config,
                                                               SetupOptions options) {
  auto input = [](Error e) { return std::unexpected(SetupError{std::move(e), true}); };
  auto machine = [](Error e) { return std::unexpected(SetupError{std::move(e), false}); };
  std::unique_ptr<Setup> s(new Setup());
  s->config_ = config;
  s->options_ = std::move(options);
  auto target = Target::Parse(config.target);
  if (!target) return input(target.error());
  s->target_ = *target;
  if (config.iterations < 1 || config.samples < 1) {
    return input(
        Error{ErrorCode::kInvalidArgument, "--iterations and --samples must be at least 1"});
  }
  auto translate_from = TranslationSourceOf(config);
  if (!translate_from) return input(translate_from.error());
  s->translate_from_ = std::move(*translate_from);
  s->backend_ = NewBackend(s->target_);
  if (s->options_.probe) {
    if (auto runs = kforge::CheckRunsHere(*s->backend_); !runs) return machine(runs.error());
  }
  if (s->options_.providers) {
    const int share = std::max(1, s->options_.budget_share);
    llm::BudgetLimits limits;
    if (config.max_tokens > 0) limits.max_tokens = config.max_tokens / share;
    if (config.max_cost > 0) limits.max_usd = config.max_cost / share;
    s->budget_ = std::make_shared<llm::Budget>(limits);
    auto providers = MakeProviders(config.models, s->options_.resuming, s->budget_);
    if (!providers) return input(providers.error());
    s->providers_ = std::move(*providers);
  }
  if (!s->options_.run_dir.empty()) {
    auto store = store::RunStore::Open(s->options_.run_dir);
    if (!store) return machine(store.error());
    s->store_ = std::move(*store);
  }
  s->compiler_ = std::make_unique<CompileService>();
  s->evaluator_ = std::make_unique<Evaluator>(*s->compiler_, s->options_.eval);
  s->device_facts_ = DeviceFactsFor(s->target_);
  return s;
}

synth::SynthesisOptions Setup::synthesis_options() const {
  synth::SynthesisOptions o;
  o.iterations = config_.iterations;
  o.samples = config_.samples;
  if (config_.max_time_s > 0) o.max_wall_time = std::chrono::seconds(config_.max_time_s);
  return o;
}

synth::SynthesisSetup Setup::SynthesisTemplate(const std::string& run_id) {
  synth::SynthesisSetup s;
  s.store = store_.get();
  s.run_id = run_id;
  s.backend = backend_.get();
  s.evaluator = evaluator_.get();
  s.generation_provider = providers_.generation;
  s.analysis_provider = providers_.analysis;
  s.budget = budget_;
  s.translate_from = translate_from_;
  s.options = synthesis_options();
  return s;
}

synth::SynthesisSetup Setup::SynthesisFor(const Task& task, const std::string& run_id,
                                          const fs::path& profiles_dir) {
  synth::SynthesisSetup s = SynthesisTemplate(run_id);
  s.task = task;
  // The task runs once before the first prompt: a broken task is the user's to fix, not the
  // model's. (A bench checks all its tasks at once instead: exec::BenchSetup::check_tasks.)
  s.check_task = [this](const Task& t) { return CheckTasksRun({t}, *backend_, options_.eval); };
  CompleteSynthesis(s, profiles_dir);
  return s;
}

void Setup::CompleteSynthesis(synth::SynthesisSetup& s, const fs::path& profiles_dir) {
  s.device = device_facts_;
  if (config_.profile) {
    s.profile_summary =
        MakeSummaryProfiler(*compiler_, options_.eval, s.task, *backend_, profiles_dir);
  }
}

}  // namespace kforge::app
