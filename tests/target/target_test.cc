#include "kforge/target/target.h"

#include <gtest/gtest.h>

#include <set>

#include "kforge/target/backend.h"

namespace kforge {
namespace {

TEST(TargetTest, RoundTripsEveryTargetString) {
  for (const char* text : {"nvidia-h200/cuda", "nvidia/triton", "nvidia/cute", "nvidia/opencl",
                           "amd-mi300x/hip", "amd/triton", "intel-b580/sycl", "intel/triton",
                           "apple-m4/metal", "cpu/opencl", "cpu/cpp", "nvidia-sm90/cuda",
                           "amd-gfx90a/hip"}) {
    auto t = Target::Parse(text);
    ASSERT_TRUE(t) << text << ": " << t.error().message;
    EXPECT_EQ(t->ToString(), text);
    EXPECT_EQ(*Target::Parse(t->ToString()), *t);
  }
}

TEST(TargetTest, ArchitectureNumbersAreNumbers) {
  EXPECT_EQ(Target::Parse("nvidia-h200/cuda")->arch, 90);
  EXPECT_EQ(Target::Parse("nvidia-sm100/cuda")->arch, 100);
  EXPECT_EQ(Target::Parse("amd-mi300x/hip")->arch, 0x942);
  EXPECT_EQ(Target::Parse("amd-gfx90a/hip")->arch, 0x90a);
  EXPECT_EQ(Target::Parse("nvidia/cuda")->arch, 0);
}

TEST(TargetTest, BadInputNamesTheProblem) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {Case{"cuda", "vendor[-device]/model"}, Case{"nvdia/cuda", "unknown vendor"},
                        Case{"nvidia/cudaa", "unknown programming model"},
                        Case{"cpu/cuda", "does not support"}, Case{"apple/hip", "does not support"},
                        Case{"nvidia-H200/cuda", "lower-case"}, Case{"cpu-x86/cpp", "no device"},
                        Case{"nvidia/cuda/x", "vendor[-device]/model"}}) {
    auto t = Target::Parse(c.text);
    ASSERT_FALSE(t) << c.text;
    EXPECT_EQ(t.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(t.error().message.find(c.says), std::string::npos) << t.error().message;
    EXPECT_NE(t.error().message.find(c.text), std::string::npos) << t.error().message;
  }
}

TEST(TargetTest, EveryProgrammingModelHasABackend) {
  std::set<ProgrammingModel> seen;
  for (const Target& t : AllTargets()) {
    auto backend = NewBackend(t);
    ASSERT_NE(backend, nullptr) << t.ToString();
    EXPECT_EQ(backend->target(), t);
    EXPECT_FALSE(backend->CandidateExtensions().empty());
    seen.insert(t.model);
  }
  EXPECT_EQ(seen.size(), AllProgrammingModels().size());
}

TEST(BackendTest, CandidateKindFollowsTheFileEnding) {
  auto cuda = NewBackend(*Target::Parse("nvidia/cuda"));
  EXPECT_EQ(*cuda->KindOf("k.cu"), CandidateKind::kNative);
  EXPECT_EQ(*cuda->KindOf("model_new.py"), CandidateKind::kModule);  // KernelBench compatibility
  EXPECT_FALSE(cuda->KindOf("k.cl"));
  auto opencl = NewBackend(*Target::Parse("cpu/opencl"));
  EXPECT_EQ(*opencl->KindOf("k.cl.py"), CandidateKind::kOpenCl);
  auto triton = NewBackend(*Target::Parse("nvidia/triton"));
  EXPECT_EQ(*triton->KindOf("k.py"), CandidateKind::kModule);
  EXPECT_FALSE(triton->KindOf("k.cu"));
}

TEST(BackendTest, NativeCompileCommandsTargetTheArchitecture) {
  auto cuda = NewBackend(*Target::Parse("nvidia-h200/cuda"));
  auto cmd = cuda->NativeCompile("a.cu", "a.so", "/abi");
  if (!cmd) GTEST_SKIP() << cmd.error().message;
  std::string joined;
  for (const auto& a : cmd->argv) joined += a + " ";
  EXPECT_NE(joined.find("sm_90a"), std::string::npos) << joined;
  EXPECT_NE(joined.find("-shared"), std::string::npos);
  auto hip = NewBackend(*Target::Parse("amd-mi300x/hip"));
  if (auto h = hip->NativeCompile("a.hip", "a.so", "/abi"); h) {
    std::string all;
    for (const auto& a : h->argv) all += a + " ";
    EXPECT_NE(all.find("--offload-arch=gfx942"), std::string::npos) << all;
  }
}

}  // namespace
}  // namespace kforge
