#include "kforge/synth/synthesizer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "kforge/agent/analysis_agent.h"
#include "kforge/agent/generation_agent.h"
#include "kforge/agent/llm_call_log.h"
#include "kforge/core/activity.h"
#include "kforge/core/files.h"
#include "kforge/core/thread_pool.h"
#include "kforge/llm/call_failure.h"

namespace kforge::synth {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kStoppedReason = "stopped on request (resumable)";

// The fields of a stored verdict the loop uses again (feedback and selection); the JSON is parsed
// here, at the edge, and nowhere else in the loop.
// A stored evaluation read back as the loop needs it: with its timings, so that a resumed run
// ranks candidates and renders its prompts (which quote the timings) exactly as the first did.
Verdict VerdictFromStored(const store::EvaluationRecord& record) {
  Verdict verdict = Verdict::FromJson(record.verdict_json);
  verdict.status = record.status;
  verdict.target = record.target;
  verdict.total_seconds = record.wall_s;
  return verdict;
}

// What the optimization prompt and the analysis agent are told about speed: the candidate's
// measured median and the eager baseline's from the same run, or why there is none.
std::string TimingText(const Verdict& verdict) {
  if (!verdict.timing) {
    return verdict.timing_error.empty()
               ? std::string("not measured for this candidate")
               : fmt::format("not measured: {}", verdict.timing_error);
  }
  std::string text = fmt::format("candidate {}", verdict.timing->Describe());
  if (verdict.eager_baseline) {
    text += fmt::format("; PyTorch eager {}", verdict.eager_baseline->Describe());
  }
  if (verdict.speedup_vs_eager) text += fmt::format("; speedup {:.2f}x", *verdict.speedup_vs_eager);
  return text;
}

std::string Describe(const std::optional<EvaluatedCandidate>& best) {
  if (!best) return "none";
  // Iterations are shown 1-based, as the progress lines count them.
  return fmt::format("{} (sample {}, iteration {})", EvalStatusName(best->verdict.status),
                     best->sample, best->iteration + 1);
}

// One sample's conversation state; owned by the thread running that sample.
struct SampleState {
  int sample = 0;
  std::string stream;                              // "sample-N": the LLM call stream
  std::optional<PreviousCandidate> feedback;       // for the next functional prompt
  std::optional<std::string> last_candidate_id;    // parent of the next functional candidate
  std::optional<EvaluatedCandidate> best_correct;  // this sample's best correct candidate
  int functional_attempts = 0;
  int optimization_attempts = 0;
  int repair_attempts = 0;  // repairs of the current failed optimization candidate
  std::string stop_reason;
  // The sample stopped on a failed LLM call: what kind of failure, and its message.
  std::optional<llm::CallFailureKind> call_failure;
  std::string call_error;
  std::string task_error;  // the sample stopped on a reference_error (the task is broken)
};

}  // namespace

struct Synthesizer::Impl {
  explicit Impl(SynthesisSetup s)
      : setup(std::move(s)), renderer(setup.renderer ? *setup.renderer : PromptRenderer()) {}

  Status CheckSetup() const;
  Status StepRegisterTask();
  std::optional<std::string> StepCheckBudgets() const;
  Status RunSample(SampleState& state);
  Result<std::string> StepProfile(const EvaluatedCandidate& base);
  Result<std::vector<Recommendation>> StepAnalyse(SampleState& state, int iteration);
  Result<agent::GenerationAnswer> StepGenerate(SampleState& state, GenerationPass pass,
                                               const std::vector<Recommendation>& advice);
  Result<store::CandidateRecord> StepRecordCandidate(const SampleState& state,
                                                     const agent::GenerationAnswer& answer,
                                                     GenerationPass pass, int iteration);
  Result<EvaluatedCandidate> StepEvaluate(const store::CandidateRecord& candidate,
                                          const ParsedCandidate& parsed);
  void StepSelect(SampleState& state, const EvaluatedCandidate& evaluated);
  Result<fs::path> StepWriteBest();
  void Report(ProgressEvent event);
  llm::CallOptions CallOptions() const;
  void RecordCallFailure(SampleState& state, const Error& error, const llm::Provider& provider,
                         std::string_view step);

