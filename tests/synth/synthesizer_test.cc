// The synthesis loop through the real evaluator on cpu/cpp (examples/suites/ci-cpu.toml's relu),
// with a scripted provider whose answers are the relu fixtures: feedback from malformed answers
// and compile errors, the best-kept rule, budgets, repeated sampling, translation and resume after
// kill -9.
#include "kforge/synth/synthesizer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "../agent/list_provider.h"
#include "../store/scratch_dir.h"
#include "kforge/core/files.h"
#include "kforge/eval/compile_service.h"
#include "kforge/eval/evaluator.h"
#include "kforge/llm/budget.h"
#include "kforge/store/run_store.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge::synth {
namespace {

namespace fs = std::filesystem;
using agent::testing::CppAnswer;
using agent::testing::ListProvider;

const fs::path kSource = KFORGE_SOURCE_HOME;

std::string Fixture(const std::string& name) {
  auto text = ReadFile(kSource / "tests/fixtures/candidates/relu" / name);
  return text ? *text : std::string();
}
std::string Honest() { return Fixture("honest.cpp"); }
// Does not compile: an undeclared name.
std::string CompileError() {
  std::string s = Honest();
  s.replace(s.find("return 0;"), 9, "return not_declared;");
  return s;
}
// Compiles and runs, but computes |x| instead of relu(x): a mismatch.
std::string Wrong() {
  std::string s = Honest();
  s.replace(s.find("x[i] : 0.0f"), 11, "x[i] : -x[i]");
  return s;
}
const char kMalformed[] = "I would loop over the elements and clamp each one at zero.";
const char kAdvice[] =
    "```json\n{\"recommendations\": [{\"bottleneck\": \"memory bandwidth\", \"evidence\": \"one "
    "load and one store per element\", \"changes\": [\"use 16-byte vector loads\"], "
    "\"expected_gain\": \"1.2x\"}]}\n```\n";

// A run directory with its run row, the relu task, the cpu/cpp backend and an evaluator.
class Harness {
 public:
  // `time`: time correct candidates (the optimization prompts then quote the timings).
  explicit Harness(const fs::path& run_dir, bool time = false) {
    auto suite = LoadSuite(kSource / "examples/suites/ci-cpu.toml");
    if (!suite) {
      problem_ = suite.error().message;
      return;
    }
    for (auto& t : suite->tasks) {
      if (t.id == "relu") task_ = t;
    }
    backend_ = NewBackend(*Target::Parse("cpu/cpp"));
    auto opened = store::RunStore::Open(run_dir);
    if (!opened) {
      problem_ = opened.error().message;
      return;
    }
    store_ = std::move(*opened);
    if (!store_->GetRun("run-1")) {
      store::RunRecord run;
      run.id = "run-1";
      run.kind = store::RunKind::kRun;
      (void)store_->AddRun(run);
    }
    EvalOptions options;
    options.trials = 2;
    options.time = time;
    options.timing.max_seconds = 1;  // a short measurement is enough for these tests
    evaluator_ = std::make_unique<Evaluator>(compiler_, options);
  }

  // Empty when the harness can run here; else why not.
  std::string Unusable() {
    if (!problem_.empty()) return problem_;
    Availability a = backend_->Probe();
    if (!a.usable()) {
      std::string why = "cpu/cpp is not usable here:";
      for (const auto& m : a.missing) why += " " + m;
      return why;
    }
    return {};
  }

  SynthesisSetup Setup(std::shared_ptr<llm::Provider> generation,
                       std::shared_ptr<llm::Budget> budget = nullptr) {
    SynthesisSetup setup;
    setup.store = store_.get();
    setup.run_id = "run-1";
    setup.task = task_;
    setup.backend = backend_.get();
    setup.evaluator = evaluator_.get();
    setup.budget = budget ? budget : std::make_shared<llm::Budget>(llm::BudgetLimits{});
    setup.generation_provider = llm::NewBudgetedProvider(std::move(generation), setup.budget);
    setup.renderer.emplace(kSource / "templates");
    return setup;
  }

