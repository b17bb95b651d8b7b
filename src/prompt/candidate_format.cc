#include "kforge/prompt/candidate_format.h"

#include <cassert>

namespace kforge {
namespace {

constexpr const char* kNativeRequirement =
    "extern \"C\" int kforge_forward(const kforge_tensor* inputs, int num_inputs, "
    "kforge_tensor* outputs, int num_outputs, void* stream)";
constexpr const char* kModuleRequirement = "class ModelNew(nn.Module) with a forward method";
constexpr const char* kOpenClRequirement =
    "SOURCE (the OpenCL C program, a string) and launch(cl, queue, program, inputs, outputs)";

std::vector<CandidateFormat> MakeFormats() {
  const std::vector<std::string> python = {"python", "py", "python3"};
  const std::vector<std::string> cxx = {"cpp", "c++", "cxx", "cc", "c"};
  auto with = [](std::vector<std::string> base, std::initializer_list<const char*> more) {
    for (const char* m : more) base.emplace_back(m);
    return base;
  };
  std::vector<CandidateFormat> formats;
  formats.push_back({ProgrammingModel::kCuda,
                     CandidateKind::kNative,
                     "kernel.cu",
                     "cuda",
                     {".cu"},
                     with(cxx, {"cuda", "cu"}),
                     kNativeRequirement});
  formats.push_back({ProgrammingModel::kTriton,
                     CandidateKind::kModule,
                     "kernel.py",
                     "python",
                     {".py"},
                     python,
                     kModuleRequirement});
  formats.push_back({ProgrammingModel::kCute,
                     CandidateKind::kModule,
                     "kernel.py",
                     "python",
                     {".py"},
                     python,
                     kModuleRequirement});
  formats.push_back({ProgrammingModel::kHip,
                     CandidateKind::kNative,
                     "kernel.hip",
                     "cpp",
                     {".hip"},
                     with(cxx, {"hip"}),
                     kNativeRequirement});
  formats.push_back({ProgrammingModel::kSycl,
                     CandidateKind::kNative,
                     "kernel.cpp",
                     "cpp",
                     {".cpp", ".sycl"},
                     with(cxx, {"sycl"}),
                     kNativeRequirement});
  formats.push_back({ProgrammingModel::kMetal,
                     CandidateKind::kModule,
                     "kernel.py",
                     "python",
                     {".py"},
                     python,
                     kModuleRequirement});
  formats.push_back({ProgrammingModel::kOpenCl,
                     CandidateKind::kOpenCl,
                     "kernel.py",
                     "python",
                     {".py"},
                     python,
                     kOpenClRequirement});
  formats.push_back({ProgrammingModel::kCpp,
                     CandidateKind::kNative,
                     "kernel.cpp",
                     "cpp",
                     {".cpp", ".cc"},
                     cxx,
                     kNativeRequirement});
  return formats;
}

}  // namespace

const CandidateFormat& CandidateFormatOf(ProgrammingModel model) {
  static const std::vector<CandidateFormat> formats = MakeFormats();
  for (const CandidateFormat& f : formats) {
    if (f.model == model) return f;
  }
  assert(false && "every ProgrammingModel has a candidate format");
  return formats.front();
}

}  // namespace kforge