  const llm::Provider& AnalysisProvider() const {
    return setup.analysis_provider ? *setup.analysis_provider : *setup.generation_provider;
  }

  SynthesisSetup setup;
  PromptRenderer renderer;
  std::string target_string;
  std::unique_ptr<agent::LlmCallLog> log;
  std::unique_ptr<agent::GenerationAgent> generation;
  std::unique_ptr<agent::AnalysisAgent> analysis;
  std::string task_id;
  Clock::time_point start;
  std::optional<Clock::time_point> deadline;

  std::mutex mu;                           // guards the members below
  std::optional<EvaluatedCandidate> best;  // the best candidate of all samples
  int steps = 0;
  std::mutex store_mu;     // serialises find-or-add of candidates and evaluations (resume dedupe)
  std::mutex progress_mu;  // one progress callback at a time
};

Status Synthesizer::Impl::CheckSetup() const {
  if (setup.store == nullptr || setup.backend == nullptr ||
      (setup.evaluator == nullptr && !setup.evaluate) ||
      !setup.generation_provider || setup.run_id.empty()) {
    return Internal(
        "Synthesizer: store, run id, backend, evaluator and generation provider are required");
  }
  if (setup.options.iterations < 1 || setup.options.samples < 1) {
    return InvalidArgument(fmt::format("iterations ({}) and samples ({}) must be at least 1",
                                       setup.options.iterations, setup.options.samples));
  }
  return Ok();
}

// Step: register the task of the run (found again on resume).
Status Synthesizer::Impl::StepRegisterTask() {
  auto found = setup.store->FindTask(setup.run_id, setup.task.name);
  if (!found) return std::unexpected(found.error());
  if (found->has_value()) {
    task_id = (*found)->id;
    spdlog::info("task: {} already registered as {}", setup.task.name, task_id);
    return Ok();
  }
  auto source_hash = setup.store->PutArtifact(setup.task.source);
  if (!source_hash) return std::unexpected(source_hash.error());
  nlohmann::json overrides = nlohmann::json::object();
  for (const auto& o : setup.task.overrides) {
    overrides[o.name] = nlohmann::json::parse(o.value_json, nullptr, false);
  }
  store::TaskRecord record;
  record.run_id = setup.run_id;
  record.name = setup.task.name;
  record.source_hash = *source_hash;
  record.metadata_json = nlohmann::json{
      {"origin", setup.task.origin},
      {"policy", PrecisionPolicyName(setup.task.policy)},
      {"overrides",
       overrides}}.dump();
  auto added = setup.store->AddTask(record);
  if (!added) return std::unexpected(added.error());
  task_id = added->id;
  spdlog::info("task: registered {} as {}", setup.task.name, task_id);
  return Ok();
}

// Step: may another step start? The reason it may not, else nullopt.
std::optional<std::string> Synthesizer::Impl::StepCheckBudgets() const {
  if (setup.stop.stop_requested()) return std::string(kStoppedReason);
  if (deadline && Clock::now() >= *deadline) {
    return fmt::format("wall-time budget of {} s reached", setup.options.max_wall_time->count());
  }
  if (setup.budget) {
    if (auto can = setup.budget->CheckCanStart(); !can) return can.error().message;
  }
  return std::nullopt;
}

// A failed call ends the sample; its kind decides whether the run is paused (resumable) or ended.
// A timeout past the run's own wall-time deadline is the budget's doing, not the provider's.
void Synthesizer::Impl::RecordCallFailure(SampleState& state, const Error& error,
                                          const llm::Provider& provider, std::string_view step) {
  llm::CallFailureKind kind = llm::ClassifyCallFailure(error, provider.Info());
  if (kind == llm::CallFailureKind::kTransient && deadline && Clock::now() >= *deadline) {
    kind = llm::CallFailureKind::kBudget;
  }
  state.call_failure = kind;
  state.call_error = error.message;
  // A prompt waiting for a person's answer is a pause, not a failure: the message says which
  // answer file to write.
  state.stop_reason = kind == llm::CallFailureKind::kAwaitingAnswer
                          ? fmt::format("paused: {}", error.message)
                          : fmt::format("{} call failed: {}", step, error.message);
  spdlog::info("[sample {}] {} call failed ({}): {}", state.sample, step,
               llm::CallFailureKindName(kind), error.message);
}