  store::RunStore& store() { return *store_; }

 private:
  std::string problem_;
  Task task_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<store::RunStore> store_;
  CompileService compiler_;
  std::unique_ptr<Evaluator> evaluator_;
};

class SynthesizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    harness_ = std::make_unique<Harness>(dir_.path());
    if (std::string why = harness_->Unusable(); !why.empty()) GTEST_SKIP() << why;
  }

  store::ScratchDir dir_;
  std::unique_ptr<Harness> harness_;
};

TEST_F(SynthesizerTest, MalformedThenCompileErrorThenCorrect) {
  auto provider = std::make_shared<ListProvider>(
      std::vector<std::string>{kMalformed, CppAnswer(CompileError()), CppAnswer(Honest())});
  SynthesisSetup setup = harness_->Setup(provider);
  setup.options.iterations = 3;
  std::vector<ProgressEvent> events;
  setup.on_progress = [&](const ProgressEvent& e) { events.push_back(e); };
  Synthesizer synth(std::move(setup));
  auto result = synth.Run();
  ASSERT_TRUE(result) << result.error().message;

  EXPECT_EQ(provider->calls(), 3);
  ASSERT_TRUE(result->best);
  EXPECT_TRUE(result->best->correct());
  EXPECT_EQ(result->best->iteration, 2);
  ASSERT_FALSE(result->best_path.empty());
  EXPECT_EQ(*ReadFile(result->best_path), Honest());

  // The feedback of each failure reached the next prompt.
  const auto prompts = provider->prompts();
  EXPECT_NE(prompts[1].find("could not be used as a candidate"), std::string::npos);
  EXPECT_NE(prompts[1].find("kforge_forward"), std::string::npos);  // the format asked for
  EXPECT_NE(prompts[2].find("compile_error"), std::string::npos);
  EXPECT_NE(prompts[2].find("not_declared"), std::string::npos);

  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].status, "malformed_answer");
  EXPECT_EQ(events[1].status, "compile_error");
  EXPECT_EQ(events[2].status, "correct");
  EXPECT_EQ(events[2].tokens, 3 * 1500);

  store::RunStore& store = harness_->store();
  auto calls = store.ListLlmCalls("run-1");
  ASSERT_TRUE(calls);
  EXPECT_EQ(calls->size(), 3u);
  auto candidates = store.ListCandidates("run-1");
  ASSERT_TRUE(candidates);
  ASSERT_EQ(candidates->size(), 2u);
  const auto& first = (*candidates)[0];
  const auto& second = (*candidates)[1];
  EXPECT_EQ(first.iteration, 1);
  EXPECT_EQ(second.iteration, 2);
  EXPECT_EQ(first.sample, 0);
  EXPECT_EQ(first.pass_kind, store::PassKind::kFunctional);
  EXPECT_FALSE(first.parent_id);
  EXPECT_EQ(second.parent_id, first.id);
  EXPECT_EQ(first.llm_call_id, (*calls)[1].id);
  EXPECT_EQ(second.llm_call_id, (*calls)[2].id);
  auto evaluations = store.ListEvaluations("run-1");
  ASSERT_TRUE(evaluations);
  ASSERT_EQ(evaluations->size(), 2u);
  EXPECT_EQ((*evaluations)[0].status, store::EvaluationStatus::kCompileError);
  EXPECT_EQ((*evaluations)[1].status, store::EvaluationStatus::kCorrect);
}

