// Golden tests of prompt rendering: every template, every programming model. A golden file holds
// the system and the user message of one rendering. KFORGE_UPDATE_GOLDEN=1 rewrites the golden
// files instead of comparing (review the diff before committing them).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "kforge/core/files.h"
#include "kforge/prompt/prompt_renderer.h"
#include "kforge/target/backend.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

const fs::path kTemplates = fs::path(KFORGE_SOURCE_HOME) / "templates";
const fs::path kGolden = fs::path(KFORGE_SOURCE_HOME) / "tests" / "prompt" / "golden";

bool UpdateGolden() {
  const char* v = std::getenv("KFORGE_UPDATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

// The first line where `a` and `b` differ, for a readable failure.
std::string FirstDifference(const std::string& expected, const std::string& actual) {
  std::istringstream e(expected);
  std::istringstream a(actual);
  std::string le;
  std::string la;
  for (int line = 1;; ++line) {
    const bool more_e = static_cast<bool>(std::getline(e, le));
    const bool more_a = static_cast<bool>(std::getline(a, la));
    if (!more_e && !more_a) return "identical";
    if (!more_e || !more_a || le != la) {
      std::string out = "line ";
      out += std::to_string(line);
      out += "\n  golden:   ";
      out += more_e ? le : std::string("<end of file>");
      out += "\n  rendered: ";
      out += more_a ? la : std::string("<end of file>");
      return out;
    }
  }
}

void ExpectGolden(const std::string& name, const RenderedPrompt& prompt) {
  std::string text = "===== system =====\n";
  text += prompt.system;
  text += "===== user =====\n";
  text += prompt.user;
  const fs::path path = kGolden / (name + ".txt");
  if (UpdateGolden()) {
    ASSERT_TRUE(WriteFile(path, text)) << path;
    return;
  }
  auto golden = ReadFile(path);
  ASSERT_TRUE(golden) << "missing golden file " << path
                      << "; create it with KFORGE_UPDATE_GOLDEN=1 and review it";
  EXPECT_EQ(*golden, text) << "rendering differs from " << path << " at "
                           << FirstDifference(*golden, text)
                           << "\n(if the change is intended: KFORGE_UPDATE_GOLDEN=1)";
}

Task ReluTask() {
  Task task;
  task.id = "relu";
  task.name = "19_ReLU";
  task.origin = "level1.jsonl#19";
  task.level = 1;
  task.problem_id = 19;
  task.source =
      "import torch\n"
      "import torch.nn as nn\n"
      "\n"
      "\n"
      "class Model(nn.Module):\n"
      "    def __init__(self):\n"
      "        super(Model, self).__init__()\n"
      "\n"
      "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
      "        return torch.relu(x)\n"
      "\n"
      "\n"
      "batch_size = 16\n"
      "dim = 16384\n"
      "\n"
      "\n"
      "def get_inputs():\n"
      "    return [torch.randn(batch_size, dim)]\n"
      "\n"
      "\n"
      "def get_init_inputs():\n"
      "    return []\n";
  return task;
}

DeviceFacts H200() {
  DeviceFacts d;
  d.name = "NVIDIA H200";
  d.architecture = "sm_90 (Hopper)";
  d.compute_units = 132;
  d.warp_size = 32;
  d.memory_gib = 141;
  d.memory_bandwidth_gbs = 4800;
  d.l2_cache_mib = 50;
  d.l1_cache_kib = 256;
  d.shared_memory_per_block_kib = 227;
  d.registers_per_unit = 65536;
  d.fp32_tflops = 67;
  d.tensor_tflops = 989;
  d.notes = {"measured copy bandwidth about 4.1 TB/s"};
  return d;
}

// A target string per programming model (the device pins an architecture where it has one).
Target TargetFor(ProgrammingModel model) {
  const char* text = "cpu/cpp";
  switch (model) {
    case ProgrammingModel::kCuda:
      text = "nvidia-h200/cuda";
      break;
    case ProgrammingModel::kTriton:
      text = "nvidia-h200/triton";
      break;
    case ProgrammingModel::kCute:
      text = "nvidia-h200/cute";
      break;
    case ProgrammingModel::kHelion:
      text = "nvidia-h200/helion";
      break;
    case ProgrammingModel::kHip:
      text = "amd-mi300x/hip";
      break;
    case ProgrammingModel::kSycl:
      text = "intel-b580/sycl";
      break;
    case ProgrammingModel::kMetal:
      text = "apple-m4/metal";
      break;
    case ProgrammingModel::kOpenCl:
      text = "cpu/opencl";
      break;
    case ProgrammingModel::kCpp:
      text = "cpu/cpp";
      break;
  }
  auto target = Target::Parse(text);
  EXPECT_TRUE(target) << text;
  return *target;
}

std::string ModelName(ProgrammingModel model) { return std::string(ProgrammingModelName(model)); }

class PromptRenderPerModel : public ::testing::TestWithParam<ProgrammingModel> {};

TEST_P(PromptRenderPerModel, FirstFunctionalAttempt) {
  GenerationPromptInputs in;
  in.task = ReluTask();
  in.target = TargetFor(GetParam());
  PromptRenderer renderer(kTemplates);
  auto prompt = renderer.RenderGeneration(in);
  ASSERT_TRUE(prompt) << prompt.error().ToString();
  // The prompt asks for exactly the file the parser expects, and carries the model's example.
  const CandidateFormat& format = CandidateFormatOf(GetParam());
  EXPECT_NE(prompt->user.find("```" + format.fence_language + " title=" + format.file_name),
            std::string::npos);
  auto example = ReadFile(kTemplates / "examples" / ModelName(GetParam()) / format.file_name);
  ASSERT_TRUE(example);
  EXPECT_NE(prompt->user.find(*example), std::string::npos);
  ExpectGolden("generation_" + ModelName(GetParam()), *prompt);
}

TEST_P(PromptRenderPerModel, Analysis) {
  AnalysisPromptInputs in;
  in.task = ReluTask();
  in.target = TargetFor(GetParam());
  const CandidateFormat& format = CandidateFormatOf(GetParam());
  auto example = ReadFile(kTemplates / "examples" / ModelName(GetParam()) / format.file_name);
  ASSERT_TRUE(example);
  in.candidate_source = *example;
  in.timing = "median 12.4 us (p10 12.1, p90 12.9, 40 samples); PyTorch eager 15.0 us (1.21x)";
  if (GetParam() == ProgrammingModel::kCuda) {
    in.device = H200();
    in.profile_summary =
        "kernel add_vec4: 9.8 us, DRAM throughput 87% of peak, achieved occupancy 61%, "
        "L2 hit rate 3%, 0 bank conflicts";
  }
  PromptRenderer renderer(kTemplates);
  auto prompt = renderer.RenderAnalysis(in);
  ASSERT_TRUE(prompt) << prompt.error().ToString();
  EXPECT_NE(prompt->system.find("\"recommendations\""), std::string::npos);
  ExpectGolden("analysis_" + ModelName(GetParam()), *prompt);
}

INSTANTIATE_TEST_SUITE_P(AllModels, PromptRenderPerModel,
                         ::testing::ValuesIn(AllProgrammingModels()),
                         [](const ::testing::TestParamInfo<ProgrammingModel>& param_info) {
                           return ModelName(param_info.param);
                         });

TEST(PromptRender, FunctionalRetryWithDiagnostics) {
  GenerationPromptInputs in;
  in.task = ReluTask();
  in.target = TargetFor(ProgrammingModel::kCuda);
  in.attempt = 2;
  in.previous = PreviousCandidate{
      .file_name = "kernel.cu",
      .source =
          "#include \"kforge_kernel.h\"\nextern \"C\" int kforge_forward(const kforge_tensor* "
          "inputs, int num_inputs, kforge_tensor* outputs, int num_outputs, void* stream) "
          "{\n  relu<<<1, 256>>>(inputs[0].data);\n  return 0;\n}\n",
      .status = "compile_error",
      .diagnostics = "kernel.cu(3): error: identifier \"relu\" is undefined\n1 error detected",
      .timing = ""};
  auto prompt = PromptRenderer(kTemplates).RenderGeneration(in);
  ASSERT_TRUE(prompt) << prompt.error().ToString();
  EXPECT_NE(prompt->user.find("identifier \"relu\" is undefined"), std::string::npos);
  EXPECT_NE(prompt->user.find("`compile_error`"), std::string::npos);
  ExpectGolden("generation_cuda_retry", *prompt);
}

TEST(PromptRender, FunctionalRetryAfterMalformedAnswer) {
  GenerationPromptInputs in;
  in.task = ReluTask();
  in.target = TargetFor(ProgrammingModel::kCpp);
  in.attempt = 2;
  in.previous = PreviousCandidate{
      .file_name = "",
      .source = "",
      .status = "malformed_answer",
      .diagnostics = "Your answer could not be used: it has no fenced code block.",
      .timing = ""};
  auto prompt = PromptRenderer(kTemplates).RenderGeneration(in);
  ASSERT_TRUE(prompt) << prompt.error().ToString();
  EXPECT_NE(prompt->user.find("it has no fenced code block"), std::string::npos);
  ExpectGolden("generation_cpp_malformed", *prompt);
}

TEST(PromptRender, OptimizationWithRecommendationsAndDevice) {
  GenerationPromptInputs in;
  in.task = ReluTask();
  in.task.policy = PrecisionPolicy::kTf32;
  in.target = TargetFor(ProgrammingModel::kCuda);
  in.pass = GenerationPass::kOptimization;
  in.device = H200();
  auto best = ReadFile(kTemplates / "examples" / "cuda" / "kernel.cu");
  ASSERT_TRUE(best);
  in.previous = PreviousCandidate{.file_name = "kernel.cu",
                                  .source = *best,
                                  .status = "correct",
                                  .diagnostics = "",
                                  .timing = "median 12.4 us; PyTorch eager 15.0 us (1.21x)"};
  in.recommendations = {
      Recommendation{.bottleneck = "DRAM bandwidth",
                     .evidence = "87% of peak DRAM throughput; 9.8 us of 12.4 us in add_vec4",
                     .changes = {"process two float4 per thread to halve the loop overhead",
                                 "launch 4 blocks per SM (528) instead of a grid over n"},
                     .expected_gain = "about 1.1x: the kernel is already near the bandwidth"},
      Recommendation{.bottleneck = "launch latency",
                     .evidence = "",
                     .changes = {"skip the scalar tail kernel when n % 4 == 0"},
                     .expected_gain = ""}};
  auto prompt = PromptRenderer(kTemplates).RenderGeneration(in);
  ASSERT_TRUE(prompt) << prompt.error().ToString();
  EXPECT_NE(prompt->user.find("SM count: 132"), std::string::npos);
  EXPECT_NE(prompt->user.find("Bottleneck: DRAM bandwidth"), std::string::npos);
  EXPECT_NE(prompt->system.find("tf32 matrix math is allowed"), std::string::npos);
  ExpectGolden("generation_cuda_optimization", *prompt);
}

TEST(PromptRender, CrossPlatformTranslation) {
  GenerationPromptInputs in;
  in.task = ReluTask();
  in.target = TargetFor(ProgrammingModel::kTriton);
  auto cuda = ReadFile(kTemplates / "examples" / "cuda" / "kernel.cu");
  ASSERT_TRUE(cuda);
  in.translate_from = TranslationSource{
      .target = TargetFor(ProgrammingModel::kCuda), .file_name = "kernel.cu", .source = *cuda};
  auto prompt = PromptRenderer(kTemplates).RenderGeneration(in);
  ASSERT_TRUE(prompt) << prompt.error().ToString();
  EXPECT_NE(prompt->user.find("## A working implementation for nvidia-h200/cuda"),
            std::string::npos);
  EXPECT_NE(prompt->user.find("```cuda title=kernel.cu"), std::string::npos);
  ExpectGolden("generation_triton_translation", *prompt);
}

class PromptRenderErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(KFORGE_BINARY_DIR) / "prompt_render_test" /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy(kTemplates, dir_, fs::copy_options::recursive);
  }
  fs::path dir_;
};