llm::CallOptions Synthesizer::Impl::CallOptions() const {
  llm::CallOptions options;
  options.deadline = deadline;
  options.cancel = setup.cancel_calls;
  return options;
}

// Step: profile the candidate the advice is about (untimed, a pass of its own), once: the
// profile stored with its evaluation is read back instead of profiling again, so that every
// analysis of it, in this process or a resumed one, quotes the same figures. A failed pass is
// stored too (tool "none", empty summary, the reason as its raw text) and the analysis goes
// without a profile. Returns the summary text (empty: none); errors are the store's.
Result<std::string> Synthesizer::Impl::StepProfile(const EvaluatedCandidate& base) {
  auto evaluation = setup.store->FindEvaluation(base.candidate_id);
  if (!evaluation) return std::unexpected(evaluation.error());
  if (evaluation->has_value()) {
    auto profiles = setup.store->ListProfiles((*evaluation)->id);
    if (!profiles) return std::unexpected(profiles.error());
    if (!profiles->empty()) {
      const store::ProfileRecord& stored = profiles->front();  // the one the first analysis read
      auto text = setup.store->GetArtifact(stored.summary_hash);
      if (!text) return std::unexpected(text.error());
      spdlog::info("profile: {} reuses profile {} ({})", base.candidate_id, stored.id,
                   stored.tool);
      return std::move(*text);
    }
  }
  ScopedActivity activity("profiling");
  auto captured = setup.profile_summary(base.file_name, base.source);
  AnalysisProfile summary;
  if (captured) {
    summary = std::move(*captured);
  } else {
    spdlog::warn("profile: {}: {}; analysing without a profile", base.candidate_id,
                 captured.error().message);
    summary.tool = "none";
    summary.raw = captured.error().message;
  }
  if (evaluation->has_value()) {
    auto raw_hash = setup.store->PutArtifact(summary.raw);
    if (!raw_hash) return std::unexpected(raw_hash.error());
    auto summary_hash = setup.store->PutArtifact(summary.text);
    if (!summary_hash) return std::unexpected(summary_hash.error());
    store::ProfileRecord record;
    record.evaluation_id = (*evaluation)->id;
    record.tool = summary.tool;
    record.raw_hash = *raw_hash;
    record.summary_hash = *summary_hash;
    auto added = setup.store->AddProfile(record);
    if (!added) return std::unexpected(added.error());
  }
  return std::move(summary.text);
}

// Step: ask the analysis agent about the sample's best correct candidate. No advice (an answer
// that does not parse) is not fatal: the optimization prompt goes without recommendations.
Result<std::vector<Recommendation>> Synthesizer::Impl::StepAnalyse(SampleState& state,
                                                                   int iteration) {
  const EvaluatedCandidate& base = *state.best_correct;
  AnalysisPromptInputs inputs;
  inputs.task = setup.task;
  inputs.target = setup.backend->target();
  inputs.candidate_file_name = base.file_name;
  inputs.candidate_source = base.source;
  inputs.timing = TimingText(base.verdict);
  inputs.device = setup.device;
  inputs.max_recommendations = setup.options.max_recommendations;
  if (setup.profile_summary) {
    auto summary = StepProfile(base);
    if (!summary) return std::unexpected(summary.error());
    inputs.profile_summary = std::move(*summary);
    spdlog::info("[sample {} it {}] profile: summary of {} bytes", state.sample, iteration,
                 inputs.profile_summary.size());
  }
  ScopedActivity activity("analysing");
  auto answer = analysis->Analyse(inputs, base.candidate_id, state.stream, CallOptions());
  if (!answer) return std::unexpected(answer.error());
  if (!answer->recommendations) {
    spdlog::info("[sample {} it {}] analyse: no usable advice; optimizing without it", state.sample,
                 iteration);
    return std::vector<Recommendation>{};
  }
  spdlog::info("[sample {} it {}] analyse: {} recommendation(s) for {}", state.sample, iteration,
               answer->recommendations->size(), base.candidate_id);
  return *answer->recommendations;
}