TEST_F(SynthesizerTest, BestIsKeptWhenAnOptimizationPassIsWorse) {
  auto generation = std::make_shared<ListProvider>(
      std::vector<std::string>{CppAnswer(Honest()), CppAnswer(Wrong())});
  auto analysis = std::make_shared<ListProvider>(std::vector<std::string>{kAdvice}, "analyst");
  SynthesisSetup setup = harness_->Setup(generation);
  setup.analysis_provider = analysis;
  setup.options.iterations = 2;
  Synthesizer synth(std::move(setup));
  auto result = synth.Run();
  ASSERT_TRUE(result) << result.error().message;

  EXPECT_EQ(generation->calls(), 2);
  EXPECT_EQ(analysis->calls(), 1);
  // The optimization prompt carried the advice.
  EXPECT_NE(generation->prompts()[1].find("16-byte vector loads"), std::string::npos);

  store::RunStore& store = harness_->store();
  auto candidates = store.ListCandidates("run-1");
  ASSERT_EQ(candidates->size(), 2u);
  EXPECT_EQ((*candidates)[1].pass_kind, store::PassKind::kOptimization);
  EXPECT_EQ((*candidates)[1].parent_id, (*candidates)[0].id);
  auto evaluations = store.ListEvaluations("run-1");
  ASSERT_EQ(evaluations->size(), 2u);
  EXPECT_EQ((*evaluations)[1].status, store::EvaluationStatus::kMismatch);
  ASSERT_TRUE(result->best);
  EXPECT_EQ(result->best->candidate_id, (*candidates)[0].id);
  EXPECT_EQ(*ReadFile(result->best_path), Honest());
  auto recs = store.ListRecommendations("run-1");
  ASSERT_EQ(recs->size(), 1u);
  EXPECT_EQ((*recs)[0].candidate_id, (*candidates)[0].id);
  auto calls = store.ListLlmCalls("run-1");
  ASSERT_EQ(calls->size(), 3u);
  EXPECT_EQ((*calls)[1].agent, "analysis");
  EXPECT_EQ((*calls)[1].model_id, "analyst");
}

TEST_F(SynthesizerTest, AFailedOptimizationIsRepairedBeforeTheNextOptimization) {
  // correct -> optimization (mismatch) -> repair (functional, gets the failure) -> optimization.
  auto generation = std::make_shared<ListProvider>(std::vector<std::string>{
      CppAnswer(Honest()), CppAnswer(Wrong()), CppAnswer(Honest() + "\n// repaired\n"),
      CppAnswer(Honest() + "\n// again\n")});
  auto analysis =
      std::make_shared<ListProvider>(std::vector<std::string>{kAdvice, kAdvice}, "analyst");
  SynthesisSetup setup = harness_->Setup(generation);
  setup.analysis_provider = analysis;
  setup.options.iterations = 4;
  Synthesizer synth(std::move(setup));
  auto result = synth.Run();
  ASSERT_TRUE(result) << result.error().message;

  EXPECT_EQ(generation->calls(), 4);
  EXPECT_EQ(analysis->calls(), 2);  // no analysis before the repair
  // The repair prompt shows the failed optimized source and why it failed.
  const std::string& repair = generation->prompts()[2];
  EXPECT_NE(repair.find("x[i] : -x[i]"), std::string::npos);
  EXPECT_NE(repair.find("mismatch"), std::string::npos);
  auto candidates = harness_->store().ListCandidates("run-1");
  ASSERT_EQ(candidates->size(), 4u);
  EXPECT_EQ((*candidates)[1].pass_kind, store::PassKind::kOptimization);
  EXPECT_EQ((*candidates)[2].pass_kind, store::PassKind::kFunctional);
  EXPECT_EQ((*candidates)[3].pass_kind, store::PassKind::kOptimization);
}

