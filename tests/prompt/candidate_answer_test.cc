// Parsing of generation answers: realistic answers with prose, several blocks, named files,
// missing entry points and cut-off fences.
#include "kforge/prompt/candidate_answer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "kforge/core/files.h"
#include "kforge/target/backend.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

const char* kCudaFile = R"(#include <cuda_runtime.h>
#include "kforge_kernel.h"

__global__ void relu_kernel(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.0f);
}

extern "C" int kforge_forward(const kforge_tensor* inputs, int num_inputs,
                              kforge_tensor* outputs, int num_outputs, void* stream) {
  long n = kforge_numel(&inputs[0]);
  relu_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
      (const float*)inputs[0].data, (float*)outputs[0].data, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
)";

const char* kTritonFile = R"(import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
)";

const char* kOpenClFile = R"(import numpy as np

SOURCE = r"""
__kernel void relu(__global const float* x, __global float* y, const long n) {
  const long i = get_global_id(0);
  if (i < n) y[i] = fmax(x[i], 0.0f);
}
"""


def launch(cl, queue, program, inputs, outputs):
    n = outputs[0].numel
    program.relu(queue, ((n + 255) // 256 * 256,), (256,), inputs[0].buf, outputs[0].buf,
                 np.int64(n))
)";

std::string Fenced(const std::string& info, const std::string& body) {
  return "```" + info + "\n" + body + "```\n";
}

TEST(PromptParseCandidate, ProseAroundOneCudaBlock) {
  std::string answer =
      "The ReLU is memory bound, so I use a simple one-thread-per-element "
      "kernel.\n\n" +
      Fenced("cuda", kCudaFile) +
      "\nThis launches on the harness's stream and checks for errors.\n";
  auto parsed = ParseCandidateAnswer(answer, ProgrammingModel::kCuda);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->source, kCudaFile);
  EXPECT_EQ(parsed->file_name, "kernel.cu");
  EXPECT_EQ(parsed->kind, CandidateKind::kNative);
  EXPECT_EQ(parsed->block_count, 1);
  EXPECT_NE(parsed->prose.find("memory bound"), std::string::npos);
  EXPECT_NE(parsed->prose.find("harness's stream"), std::string::npos);
  EXPECT_EQ(parsed->prose.find("__global__"), std::string::npos);
}

TEST(PromptParseCandidate, FenceWithoutLanguageTag) {
  auto parsed =
      ParseCandidateAnswer("Here it is:\n" + Fenced("", kCudaFile), ProgrammingModel::kCuda);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->source, kCudaFile);
}

TEST(PromptParseCandidate, TildeFencesAndWindowsLineEndings) {
  std::string body = kCudaFile;
  std::string crlf;
  for (char c : "Answer:\n~~~cpp\n" + body + "~~~\n") {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  auto parsed = ParseCandidateAnswer(crlf, ProgrammingModel::kCuda);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->source, kCudaFile);
}

TEST(PromptParseCandidate, PicksTheFullFileAmongSeveralBlocks) {
  // A shell command, then the full file, then a fragment that repeats the entry point.
  std::string answer =
      "Compile it with:\n" + Fenced("bash", "nvcc -O3 -shared -o k.so kernel.cu\n") +
      "The file:\n" + Fenced("cuda", kCudaFile) + "The key change is in the entry point:\n" +
      Fenced("cuda",
             "extern \"C\" int kforge_forward(const kforge_tensor* inputs, int num_inputs,\n"
             "                              kforge_tensor* outputs, int num_outputs, void* s) {\n"
             "  return 0;\n}\n");
  auto parsed = ParseCandidateAnswer(answer, ProgrammingModel::kCuda);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->source, kCudaFile);
  EXPECT_EQ(parsed->block_count, 3);
}

TEST(PromptParseCandidate, LaterFullVersionWinsOverEarlierOne) {
  std::string fixed = kCudaFile;
  fixed.replace(fixed.find("fmaxf"), 5, "fmaxf ");
  std::string answer = "Your previous kernel:\n" + Fenced("cuda", kCudaFile) + "Fixed version:\n" +
                       Fenced("cuda", fixed);
  auto parsed = ParseCandidateAnswer(answer, ProgrammingModel::kCuda);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->source, fixed);
}

TEST(PromptParseCandidate, NamedBlockOnTheFenceWins) {
  std::string other = std::string("// scratch\n") + kCudaFile;
  std::string answer =
      Fenced("cuda title=kernel.cu", kCudaFile) + "An alternative:\n" + Fenced("cuda", other);
  auto parsed = ParseCandidateAnswer(answer, ProgrammingModel::kCuda);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->source, kCudaFile);
}

