// The candidate formats and profiler lists that several backends share. Internal to src/target.
#ifndef KFORGE_SRC_TARGET_BACKENDS_FORMATS_H_
#define KFORGE_SRC_TARGET_BACKENDS_FORMATS_H_

#include <string>
#include <vector>

#include "kforge/target/backend.h"

namespace kforge::backends {

// A native candidate: one C-like file exporting kforge_forward (the kernel ABI). `more_fences`
// are the model's own fence tags beside the C/C++ ones.
CandidateFormat NativeFormat(ProgrammingModel model, std::string file_name,
                             std::string fence_language, std::vector<std::string> extensions,
                             const std::vector<std::string>& more_fences);

// A module candidate: kernel.py with class ModelNew.
CandidateFormat ModuleFormat(ProgrammingModel model);

// An OpenCL candidate: kernel.py with SOURCE and launch().
CandidateFormat OpenClFormat(ProgrammingModel model);

// Profilers of candidates that run CUDA kernels on an NVIDIA GPU: Nsight Compute by default where
// installed, then torch.profiler, and Nsight Systems on request.
std::vector<std::string> NvidiaProfilers();

}  // namespace kforge::backends

#endif  // KFORGE_SRC_TARGET_BACKENDS_FORMATS_H_