TEST_F(SynthesizerTest, RepairsAreBounded) {
  // correct, then an optimization and two repairs that all fail, then optimization again.
  auto generation = std::make_shared<ListProvider>(std::vector<std::string>{
      CppAnswer(Honest()), CppAnswer(Wrong()), CppAnswer(CompileError()), CppAnswer(Wrong()),
      CppAnswer(Honest())});
  auto analysis =
      std::make_shared<ListProvider>(std::vector<std::string>{kAdvice, kAdvice}, "analyst");
  SynthesisSetup setup = harness_->Setup(generation);
  setup.analysis_provider = analysis;
  setup.options.iterations = 5;
  setup.options.max_repair_attempts = 2;
  Synthesizer synth(std::move(setup));
  auto result = synth.Run();
  ASSERT_TRUE(result) << result.error().message;
  auto candidates = harness_->store().ListCandidates("run-1");
  ASSERT_EQ(candidates->size(), 5u);
  EXPECT_EQ((*candidates)[2].pass_kind, store::PassKind::kFunctional);
  EXPECT_EQ((*candidates)[3].pass_kind, store::PassKind::kFunctional);
  EXPECT_EQ((*candidates)[4].pass_kind, store::PassKind::kOptimization);
  EXPECT_EQ(analysis->calls(), 2);
}

TEST_F(SynthesizerTest, TokenBudgetStopsNewCalls) {
  auto provider = std::make_shared<ListProvider>(std::vector<std::string>(10, kMalformed));
  auto budget = std::make_shared<llm::Budget>(llm::BudgetLimits{.max_tokens = 2500, .max_usd = {}});
  SynthesisSetup setup = harness_->Setup(provider, budget);
  setup.options.iterations = 10;
  Synthesizer synth(std::move(setup));
  auto result = synth.Run();
  ASSERT_TRUE(result) << result.error().message;
  // 1500 tokens per call: the second call starts below the limit, the third may not.
  EXPECT_EQ(provider->calls(), 2);
  EXPECT_EQ(result->steps, 2);
  EXPECT_FALSE(result->best);
  EXPECT_NE(result->stop_reason.find("token"), std::string::npos) << result->stop_reason;
  EXPECT_FALSE(result->interrupted) << "a budget ends a run; it does not interrupt it";
}

TEST_F(SynthesizerTest, AFailedCallInterruptsTheRun) {
  // One answer, then the script has none: the second call fails, as an unanswered inbox would.
  auto provider = std::make_shared<ListProvider>(std::vector<std::string>{kMalformed});
  SynthesisSetup setup = harness_->Setup(provider);
  setup.options.iterations = 3;
  auto result = Synthesizer(std::move(setup)).Run();
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(provider->calls(), 2);
  EXPECT_TRUE(result->interrupted);
  EXPECT_NE(result->stop_reason.find("generation call failed"), std::string::npos)
      << result->stop_reason;
}

TEST_F(SynthesizerTest, MoneyAndWallTimeBudgetsStopNewCalls) {
  {
    auto provider = std::make_shared<ListProvider>(std::vector<std::string>(10, kMalformed));
    auto budget =
        std::make_shared<llm::Budget>(llm::BudgetLimits{.max_tokens = {}, .max_usd = 0.025});
    SynthesisSetup setup = harness_->Setup(provider, budget);
    setup.options.iterations = 10;
    auto result = Synthesizer(std::move(setup)).Run();
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(provider->calls(), 3);  // $0.01 per call
  }
  auto provider = std::make_shared<ListProvider>(std::vector<std::string>(10, kMalformed));
  SynthesisSetup setup = harness_->Setup(provider);
  setup.options.iterations = 10;
  setup.options.max_wall_time = std::chrono::seconds(0);
  auto result = Synthesizer(std::move(setup)).Run();
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(provider->calls(), 0);
  EXPECT_NE(result->stop_reason.find("wall-time"), std::string::npos) << result->stop_reason;
}

TEST_F(SynthesizerTest, FunctionalPassesAreBounded) {
  auto provider = std::make_shared<ListProvider>(std::vector<std::string>(10, kMalformed));
  SynthesisSetup setup = harness_->Setup(provider);
  setup.options.iterations = 10;
  setup.options.max_functional_attempts = 4;
  auto result = Synthesizer(std::move(setup)).Run();
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(provider->calls(), 4);
  EXPECT_NE(result->stop_reason.find("4 functional attempts"), std::string::npos);
}