TEST(PromptParseCandidate, NamedByFileHeaderLine) {
  std::string named = std::string("// file: kernel.cu\n") + kCudaFile;
  std::string answer = Fenced("cuda", named) + "Or, for comparison:\n" +
                       Fenced("cuda", std::string("// baseline\n") + kCudaFile);
  auto parsed = ParseCandidateAnswer(answer, ProgrammingModel::kCuda);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->source, named);
}

TEST(PromptParseCandidate, NamedByTheLineAboveAndHeaderIgnored) {
  std::string answer = "**kernel.h**\n" + Fenced("cpp", "#pragma once\nint helper();\n") +
                       "**kernel.cu**\n" + Fenced("cpp", kCudaFile);
  auto parsed = ParseCandidateAnswer(answer, ProgrammingModel::kCuda);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->source, kCudaFile);
}

TEST(PromptParseCandidate, FileNameAsTheOnlyInfoWord) {
  auto parsed = ParseCandidateAnswer(Fenced("kernel.cu", kCudaFile), ProgrammingModel::kCuda);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->source, kCudaFile);
}

TEST(PromptParseCandidate, MissingEntryPointIsFeedback) {
  std::string body = kCudaFile;
  body = body.substr(0, body.find("extern \"C\""));
  auto parsed = ParseCandidateAnswer("Here:\n" + Fenced("cuda", body), ProgrammingModel::kCuda);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code, ErrorCode::kParse);
  const std::string& m = parsed.error().message;
  EXPECT_NE(m.find("does not define the entry point kforge_forward"), std::string::npos) << m;
  EXPECT_NE(m.find("```cuda title=kernel.cu"), std::string::npos) << m;
  EXPECT_NE(m.find("extern \"C\" int kforge_forward(const kforge_tensor* inputs"),
            std::string::npos)
      << m;
}

TEST(PromptParseCandidate, EntryPointWithoutExternCIsFeedback) {
  std::string body = kCudaFile;
  body.erase(body.find("extern \"C\" "), 11);
  auto parsed = ParseCandidateAnswer(Fenced("cuda", body), ProgrammingModel::kCuda);
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("without extern \"C\" linkage"), std::string::npos)
      << parsed.error().message;
}

TEST(PromptParseCandidate, DeclarationOnlyAndCommentedOutDefinitionAreNotEnough) {
  std::string body =
      "#include \"kforge_kernel.h\"\n"
      "extern \"C\" int kforge_forward(const kforge_tensor*, int, kforge_tensor*, int, void*);\n"
      "// extern \"C\" int kforge_forward(const kforge_tensor* i, int n, kforge_tensor* o,\n"
      "//                                  int m, void* s) { return 0; }\n";
  auto parsed = ParseCandidateAnswer(Fenced("cpp", body), ProgrammingModel::kCpp);
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("kforge_forward"), std::string::npos);
}

TEST(PromptParseCandidate, ExternCBlockCounts) {
  std::string body =
      "#include <sycl/sycl.hpp>\n#include \"kforge_kernel.h\"\n"
      "extern \"C\" {\n"
      "int kforge_forward(const kforge_tensor* inputs, int num_inputs, kforge_tensor* outputs,\n"
      "                   int num_outputs, void* stream) noexcept {\n"
      "  return 0;\n}\n}\n";
  auto parsed = ParseCandidateAnswer(Fenced("cpp", body), ProgrammingModel::kSycl);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->file_name, "kernel.cpp");
}

TEST(PromptParseCandidate, UnterminatedFenceIsFeedback) {
  std::string body = kCudaFile;
  std::string answer = "Here is the kernel:\n```cuda\n" + body;  // cut off: no closing fence
  auto parsed = ParseCandidateAnswer(answer, ProgrammingModel::kCuda);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code, ErrorCode::kParse);
  EXPECT_NE(parsed.error().message.find("is not closed"), std::string::npos)
      << parsed.error().message;
}

TEST(PromptParseCandidate, TruncatedSecondVersionIsRefused) {
  std::string answer = Fenced("cuda", kCudaFile) + "Even faster:\n```cuda\n#include <cuda";
  auto parsed = ParseCandidateAnswer(answer, ProgrammingModel::kCuda);
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("block 2 (```cuda) is not closed"), std::string::npos)
      << parsed.error().message;
}