TEST_F(PromptRenderErrors, MissingTemplateNamesThePath) {
  fs::remove(dir_ / "generation" / "user.mustache");
  GenerationPromptInputs in;
  in.task = ReluTask();
  in.target = TargetFor(ProgrammingModel::kCuda);
  auto prompt = PromptRenderer(dir_).RenderGeneration(in);
  ASSERT_FALSE(prompt);
  EXPECT_EQ(prompt.error().code, ErrorCode::kNotFound);
  EXPECT_NE(prompt.error().message.find((dir_ / "generation" / "user.mustache").string()),
            std::string::npos)
      << prompt.error().message;
}

TEST_F(PromptRenderErrors, MissingExampleNamesThePath) {
  fs::remove(dir_ / "examples" / "hip" / "kernel.hip");
  GenerationPromptInputs in;
  in.task = ReluTask();
  in.target = TargetFor(ProgrammingModel::kHip);
  auto prompt = PromptRenderer(dir_).RenderGeneration(in);
  ASSERT_FALSE(prompt);
  EXPECT_NE(prompt.error().message.find((dir_ / "examples" / "hip" / "kernel.hip").string()),
            std::string::npos)
      << prompt.error().message;
}

TEST_F(PromptRenderErrors, MalformedTemplateNamesThePath) {
  ASSERT_TRUE(WriteFile(dir_ / "analysis" / "system.mustache", "{{#unclosed}} text\n"));
  AnalysisPromptInputs in;
  in.task = ReluTask();
  in.target = TargetFor(ProgrammingModel::kCpp);
  auto prompt = PromptRenderer(dir_).RenderAnalysis(in);
  ASSERT_FALSE(prompt);
  EXPECT_EQ(prompt.error().code, ErrorCode::kParse);
  EXPECT_NE(prompt.error().message.find((dir_ / "analysis" / "system.mustache").string()),
            std::string::npos)
      << prompt.error().message;
}

TEST(PromptRender, ValuesAreNotHtmlEscaped) {
  GenerationPromptInputs in;
  in.task = ReluTask();
  in.task.source += "# a < b && c > d \"quoted\"\n";
  in.target = TargetFor(ProgrammingModel::kCpp);
  auto prompt = PromptRenderer(kTemplates).RenderGeneration(in);
  ASSERT_TRUE(prompt) << prompt.error().ToString();
  EXPECT_NE(prompt->user.find("# a < b && c > d \"quoted\""), std::string::npos);
  EXPECT_EQ(prompt->user.find("&amp;"), std::string::npos);
}

TEST(PromptRender, DeviceFactsLeaveOutUnknownFields) {
  DeviceFacts d;
  d.name = "AMD Instinct MI300X";
  d.compute_units = 304;
  d.compute_unit_name = "CU";
  d.memory_bandwidth_gbs = 5300;
  auto lines = DescribeDeviceFacts(d);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1].label, "CU count");
  EXPECT_EQ(lines[1].value, "304");
  EXPECT_EQ(lines[2].value, "5300 GB/s");
}

}  // namespace
}  // namespace kforge