TEST_F(SynthesizerTest, RepeatedSamplingKeepsTheBestOfAllSamples) {
  auto provider = std::make_shared<ListProvider>(
      std::vector<std::string>{CppAnswer(Wrong()), CppAnswer(Honest()), CppAnswer(CompileError())});
  SynthesisSetup setup = harness_->Setup(provider);
  setup.options.iterations = 1;
  setup.options.samples = 3;
  auto result = Synthesizer(std::move(setup)).Run();
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(provider->calls(), 3);
  ASSERT_TRUE(result->best);
  EXPECT_TRUE(result->best->correct());
  EXPECT_EQ(*ReadFile(result->best_path), Honest());

  auto candidates = harness_->store().ListCandidates("run-1");
  ASSERT_EQ(candidates->size(), 3u);
  std::set<std::int64_t> samples;
  for (const auto& c : *candidates) samples.insert(c.sample);
  EXPECT_EQ(samples, (std::set<std::int64_t>{0, 1, 2}));
  auto evaluations = harness_->store().ListEvaluations("run-1");
  ASSERT_EQ(evaluations->size(), 3u);
}

TEST_F(SynthesizerTest, TranslationPutsTheReferenceImplementationInThePrompt) {
  auto provider = std::make_shared<ListProvider>(std::vector<std::string>{kMalformed});
  SynthesisSetup setup = harness_->Setup(provider);
  setup.options.iterations = 1;
  setup.translate_from = TranslationSource{.target = *Target::Parse("cpu/opencl"),
                                           .file_name = "kernel.py",
                                           .source = Fixture("honest.cl.py")};
  auto result = Synthesizer(std::move(setup)).Run();
  ASSERT_TRUE(result) << result.error().message;
  ASSERT_EQ(provider->calls(), 1);
  EXPECT_NE(provider->prompts()[0].find("cpu/opencl"), std::string::npos);
  EXPECT_NE(provider->prompts()[0].find(Fixture("honest.cl.py").substr(0, 60)), std::string::npos);
}

// A reference_error says nothing of the candidate: the loop stops instead of sending the model a
// prompt that tells it to find the cause in its kernel.
TEST_F(SynthesizerTest, AReferenceErrorStopsTheLoopInsteadOfAskingTheModel) {
  auto provider = std::make_shared<ListProvider>(
      std::vector<std::string>{CppAnswer(Honest()), CppAnswer(Honest() + "\n")});
  SynthesisSetup setup = harness_->Setup(provider);
  setup.options.iterations = 3;
  setup.evaluate = [](const Task&, const Backend&, const fs::path&, std::stop_token) {
    Verdict v;
    v.status = EvalStatus::kReferenceError;
    v.message = "the task's reference failed (not the candidate's fault); fix the task";
    v.diagnostics = "forward: RuntimeError: mat1 and mat2 shapes cannot be multiplied";
    return v;
  };
  auto result = Synthesizer(std::move(setup)).Run();
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(provider->calls(), 1) << "the reference_error went back to the model";
  EXPECT_NE(result->task_error.find("fix the task"), std::string::npos) << result->task_error;
  EXPECT_NE(result->stop_reason.find("fix the task"), std::string::npos) << result->stop_reason;
}

// The task check runs before the first prompt; a broken task ends the run with its error.
TEST_F(SynthesizerTest, ABrokenTaskIsCheckedBeforeTheFirstPrompt) {
  auto provider = std::make_shared<ListProvider>(std::vector<std::string>{CppAnswer(Honest())});
  SynthesisSetup setup = harness_->Setup(provider);
  int checks = 0;
  setup.check_task = [&checks](const Task&) -> Status {
    ++checks;
    return InvalidArgument("task.py:6: SyntaxError: '(' was never closed (loading the task)");
  };
  auto result = Synthesizer(std::move(setup)).Run();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(checks, 1);
  EXPECT_EQ(provider->calls(), 0);
}

