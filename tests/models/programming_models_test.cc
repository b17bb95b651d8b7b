// Every programming model through the whole path a synthesis takes: the generation prompt is
// rendered for the model's one-shot example task, the model's example is answered back and
// parsed, the static guardrails read it, native sources compile where the compiler is installed,
// and the candidate is evaluated where the device is. A programming model is tested by adding
// its row to kModels; a model without a row fails EveryProgrammingModelHasARow.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "kforge/core/files.h"
#include "kforge/eval/compile_service.h"
#include "kforge/eval/evaluator.h"
#include "kforge/eval/guardrails.h"
#include "kforge/prompt/candidate_answer.h"
#include "kforge/prompt/prompt_renderer.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

struct ModelRow {
  const char* target;   // a target of the model
  CandidateKind kind;   // how the runner loads its candidates
  StreamHandle stream;  // what its kernels receive as `stream`
};

// One row per programming model.
const ModelRow kModels[] = {
    {"nvidia-h200/cuda", CandidateKind::kNative, StreamHandle::kCudaStream},
    // No device named: gfx90a, which Debian's hipcc (clang 15) can build for; gfx942 (MI300X)
    // needs a newer ROCm's clang.
    {"amd/hip", CandidateKind::kNative, StreamHandle::kHipStream},
    {"intel-b580/sycl", CandidateKind::kNative, StreamHandle::kSyclQueue},
    {"apple-m4/metal", CandidateKind::kModule, StreamHandle::kNone},
    {"nvidia-h200/triton", CandidateKind::kModule, StreamHandle::kNone},
    {"nvidia-h200/cute", CandidateKind::kModule, StreamHandle::kNone},
    {"cpu/opencl", CandidateKind::kOpenCl, StreamHandle::kNone},
    {"cpu/cpp", CandidateKind::kNative, StreamHandle::kNone},
    {"nvidia-h200/helion", CandidateKind::kModule, StreamHandle::kNone},
};

const fs::path kTemplates = fs::path(KFORGE_SOURCE_HOME) / "templates";

Target TargetOf(const ModelRow& row) {
  auto target = Target::Parse(row.target);
  EXPECT_TRUE(target) << row.target;
  return target ? *target : Target{};
}

// The task the model's one-shot example solves: its template folder's own reference.py, or the
// one the examples share.
Task ExampleTask(const Backend& backend) {
  const fs::path own = kTemplates / "examples" / backend.traits().templates / "reference.py";
  const fs::path file = fs::exists(own) ? own : kTemplates / "examples" / "reference.py";
  auto task = LoadTask(file.string());
  EXPECT_TRUE(task) << file << ": " << (task ? "" : task.error().message);
  return task ? *task : Task{};
}

std::string ExampleSource(const Backend& backend) {
  const fs::path file =
      kTemplates / "examples" / backend.traits().templates / backend.format().file_name;
  auto source = ReadFile(file);
  EXPECT_TRUE(source) << file;
  return source ? *source : std::string();
}

// Availability is probed once per target.
const Availability& AvailabilityOf(const Backend& backend) {
  static std::map<std::string, Availability> cache;
  const std::string key = backend.target().ToString();
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, backend.Probe()).first;
  return it->second;
}

class ModelRowTest : public ::testing::TestWithParam<ModelRow> {};

TEST(ProgrammingModels, EveryProgrammingModelHasARow) {
  std::set<ProgrammingModel> rows;
  for (const ModelRow& row : kModels) rows.insert(TargetOf(row).model);
  for (ProgrammingModel model : AllProgrammingModels()) {
    EXPECT_TRUE(rows.contains(model)) << ProgrammingModelName(model) << " has no row";
  }
  EXPECT_EQ(rows.size(), AllProgrammingModels().size());
}

TEST_P(ModelRowTest, TraitsAreTheModels) {
  const Target target = TargetOf(GetParam());
  auto backend = NewBackend(target);
  const ModelTraits& traits = backend->traits();
  EXPECT_EQ(traits.format.model, target.model);
  EXPECT_EQ(traits.format.kind, GetParam().kind);
  EXPECT_EQ(traits.stream, GetParam().stream);
  EXPECT_FALSE(traits.title.empty());
  EXPECT_FALSE(traits.profilers.empty());
  EXPECT_TRUE(fs::exists(kTemplates / "examples" / traits.templates / "conventions.mustache"))
      << traits.templates;
  EXPECT_EQ(*backend->KindOf("candidate" + traits.format.extensions.front()), GetParam().kind);
}

