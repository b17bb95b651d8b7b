// Profiling a candidate for real, beside the evaluator: which tool a target's backend uses, the
// tool's command lines, and one capture (the profile pass, eval/profile_pass.h, then the tool's
// exports, parsed by the profile module: profile/capture_files.h).
//
// Tools: `torch` (torch.profiler in the runner: any target with a torch device), `opencl` (event
// profiling in the runner: OpenCL candidates), `ncu` (Nsight Compute wrapping the runner, always
// with --clock-control none; its report exported as raw-page and details-page CSV), `nsys`
// (Nsight Systems wrapping the runner; `nsys stats --report cuda_gpu_kern_sum`).
#ifndef KFORGE_EVAL_PROFILE_CAPTURE_H_
#define KFORGE_EVAL_PROFILE_CAPTURE_H_

#include <filesystem>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/eval/compile_service.h"
#include "kforge/eval/evaluator.h"
#include "kforge/profile/profile.h"
#include "kforge/prompt/analysis_profile.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge {

// The executable of a vendor tool ("ncu", "nsys"): $PATH, then /usr/local/cuda/bin; nullopt when
// absent.
std::optional<std::filesystem::path> FindProfilerTool(std::string_view name);

// The tool `kforge profile` uses by default on `backend`: the first of its traits' profilers that
// can run here (ncu on NVIDIA CUDA targets when it is installed, opencl for OpenCL, else torch).
profile::Tool DefaultProfileTool(const Backend& backend);

// Whether `tool` can profile candidates of `backend` here (tool installed, right kind of target);
// the error says why not and what to do.
Status CheckProfileTool(profile::Tool tool, const Backend& backend);

// Nsight Compute's command line around the runner: one capture range per profiled call
// (--profile-from-start off), --clock-control none, all child processes, the section set
// $KFORGE_NCU_SET (default full), at most $KFORGE_NCU_LAUNCH_COUNT kernels (default 200), a report
// in `out`.
std::vector<std::string> NcuCommand(const std::filesystem::path& ncu,
                                    const std::filesystem::path& out);

struct ProfileCapture {
  profile::Tool tool = profile::Tool::kTorch;
  std::string status;  // the profiled run's status; "ok" when it ran
  std::string diagnostics;
  std::string log;                           // the tool's and the runner's messages (tail)
  std::vector<std::filesystem::path> files;  // raw outputs (ncu.raw.csv, torch.json, ...)
  std::optional<profile::Profile> profile;   // parsed, when the run succeeded
};

struct ProfileCaptureOptions {
  profile::Tool tool = profile::Tool::kTorch;
  int calls = 3;  // ncu and nsys: 1 (each call multiplies their replay time)
  bool reference = false;
  std::filesystem::path output_dir;  // raw outputs are kept here
};

// Runs the profile pass and the tool's exports; parses the result. Errors: a tool that cannot run
// here, KForge's own failures; a candidate that fails is a ProfileCapture with its status.
Result<ProfileCapture> CaptureProfile(CompileService& compiler, const EvalOptions& eval_options,
                                      const Task& task, const Backend& backend,
                                      const std::filesystem::path& candidate,
                                      const ProfileCaptureOptions& options,
                                      std::stop_token stop = {});

// For the synthesis loop (synth::SynthesisSetup::profile_summary): a function that writes a
// candidate's source under `work_dir`, captures it with DefaultProfileTool(backend) and returns the
// tool's name, the reducer's summary and the tool's main export. Empty (no profile pass) where
// the default tool gives no kernel-level signal: CPU targets other than OpenCL. Borrows
// `compiler` and `backend`: they must outlive it.
std::function<Result<AnalysisProfile>(const std::string&, const std::string&)> MakeSummaryProfiler(
    CompileService& compiler, EvalOptions eval_options, Task task, const Backend& backend,
    std::filesystem::path work_dir);

}  // namespace kforge

#endif  // KFORGE_EVAL_PROFILE_CAPTURE_H_