// Runs `synthesis` in a forked child (the run that gets killed) and returns the child's wait
// status; nullopt when it could not be forked or waited for. The child exits 77 when cpu/cpp is
// not usable here.
std::optional<int> StatusOfARunInAChild(const std::function<void()>& synthesis) {
  const pid_t child = fork();
  if (child < 0) return std::nullopt;
  if (child == 0) {
    synthesis();
    _exit(0);  // not reached when the synthesis is killed
  }
  int wstatus = 0;
  if (waitpid(child, &wstatus, 0) != child) return std::nullopt;
  return wstatus;
}

// kill -9 after the first evaluation, then resume: no finished LLM call and no finished evaluation
// is repeated, counted through the provider.
TEST(SynthesizerResumeTest, KillAfterFirstEvaluationThenResumeRepeatsNoCall) {
  store::ScratchDir dir;
  const auto status = StatusOfARunInAChild([&dir] {
    Harness harness(dir.path());
    if (!harness.Unusable().empty()) _exit(77);
    auto provider = std::make_shared<ListProvider>(
        std::vector<std::string>{CppAnswer(CompileError()), CppAnswer(Honest())});
    // The second call comes after the first evaluation is stored: die there, as kill -9 would.
    provider->before_answer = [](std::size_t index) {
      if (index == 1) ::kill(::getpid(), SIGKILL);
    };
    SynthesisSetup setup = harness.Setup(provider);
    setup.options.iterations = 2;
    (void)Synthesizer(std::move(setup)).Run();
  });
  ASSERT_TRUE(status) << "fork or waitpid failed";
  const int wstatus = *status;
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 77)
    GTEST_SKIP() << "cpu/cpp is not usable here";
  ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) << "status " << wstatus;

  Harness harness(dir.path());
  {
    auto evaluations = harness.store().ListEvaluations("run-1");
    ASSERT_TRUE(evaluations);
    ASSERT_EQ(evaluations->size(), 1u);  // the first evaluation finished before the kill
  }
  // The resumed run's provider holds only the answer to the call that never finished.
  auto provider = std::make_shared<ListProvider>(std::vector<std::string>{CppAnswer(Honest())});
  SynthesisSetup setup = harness.Setup(provider);
  setup.options.iterations = 2;
  auto result = Synthesizer(std::move(setup)).Run();
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(provider->calls(), 1);
  ASSERT_TRUE(result->best);
  EXPECT_TRUE(result->best->correct());

  store::RunStore& store = harness.store();
  auto calls = store.ListLlmCalls("run-1");
  ASSERT_EQ(calls->size(), 2u);
  for (const auto& c : *calls) EXPECT_EQ(c.status, store::LlmCallStatus::kOk);
  EXPECT_NE((*calls)[0].request_fingerprint, (*calls)[1].request_fingerprint);
  auto candidates = store.ListCandidates("run-1");
  ASSERT_EQ(candidates->size(), 2u);
  EXPECT_EQ((*candidates)[1].parent_id, (*candidates)[0].id);
  auto evaluations = store.ListEvaluations("run-1");
  ASSERT_EQ(evaluations->size(), 2u);
  EXPECT_EQ((*evaluations)[0].status, store::EvaluationStatus::kCompileError);
  EXPECT_EQ((*evaluations)[1].status, store::EvaluationStatus::kCorrect);
  auto tasks = store.ListTasks("run-1");
  EXPECT_EQ(tasks->size(), 1u);
}

