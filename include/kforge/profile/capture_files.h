// The raw files one profile capture leaves in its folder (ncu.raw.csv and ncu.details.csv,
// torch.json, opencl.json, nsys.cuda_gpu_kern_sum.csv), parsed into a Profile. The capture itself
// runs beside the evaluator (eval/profile_capture.h); this module only parses and reduces.
#ifndef KFORGE_PROFILE_CAPTURE_FILES_H_
#define KFORGE_PROFILE_CAPTURE_FILES_H_

#include <filesystem>
#include <string>

#include "kforge/core/error.h"
#include "kforge/profile/profile.h"

namespace kforge::profile {

// Parses the raw files of a capture folder for `tool`. Errors: a file missing or malformed, or a
// tool whose captures the runner does not make (the message names it).
Result<Profile> ParseCaptureFiles(Tool tool, const std::filesystem::path& dir);

// The name of the tool's main export in a capture folder ("ncu.raw.csv", "torch.json",
// "opencl.json", "nsys.cuda_gpu_kern_sum.csv"); empty for tools that capture nothing here.
std::string MainExportName(Tool tool);

}  // namespace kforge::profile

#endif  // KFORGE_PROFILE_CAPTURE_FILES_H_
