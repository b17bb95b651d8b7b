#include "formats.h"

#include <utility>

namespace kforge::backends {
namespace {

constexpr const char* kNativeRequirement =
    "extern \"C\" int kforge_forward(const kforge_tensor* inputs, int num_inputs, "
    "kforge_tensor* outputs, int num_outputs, void* stream)";
constexpr const char* kModuleRequirement = "class ModelNew(nn.Module) with a forward method";
constexpr const char* kOpenClRequirement =
    "SOURCE (the OpenCL C program, a string) and launch(cl, queue, program, inputs, outputs)";

std::vector<std::string> PythonFences() { return {"python", "py", "python3"}; }

}  // namespace

CandidateFormat NativeFormat(ProgrammingModel model, std::string file_name,
                             std::string fence_language, std::vector<std::string> extensions,
                             const std::vector<std::string>& more_fences) {
  std::vector<std::string> fences = {"cpp", "c++", "cxx", "cc", "c"};
  fences.insert(fences.end(), more_fences.begin(), more_fences.end());
  return CandidateFormat{.model = model,
                         .kind = CandidateKind::kNative,
                         .file_name = std::move(file_name),
                         .fence_language = std::move(fence_language),
                         .extensions = std::move(extensions),
                         .fence_languages = std::move(fences),
                         .requirement = kNativeRequirement};
}

CandidateFormat ModuleFormat(ProgrammingModel model) {
  return CandidateFormat{.model = model,
                         .kind = CandidateKind::kModule,
                         .file_name = "kernel.py",
                         .fence_language = "python",
                         .extensions = {".py"},
                         .fence_languages = PythonFences(),
                         .requirement = kModuleRequirement};
}

CandidateFormat OpenClFormat(ProgrammingModel model) {
  return CandidateFormat{.model = model,
                         .kind = CandidateKind::kOpenCl,
                         .file_name = "kernel.py",
                         .fence_language = "python",
                         .extensions = {".py"},
                         .fence_languages = PythonFences(),
                         .requirement = kOpenClRequirement};
}

std::vector<std::string> NvidiaProfilers() { return {"ncu", "torch", "nsys"}; }

}  // namespace kforge::backends