// kill -9 in an optimization pass after the analysis agent answered, with timing on: the
// resumed run reads the stored verdict back with its timings, so the analysis prompt (which
// quotes them) is the same, is answered from the store, and only the unfinished generation call
// is made again.
TEST(SynthesizerResumeTest, KillInAnOptimizationPassThenResumeRepeatsNoAnalysisCall) {
  store::ScratchDir dir;
  const auto status = StatusOfARunInAChild([&dir] {
    Harness harness(dir.path(), /*time=*/true);
    if (!harness.Unusable().empty()) _exit(77);
    auto generation = std::make_shared<ListProvider>(
        std::vector<std::string>{CppAnswer(Honest()), CppAnswer(Honest() + "\n")});
    // The second generation call comes after the analysis call is stored: die there.
    generation->before_answer = [](std::size_t index) {
      if (index == 1) ::kill(::getpid(), SIGKILL);
    };
    auto analysis = std::make_shared<ListProvider>(std::vector<std::string>{kAdvice}, "analyst");
    SynthesisSetup setup = harness.Setup(generation);
    setup.analysis_provider = analysis;
    setup.options.iterations = 2;
    (void)Synthesizer(std::move(setup)).Run();
  });
  ASSERT_TRUE(status) << "fork or waitpid failed";
  const int wstatus = *status;
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 77)
    GTEST_SKIP() << "cpu/cpp is not usable here";
  ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) << "status " << wstatus;

  Harness harness(dir.path(), /*time=*/true);
  {
    auto evaluations = harness.store().ListEvaluations("run-1");
    ASSERT_TRUE(evaluations);
    ASSERT_EQ(evaluations->size(), 1u);
    const Verdict stored = Verdict::FromJson((*evaluations)[0].verdict_json);
    ASSERT_TRUE(stored.timing) << "the first candidate was not timed: " << stored.timing_error;
  }
  auto generation =
      std::make_shared<ListProvider>(std::vector<std::string>{CppAnswer(Honest() + "\n")});
  auto analysis = std::make_shared<ListProvider>(std::vector<std::string>{}, "analyst");
  SynthesisSetup setup = harness.Setup(generation);
  setup.analysis_provider = analysis;
  setup.options.iterations = 2;
  auto result = Synthesizer(std::move(setup)).Run();
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(analysis->calls(), 0);  // answered from the store: the same prompt as before
  EXPECT_EQ(generation->calls(), 1);
  auto calls = harness.store().ListLlmCalls("run-1");
  ASSERT_TRUE(calls);
  EXPECT_EQ(calls->size(), 3u);
  ASSERT_TRUE(result->best);
  EXPECT_TRUE(result->best->correct());
  EXPECT_TRUE(result->best->verdict.timing);
}