// Step: render the pass's prompt and ask the generation agent for a candidate.
Result<agent::GenerationAnswer> Synthesizer::Impl::StepGenerate(
    SampleState& state, GenerationPass pass, const std::vector<Recommendation>& advice) {
  GenerationPromptInputs inputs;
  inputs.task = setup.task;
  inputs.target = setup.backend->target();
  inputs.pass = pass;
  inputs.device = setup.device;
  inputs.translate_from = setup.translate_from;
  if (pass == GenerationPass::kFunctional) {
    inputs.attempt = state.functional_attempts + 1;
    inputs.previous = state.feedback;
  } else {
    inputs.attempt = state.optimization_attempts + 1;
    const EvaluatedCandidate& base = *state.best_correct;
    inputs.previous = PreviousCandidate{.file_name = base.file_name,
                                        .source = base.source,
                                        .status = "correct",
                                        .diagnostics = "",
                                        .timing = TimingText(base.verdict)};
    inputs.recommendations = advice;
  }
  ScopedActivity activity("generating");
  return generation->Generate(inputs, state.stream, CallOptions());
}

// Step: store the candidate (once per LLM call: a resumed run finds the row it added before).
Result<store::CandidateRecord> Synthesizer::Impl::StepRecordCandidate(
    const SampleState& state, const agent::GenerationAnswer& answer, GenerationPass pass,
    int iteration) {
  std::lock_guard lock(store_mu);
  if (answer.reused) {
    auto existing = setup.store->ListCandidates(setup.run_id);
    if (!existing) return std::unexpected(existing.error());
    for (const auto& c : *existing) {
      if (c.llm_call_id == answer.llm_call_id) return c;
    }
  }
  auto source_hash = setup.store->PutArtifact(answer.candidate->source);
  if (!source_hash) return std::unexpected(source_hash.error());
  store::CandidateRecord record;
  record.run_id = setup.run_id;
  record.task_id = task_id;
  record.parent_id = pass == GenerationPass::kOptimization
                         ? std::optional<std::string>(state.best_correct->candidate_id)
                         : state.last_candidate_id;
  record.llm_call_id = answer.llm_call_id;
  record.sample = state.sample;
  record.iteration = iteration;
  record.pass_kind = pass == GenerationPass::kOptimization ? store::PassKind::kOptimization
                                                           : store::PassKind::kFunctional;
  record.target = target_string;
  record.source_hash = *source_hash;
  return setup.store->AddCandidate(record);
}