TEST(PromptParseCandidate, WrongLanguageIsFeedback) {
  // A KernelBench-style load_inline module where a .cu file was asked for.
  auto parsed = ParseCandidateAnswer(Fenced("python", kTritonFile), ProgrammingModel::kCuda);
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("block 1 (```python) is not cuda code"), std::string::npos)
      << parsed.error().message;
}

TEST(PromptParseCandidate, TritonModule) {
  std::string answer = "I fuse everything into one kernel.\n" + Fenced("python", kTritonFile);
  auto parsed = ParseCandidateAnswer(answer, ProgrammingModel::kTriton);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->source, kTritonFile);
  EXPECT_EQ(parsed->file_name, "kernel.py");
  EXPECT_EQ(parsed->kind, CandidateKind::kModule);
}

TEST(PromptParseCandidate, ModuleWithoutModelNewIsFeedback) {
  std::string body = kTritonFile;
  body.replace(body.find("class ModelNew"), 14, "class Model");
  auto parsed = ParseCandidateAnswer(Fenced("python", body), ProgrammingModel::kTriton);
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("does not define class ModelNew"), std::string::npos)
      << parsed.error().message;
  EXPECT_NE(parsed.error().message.find("```python title=kernel.py"), std::string::npos);
}

TEST(PromptParseCandidate, NestedModelNewDoesNotCount) {
  std::string body =
      "import torch\n\ndef make():\n    class ModelNew(torch.nn.Module):\n"
      "        pass\n    return ModelNew\n";
  auto parsed = ParseCandidateAnswer(Fenced("python", body), ProgrammingModel::kCute);
  ASSERT_FALSE(parsed);
}

TEST(PromptParseCandidate, OpenClSourceAndLaunch) {
  auto parsed = ParseCandidateAnswer("```python\n" + std::string(kOpenClFile) + "```",
                                     ProgrammingModel::kOpenCl);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->source, kOpenClFile);
  EXPECT_EQ(parsed->kind, CandidateKind::kOpenCl);
}

TEST(PromptParseCandidate, OpenClWithoutLaunchIsFeedback) {
  std::string body = kOpenClFile;
  body = body.substr(0, body.find("def launch"));
  auto parsed = ParseCandidateAnswer(Fenced("python", body), ProgrammingModel::kOpenCl);
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("does not define launch(cl, queue, program, inputs, "
                                        "outputs)"),
            std::string::npos)
      << parsed.error().message;
}

TEST(PromptParseCandidate, OpenClKernelOnlyIsFeedback) {
  // The model answered with the OpenCL C kernel alone, in a ```c block.
  auto parsed = ParseCandidateAnswer(
      Fenced("c", "__kernel void relu(__global const float* x, __global float* y) {}\n"),
      ProgrammingModel::kOpenCl);
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("is not python code"), std::string::npos)
      << parsed.error().message;
}

TEST(PromptParseCandidate, BareCodeWithoutFences) {
  auto parsed = ParseCandidateAnswer(std::string("\n") + kCudaFile, ProgrammingModel::kCuda);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->source, kCudaFile);
  EXPECT_EQ(parsed->block_count, 0);
}

TEST(PromptParseCandidate, ProseWithoutCodeIsFeedback) {
  auto parsed = ParseCandidateAnswer(
      "I would use a grid-stride loop with float4 loads and launch it on the given stream.",
      ProgrammingModel::kCuda);
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("no fenced code block"), std::string::npos);
}

TEST(PromptParseCandidate, EmptyAnswerIsFeedback) {
  auto parsed = ParseCandidateAnswer("  \n", ProgrammingModel::kMetal);
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("the answer was empty"), std::string::npos);
}

// Every shipped single-shot example is an answer the parser accepts for its own model, in the
// exact form the prompt asks for.
TEST(PromptParseCandidate, EveryTemplateExampleParses) {
  for (ProgrammingModel model : AllProgrammingModels()) {
    const CandidateFormat& format = CandidateFormatOf(model);
    const fs::path path = fs::path(KFORGE_SOURCE_HOME) / "templates" / "examples" /
                          std::string(ProgrammingModelName(model)) / format.file_name;
    auto source = ReadFile(path);
    ASSERT_TRUE(source) << path;
    auto parsed = ParseCandidateAnswer(
        "Here is my kernel.\n\n" +
            Fenced(format.fence_language + " title=" + format.file_name, *source),
        model);
    ASSERT_TRUE(parsed) << path << ": " << parsed.error().message;
    EXPECT_EQ(parsed->source, *source) << path;
  }
}

}  // namespace
}  // namespace kforge
