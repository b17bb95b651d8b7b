// The compile commands of every native backend, checked where their compilers are absent: a fake
// Env says which compiler is installed where, so hipcc, icpx and acpp commands are checked in CI.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_env.h"
#include "kforge/target/backend.h"

namespace kforge {
namespace {

using testing::FakeEnv;
using Argv = std::vector<std::string>;

Argv CompileArgv(const char* target, const Env& env, const char* source) {
  auto backend = NewBackend(*Target::Parse(target), env);
  auto cmd = backend->NativeCompile(source, "/w/candidate.so", "/abi");
  EXPECT_TRUE(cmd) << target << ": " << (cmd ? "" : cmd.error().message);
  return cmd ? cmd->argv : Argv{};
}

TEST(CompileCommandsTest, HipccBuildsForTheTargetsArchitecture) {
  FakeEnv env;
  env.AddProgram("hipcc", "/opt/rocm/bin/hipcc");
  EXPECT_EQ(CompileArgv("amd-mi300x/hip", env, "/w/kernel.hip"),
            (Argv{"/opt/rocm/bin/hipcc", "-O3", "-std=c++17", "--offload-arch=gfx942", "-shared",
                  "-fPIC", "-I", "/abi", "-o", "/w/candidate.so", "-x", "hip", "/w/kernel.hip"}));
  // No device in the target: MI200 (gfx90a), which Debian's hipcc knows.
  EXPECT_EQ(CompileArgv("amd/hip", env, "/w/kernel.hip")[3], "--offload-arch=gfx90a");
}

TEST(CompileCommandsTest, SyclPrefersIcpxThenAcpp) {
  FakeEnv both;
  both.AddProgram("icpx", "/opt/intel/bin/icpx");
  both.AddProgram("acpp", "/opt/acpp/bin/acpp");
  EXPECT_EQ(CompileArgv("intel-b580/sycl", both, "/w/kernel.cpp"),
            (Argv{"/opt/intel/bin/icpx", "-fsycl", "-O3", "-std=c++17", "-shared", "-fPIC", "-I",
                  "/abi", "-o", "/w/candidate.so", "/w/kernel.cpp"}));
  FakeEnv acpp_only;
  acpp_only.AddProgram("acpp", "/opt/acpp/bin/acpp");
  EXPECT_EQ(CompileArgv("intel/sycl", acpp_only, "/w/kernel.cpp"),
            (Argv{"/opt/acpp/bin/acpp", "-O3", "-shared", "-fPIC", "-I", "/abi", "-o",
                  "/w/candidate.so", "/w/kernel.cpp"}));
}

TEST(CompileCommandsTest, NvccBuildsSm90aForHopperAndAsksTheGpuOtherwise) {
  FakeEnv env;
  env.AddFile("/usr/local/cuda/bin/nvcc");  // not on PATH: the toolkit's default place
  const Argv h200 = CompileArgv("nvidia-h200/cuda", env, "/w/kernel.cu");
  ASSERT_FALSE(h200.empty());
  EXPECT_EQ(h200[0], "/usr/local/cuda/bin/nvcc");
  EXPECT_EQ(h200[3], "-gencode=arch=compute_90a,code=sm_90a");
  // No architecture in the target: the local GPU's compute capability (nvidia-smi).
  env.AddProgram("nvidia-smi", "/usr/bin/nvidia-smi");
  env.SetOutput("/usr/bin/nvidia-smi", "8.9\n");
  EXPECT_EQ(CompileArgv("nvidia/cuda", env, "/w/kernel.cu")[3],
            "-gencode=arch=compute_89,code=sm_89");
}

TEST(CompileCommandsTest, CppUsesTheCompilerCxxNames) {
  FakeEnv env;
  env.AddProgram("g++", "/usr/bin/g++");
  env.AddProgram("clang++", "/usr/bin/clang++");
  EXPECT_EQ(CompileArgv("cpu/cpp", env, "/w/kernel.cpp")[0], "/usr/bin/g++");
  env.SetVar("CXX", "clang++");
  EXPECT_EQ(CompileArgv("cpu/cpp", env, "/w/kernel.cpp")[0], "/usr/bin/clang++");
}

TEST(CompileCommandsTest, AnAbsentCompilerSaysHowToGetIt) {
  FakeEnv empty;
  auto hip = NewBackend(*Target::Parse("amd/hip"), empty);
  auto cmd = hip->NativeCompile("/w/kernel.hip", "/w/candidate.so", "/abi");
  ASSERT_FALSE(cmd);
  EXPECT_EQ(cmd.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(cmd.error().message.find("install ROCm"), std::string::npos);
  EXPECT_FALSE(hip->Probe().toolchain);
}

}  // namespace
}  // namespace kforge