// Step: evaluate the candidate (guardrails, compile, correctness) — or reuse the evaluation of an
// identical source in this run.
Result<EvaluatedCandidate> Synthesizer::Impl::StepEvaluate(const store::CandidateRecord& candidate,
                                                           const ParsedCandidate& parsed) {
  EvaluatedCandidate evaluated{
      .candidate_id = candidate.id,
      .file_name = parsed.file_name,
      .source = parsed.source,
      .path = setup.store->run_dir() / "candidates" / candidate.id / parsed.file_name,
      .sample = candidate.sample,
      .iteration = candidate.iteration,
      .verdict = {}};
  if (auto made = MakeDirs(evaluated.path.parent_path()); !made) {
    return std::unexpected(made.error());
  }
  if (auto written = WriteFile(evaluated.path, parsed.source); !written) {
    return std::unexpected(written.error());
  }

  {
    std::lock_guard lock(store_mu);
    auto rows = setup.store->ListEvaluationRowsOfTask(task_id);
    if (!rows) return std::unexpected(rows.error());
    const store::EvaluationRecord* same_source = nullptr;
    for (const auto& row : *rows) {
      if (row.candidate.source_hash != candidate.source_hash ||
          row.evaluation.status == store::EvaluationStatus::kInfraError) {
        continue;
      }
      same_source = &row.evaluation;
      if (row.candidate.id == candidate.id) break;  // this candidate's own evaluation
    }
    if (same_source != nullptr) {
      evaluated.verdict = VerdictFromStored(*same_source);
      if (same_source->candidate_id != candidate.id) {
        store::EvaluationRecord copy = *same_source;
        copy.id.clear();
        copy.created_at = {};
        copy.candidate_id = candidate.id;
        auto added = setup.store->AddEvaluation(copy);
        if (!added) return std::unexpected(added.error());
      }
      spdlog::info("evaluate: {} reuses evaluation {} of the same source ({})", candidate.id,
                   same_source->id, EvalStatusName(evaluated.verdict.status));
      return evaluated;
    }
  }

  ScopedActivity activity("evaluating");
  evaluated.verdict =
      setup.evaluate
          ? setup.evaluate(setup.task, *setup.backend, evaluated.path, setup.abandon)
          : setup.evaluator->Evaluate(setup.task, *setup.backend, evaluated.path, setup.abandon);
  store::EvaluationRecord record;
  record.run_id = setup.run_id;
  record.candidate_id = candidate.id;
  record.target = target_string;
  // The device the evaluation ran on: a bench places it on one of several (exec::PlaceOnDevices).
  record.device = evaluated.verdict.device.empty() ? setup.backend->RunnerDevice()
                                                   : evaluated.verdict.device;
  record.status = evaluated.verdict.status;
  record.verdict_json = evaluated.verdict.ToJson();
  record.wall_s = evaluated.verdict.total_seconds;
  {
    std::lock_guard lock(store_mu);
    auto added = setup.store->AddEvaluation(record);
    if (!added) return std::unexpected(added.error());
  }
  spdlog::info("evaluate: {} -> {} ({:.2f} s)", candidate.id, EvalStatusName(record.status),
               record.wall_s);
  return evaluated;
}

// Step: keep the better of the new candidate and the best so far (sample and run), and set the
// next functional prompt's feedback.
void Synthesizer::Impl::StepSelect(SampleState& state, const EvaluatedCandidate& evaluated) {
  state.last_candidate_id = evaluated.candidate_id;
  if (evaluated.correct()) {
    state.feedback.reset();
    state.repair_attempts = 0;
    if (!state.best_correct || IsBetter(evaluated, *state.best_correct)) {
      state.best_correct = evaluated;
    }
  } else {
    std::string diagnostics = evaluated.verdict.message;
    if (!evaluated.verdict.diagnostics.empty()) {
      diagnostics += "\n";
      diagnostics += evaluated.verdict.diagnostics;
    }
    state.feedback =
        PreviousCandidate{.file_name = evaluated.file_name,
                          .source = evaluated.source,
                          .status = std::string(EvalStatusName(evaluated.verdict.status)),
                          .diagnostics = diagnostics,
                          .timing = ""};
  }
  std::lock_guard lock(mu);
  if (!best || IsBetter(evaluated, *best)) {
    best = evaluated;
    spdlog::info("select: best is now {} ({})", evaluated.candidate_id,
                 EvalStatusName(evaluated.verdict.status));
  }
}

void Synthesizer::Impl::Report(ProgressEvent event) {
  {
    std::lock_guard lock(mu);
    event.best = Describe(best);
  }
  if (setup.budget) {
    const llm::BudgetSpent spent = setup.budget->Spent();
    event.tokens = spent.input_tokens + spent.output_tokens;
    event.cost_usd = spent.usd;
  }
  if (!setup.on_progress) return;
  std::lock_guard lock(progress_mu);
  setup.on_progress(event);
}