// render → parse → guardrails: no toolchain needed.
TEST_P(ModelRowTest, ExampleRendersParsesAndPassesTheGuardrails) {
  const Target target = TargetOf(GetParam());
  auto backend = NewBackend(target);
  const Task task = ExampleTask(*backend);
  const std::string example = ExampleSource(*backend);
  const CandidateFormat& format = backend->format();

  GenerationPromptInputs in;
  in.task = task;
  in.target = target;
  auto prompt = PromptRenderer(kTemplates).RenderGeneration(in);
  ASSERT_TRUE(prompt) << prompt.error().ToString();
  EXPECT_NE(prompt->user.find("```" + format.fence_language + " title=" + format.file_name),
            std::string::npos);
  EXPECT_NE(prompt->user.find(backend->traits().title), std::string::npos);
  EXPECT_NE(prompt->user.find(example), std::string::npos);

  const std::string answer = "Here is the kernel.\n\n```" + format.fence_language +
                             " title=" + format.file_name + "\n" + example + "```\n";
  auto parsed = ParseCandidateAnswer(answer, target.model);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->source, example);
  EXPECT_EQ(parsed->kind, GetParam().kind);
  EXPECT_EQ(parsed->file_name, format.file_name);

  GuardrailOptions options;
  options.policy = task.policy;
  options.task_low_precision = TaskUsesLowPrecision(task.source);
  options.task_dimensions = TaskDimensions(task);
  const GuardrailReport report =
      CheckCandidate(parsed->source, backend->traits().static_rules, parsed->kind, options);
  EXPECT_FALSE(report.rejected()) << report.FormatRejects();
}

// compile: native models, where the compiler is installed.
TEST_P(ModelRowTest, ExampleCompiles) {
  if (GetParam().kind != CandidateKind::kNative) {
    GTEST_SKIP() << GetParam().target << " candidates are built by the runner";
  }
  auto backend = NewBackend(TargetOf(GetParam()));
  if (!AvailabilityOf(*backend).toolchain) {
    GTEST_SKIP() << GetParam().target << ": no compiler here";
  }
  const fs::path dir = fs::path(::testing::TempDir()) / "programming_models" /
                       std::string(ProgrammingModelName(backend->target().model));
  fs::create_directories(dir);
  const fs::path source = dir / backend->format().file_name;
  ASSERT_TRUE(WriteFile(source, ExampleSource(*backend)));
  CompileService compiler;
  auto outcome = compiler.Compile(*backend, source);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_TRUE(outcome->ok) << outcome->full_log;
}

// evaluate: where the device is (here: cpu/cpp and cpu/opencl; the accelerators on their hosts).
TEST_P(ModelRowTest, ExampleIsCorrect) {
  auto backend = NewBackend(TargetOf(GetParam()));
  const Availability& availability = AvailabilityOf(*backend);
  if (!availability.usable()) {
    std::string missing;
    for (const auto& m : availability.missing) missing += "\n  " + m;
    GTEST_SKIP() << GetParam().target << " cannot run here:" << missing;
  }
  const Task task = ExampleTask(*backend);
  const fs::path dir = fs::path(::testing::TempDir()) / "programming_models_eval" /
                       std::string(ProgrammingModelName(backend->target().model));
  fs::create_directories(dir);
  const fs::path candidate = dir / backend->format().file_name;
  ASSERT_TRUE(WriteFile(candidate, ExampleSource(*backend)));
  CompileService compiler;
  EvalOptions options;
  options.trials = 2;
  Evaluator evaluator(compiler, options);
  const Verdict v = evaluator.Evaluate(task, *backend, candidate);
  EXPECT_EQ(v.status, EvalStatus::kCorrect) << v.ToText() << "\n" << v.diagnostics;
}

INSTANTIATE_TEST_SUITE_P(AllModels, ModelRowTest, ::testing::ValuesIn(kModels),
                         [](const ::testing::TestParamInfo<ModelRow>& param_info) {
                           auto target = Target::Parse(param_info.param.target);
                           return std::string(target ? ProgrammingModelName(target->model) : "bad");
                         });

}  // namespace
}  // namespace kforge