// An analysis that stopped the run (its call failed, as an unanswered inbox prompt does) is asked
// again on resume with the same prompt: the profile of its candidate is the one stored by the
// first run, not a new pass with new figures (the inbox would otherwise write a new prompt and
// never read the answer given to the first).
TEST(SynthesizerResumeTest, AResumedAnalysisQuotesTheStoredProfile) {
  store::ScratchDir dir;
  Harness harness(dir.path());
  if (std::string why = harness.Unusable(); !why.empty()) GTEST_SKIP() << why;
  int passes = 0;
  auto profiler = [&passes](const std::string& file_name, const std::string&) {
    ++passes;  // every pass measures differently
    return Result<AnalysisProfile>(AnalysisProfile{
        .tool = "opencl",
        .text = "tool: opencl; kernel time " + std::to_string(passes) + " us of " + file_name,
        .raw = "{\"events\": []}"});
  };
  std::string first_prompt;
  {
    auto generation = std::make_shared<ListProvider>(std::vector<std::string>{CppAnswer(Honest())});
    auto analysis = std::make_shared<ListProvider>(std::vector<std::string>{}, "analyst");
    SynthesisSetup setup = harness.Setup(generation);
    setup.analysis_provider = analysis;
    setup.options.iterations = 2;
    setup.profile_summary = profiler;
    auto result = Synthesizer(std::move(setup)).Run();
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_TRUE(result->interrupted);
    ASSERT_EQ(analysis->calls(), 1);
    first_prompt = analysis->prompts()[0];
  }
  EXPECT_EQ(passes, 1);
  ASSERT_NE(first_prompt.find("kernel time 1 us"), std::string::npos) << first_prompt;

  auto generation =
      std::make_shared<ListProvider>(std::vector<std::string>{CppAnswer(Honest() + "\n")});
  auto analysis = std::make_shared<ListProvider>(std::vector<std::string>{kAdvice}, "analyst");
  SynthesisSetup setup = harness.Setup(generation);
  setup.analysis_provider = analysis;
  setup.options.iterations = 2;
  setup.profile_summary = profiler;
  auto result = Synthesizer(std::move(setup)).Run();
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_FALSE(result->interrupted) << result->stop_reason;
  EXPECT_EQ(passes, 1) << "the resumed run profiled the candidate again";
  ASSERT_EQ(analysis->calls(), 1);
  EXPECT_EQ(analysis->prompts()[0], first_prompt);
  EXPECT_EQ(generation->calls(), 1);

  // The profile is stored with the analysed candidate's evaluation.
  store::RunStore& store = harness.store();
  auto candidates = store.ListCandidates("run-1");
  ASSERT_TRUE(candidates);
  ASSERT_EQ(candidates->size(), 2u);
  auto evaluation = store.FindEvaluation((*candidates)[0].id);
  ASSERT_TRUE(evaluation && evaluation->has_value());
  auto profiles = store.ListProfiles((**evaluation).id);
  ASSERT_TRUE(profiles);
  ASSERT_EQ(profiles->size(), 1u);
  EXPECT_EQ((*profiles)[0].tool, "opencl");
  EXPECT_EQ(*store.GetArtifact((*profiles)[0].raw_hash), "{\"events\": []}");
  auto recs = store.ListRecommendations("run-1");
  ASSERT_TRUE(recs);
  EXPECT_EQ(recs->size(), 1u);
}

// A profile pass that fails is stored as failed: a resumed analysis goes without a profile, as
// the first did, instead of trying a pass whose figures the first prompt never quoted.
TEST(SynthesizerResumeTest, AFailedProfilePassIsNotRetriedOnResume) {
  store::ScratchDir dir;
  Harness harness(dir.path());
  if (std::string why = harness.Unusable(); !why.empty()) GTEST_SKIP() << why;
  int passes = 0;
  auto profiler = [&passes](const std::string&, const std::string&) -> Result<AnalysisProfile> {
    if (++passes == 1) return std::unexpected(Error{ErrorCode::kUnavailable, "no profiler"});
    return AnalysisProfile{.tool = "opencl", .text = "tool: opencl; a later pass", .raw = "{}"};
  };
  std::string first_prompt;
  {
    auto generation = std::make_shared<ListProvider>(std::vector<std::string>{CppAnswer(Honest())});
    auto analysis = std::make_shared<ListProvider>(std::vector<std::string>{}, "analyst");
    SynthesisSetup setup = harness.Setup(generation);
    setup.analysis_provider = analysis;
    setup.options.iterations = 2;
    setup.profile_summary = profiler;
    ASSERT_TRUE(Synthesizer(std::move(setup)).Run());
    ASSERT_EQ(analysis->calls(), 1);
    first_prompt = analysis->prompts()[0];
  }
  auto generation =
      std::make_shared<ListProvider>(std::vector<std::string>{CppAnswer(Honest() + "\n")});
  auto analysis = std::make_shared<ListProvider>(std::vector<std::string>{kAdvice}, "analyst");
  SynthesisSetup setup = harness.Setup(generation);
  setup.analysis_provider = analysis;
  setup.options.iterations = 2;
  setup.profile_summary = profiler;
  ASSERT_TRUE(Synthesizer(std::move(setup)).Run());
  EXPECT_EQ(passes, 1);
  ASSERT_EQ(analysis->calls(), 1);
  EXPECT_EQ(analysis->prompts()[0], first_prompt);
}

}  // namespace
}  // namespace kforge::synth