Status Synthesizer::Impl::RunSample(SampleState& state) {
  const SynthesisOptions& opts = setup.options;
  const int max_functional =
      opts.max_functional_attempts > 0 ? opts.max_functional_attempts : opts.iterations;
  for (int iteration = 0; iteration < opts.iterations; ++iteration) {
    if (auto stop = StepCheckBudgets()) {
      state.stop_reason = *stop;
      break;
    }
    // A failed optimization candidate is repaired by functional passes (bounded) before the
    // next optimization pass starts again from the best correct candidate.
    const bool repairing = state.best_correct && state.feedback &&
                           state.repair_attempts < opts.max_repair_attempts;
    if (state.best_correct && !repairing) {
      state.feedback.reset();
      state.repair_attempts = 0;
    }
    const GenerationPass pass = state.best_correct && !repairing ? GenerationPass::kOptimization
                                                                 : GenerationPass::kFunctional;
    if (repairing) ++state.repair_attempts;
    if (pass == GenerationPass::kFunctional && !state.best_correct &&
        state.functional_attempts >= max_functional) {
      state.stop_reason =
          fmt::format("no correct candidate after {} functional attempts", max_functional);
      break;
    }
    ProgressEvent event;
    event.sample = state.sample;
    event.iteration = iteration;
    event.pass = std::string(GenerationPassName(pass));

    std::vector<Recommendation> advice;
    if (pass == GenerationPass::kOptimization) {
      auto analysed = StepAnalyse(state, iteration);
      if (!analysed) {
        RecordCallFailure(state, analysed.error(), AnalysisProvider(), "analysis");
        break;
      }
      advice = std::move(*analysed);
    }

    auto answer = StepGenerate(state, pass, advice);
    if (!answer) {
      RecordCallFailure(state, answer.error(), *setup.generation_provider, "generation");
      break;
    }
    {
      std::lock_guard lock(mu);
      ++steps;
    }
    if (pass == GenerationPass::kFunctional) {
      ++state.functional_attempts;
    } else {
      ++state.optimization_attempts;
    }
    event.reused = answer->reused;
    spdlog::info("[sample {} it {}] generate ({}): call {}{}", state.sample, iteration, event.pass,
                 answer->llm_call_id, answer->reused ? " (from the store)" : "");

    if (!answer->candidate) {
      // A malformed answer is feedback for the next functional prompt (an optimization pass
      // keeps its base and tries again).
      if (pass == GenerationPass::kFunctional) {
        state.feedback = PreviousCandidate{.file_name = "",
                                           .source = "",
                                           .status = "malformed_answer",
                                           .diagnostics = answer->candidate.error().message,
                                           .timing = ""};
      }
      event.status = "malformed_answer";
      Report(event);
      continue;
    }

    auto candidate = StepRecordCandidate(state, *answer, pass, iteration);
    if (!candidate) return std::unexpected(candidate.error());
    event.candidate_id = candidate->id;

    auto evaluated = StepEvaluate(*candidate, *answer->candidate);
    if (!evaluated) return std::unexpected(evaluated.error());
    spdlog::info("[sample {} it {}] evaluate: {}", state.sample, iteration,
                 EvalStatusName(evaluated->verdict.status));

    event.status = std::string(EvalStatusName(evaluated->verdict.status));
    if (evaluated->verdict.status == EvalStatus::kReferenceError) {
      // The task's own reference failed: nothing a candidate does can fix that, and the model
      // must not be told to find the cause in its kernel.
      state.task_error = evaluated->verdict.message;
      state.stop_reason = fmt::format(
          "the task's reference failed, so no candidate can be judged; fix the task ({})",
          evaluated->verdict.message);
      Report(event);
      break;
    }
    StepSelect(state, *evaluated);
    Report(event);
  }
  if (state.stop_reason.empty()) {
    state.stop_reason = fmt::format("{} iteration(s) done", opts.iterations);
  }
  spdlog::info("[sample {}] stopped: {}", state.sample, state.stop_reason);
  return Ok();
}

// Step: copy the best correct kernel to <run_dir>/best/<file>.
Result<fs::path> Synthesizer::Impl::StepWriteBest() {
  std::lock_guard lock(mu);
  if (!best || !best->correct()) return fs::path();
  const fs::path dir = setup.best_dir.empty() ? setup.store->run_dir() / "best" : setup.best_dir;
  fs::path path = dir / best->file_name;
  KFORGE_RETURN_IF_ERROR(MakeDirs(path.parent_path()));
  KFORGE_RETURN_IF_ERROR(WriteFile(path, best->source));
  spdlog::info("best: {} written to {}", best->candidate_id, path.string());
  return path;
}

Synthesizer::Synthesizer(SynthesisSetup setup) : impl_(std::make_unique<Impl>(std::move(setup))) {}
Synthesizer::~Synthesizer() = default;

Result<SynthesisResult> Synthesizer::Run() {
  Impl& impl = *impl_;
  KFORGE_RETURN_IF_ERROR(impl.CheckSetup());
  SynthesisSetup& setup = impl.setup;
  impl.target_string = setup.backend->target().ToString();
  impl.start = Clock::now();
  if (setup.options.max_wall_time) impl.deadline = impl.start + *setup.options.max_wall_time;
  impl.log = std::make_unique<agent::LlmCallLog>(*setup.store, setup.run_id, setup.budget);
  impl.generation =
      std::make_unique<agent::GenerationAgent>(impl.renderer, setup.generation_provider, *impl.log);
  impl.analysis = std::make_unique<agent::AnalysisAgent>(
      impl.renderer, setup.analysis_provider ? setup.analysis_provider : setup.generation_provider,
      *impl.log);

  if (setup.check_task) {
    // Step: the task runs at all (a broken task is the user's to fix, before any prompt).
    KFORGE_RETURN_IF_ERROR(setup.check_task(setup.task));
    spdlog::info("check task: {} runs", setup.task.name);
  }
  KFORGE_RETURN_IF_ERROR(impl.StepRegisterTask());

  const int samples = setup.options.samples;
  std::vector<SampleState> states(static_cast<std::size_t>(samples));
  for (int s = 0; s < samples; ++s) {
    states[static_cast<std::size_t>(s)].sample = s;
    states[static_cast<std::size_t>(s)].stream = fmt::format("{}sample-{}", setup.stream_prefix, s);
  }
  std::vector<Status> outcomes;
  if (samples == 1) {
    outcomes.push_back(impl.RunSample(states.front()));
  } else {
    const int threads =
        setup.options.parallel_samples > 0 ? setup.options.parallel_samples : samples;
    ThreadPool pool(static_cast<std::size_t>(threads));
    std::vector<std::future<Status>> futures;
    // The samples' phases go to the caller's live display, whichever thread runs them.
    const ActivitySink sink = CurrentActivitySink();
    for (auto& state : states) {
      futures.push_back(pool.Submit([&impl, &state, sink] {
        ActivitySinkGuard guard(sink);
        return impl.RunSample(state);
      }));
    }
    for (auto& f : futures) outcomes.push_back(f.get());
  }
  for (auto& outcome : outcomes) {
    if (!outcome) return std::unexpected(outcome.error());
  }

  SynthesisResult result;
  auto best_path = impl.StepWriteBest();
  if (!best_path) return std::unexpected(best_path.error());
  result.best_path = *best_path;
  {
    std::lock_guard lock(impl.mu);
    result.best = impl.best;
    result.steps = impl.steps;
  }
  std::vector<std::string> reasons;
  for (const auto& state : states) {
    if (state.call_failure) {
      if (!result.call_failure ||
          llm::MoreDecisive(*state.call_failure, *result.call_failure) != *result.call_failure) {
        result.call_failure = *state.call_failure;
        result.call_error = state.call_error;
      }
    }
    result.interrupted |= state.stop_reason == kStoppedReason;
    result.awaiting_answer |= state.call_failure == llm::CallFailureKind::kAwaitingAnswer;
    if (result.task_error.empty()) result.task_error = state.task_error;
    if (std::ranges::find(reasons, state.stop_reason) == reasons.end()) {
      reasons.push_back(state.stop_reason);
    }
  }
  // A permanent failure ends the run; any other failed call leaves it resumable.
  if (result.call_failure) {
    result.interrupted |= *result.call_failure != llm::CallFailureKind::kPermanent;
  }
  result.stop_reason = fmt::format("{}", fmt::join(reasons, "; "));
  spdlog::info("synthesis: {} step(s); best {}; {}", result.steps, Describe(result.best),
               result.stop_reason);
  return result;
}

}  // namespace kforge::synth
