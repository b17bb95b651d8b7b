// The Python phases of `kforge e2e` seen from C++ (runner/kforge_runner/e2e, docs/e2e.md):
// profiling a model's workload into kernel sites and KernelBench tasks, and measuring the model
// with kernels put in. Each phase is one child process (`python3 -m kforge_runner.e2e`, the
// runner's Python) with a job file in and one JSON document out through fd 3; its results are
// parsed here into typed values, and the document is kept as text for the run directory.
//
// These phases run the user's model file and kernels that passed KForge's evaluation, like
// `python3 MODEL.py` would: they are not sandboxed (docs/e2e.md says why).
#ifndef KFORGE_E2E_PHASES_H_
#define KFORGE_E2E_PHASES_H_

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kforge/core/error.h"

namespace kforge::e2e {

// A group of leaf-module instances of one class with the same state shapes and call signature.
struct Site {
  std::string name;        // operator and task name, e.g. "GptOssExperts"
  std::string class_name;  // e.g. "gpt_oss_moe.py:GptOssExperts", "torch.nn.modules.linear.Linear"
  std::vector<std::string> instances;  // qualified module names
  int rank = 0;                        // 1 = most time
  double total_seconds = 0;            // per decode step, summed over the batch sizes
  std::map<int, double> share;         // batch size -> share of the decode step's time
  bool extractable = false;
  std::string reason;               // why not extractable (or not chosen), else empty
  bool selected = false;            // a task was written for it
  std::filesystem::path task_file;  // when selected
  std::string json;                 // the site's entry as the runner wrote it
};

struct OperatorTime {
  std::string name;
  double calls_per_step = 0;
  double self_cpu_seconds = 0;     // per decode step
  double self_device_seconds = 0;  // per decode step (0 on the CPU)
};

struct ProfileRequest {
  std::filesystem::path model_file;
  std::string config;
  std::string device;  // the runner's device: "cpu", "cuda", ...
  int seed = 0;
  int top = 3;                      // tasks for this many sites, by time ...
  std::vector<std::string> sites;   // ... unless sites are named (site or class names)
  std::filesystem::path tasks_dir;  // where the tasks are written
};

struct Profile {
  std::string implementation;  // which implementation of the model ran
  std::string policy;          // precision policy of the configuration
  std::vector<int> batch_sizes;
  int task_batch_size = 0;
  std::map<int, double> step_seconds;   // batch size -> median step time (instrumented pass)
  std::vector<OperatorTime> operators;  // at the task batch size, most time first
  std::vector<Site> sites;              // most time first
  std::string json;                     // the whole document
};

struct Configuration {
  std::string name;  // eager, compile, eager+kforge, compile+kforge
  bool available = false;
  std::string why;  // why not available
};

struct Equivalence {
  int batch_size = 0;
  std::string configuration;
  int steps = 0;
  bool within_tolerance = false;
  bool same_greedy_tokens = false;  // every step's greedy tokens equal (strict)
  // No token disagreement beyond near ties (the reference's two best logits within the
  // tolerance of each other); what Matches() requires with within_tolerance.
  bool tokens_agree = false;
  int token_disagreements = 0;
  int near_tie_disagreements = 0;
  // Fed the reference's tokens at every step; false when the model file's session cannot take
  // tokens, and then one flipped near tie makes every later step differ.
  bool teacher_forced = false;
  double max_abs_error = 0;
  double max_rel_error = 0;
  double worst_fraction_out = 0;
};

struct StepTiming {
  int batch_size = 0;
  std::string configuration;
  double median_s = 0;
  double p10_s = 0;
  double p90_s = 0;
  double tokens_per_s = 0;
  int samples = 0;
  // torch._dynamo hit its recompile limit while this configuration ran (so far): frames past it
  // ran eagerly, the `compile` figure is partly eager.
  bool recompile_limit_hit = false;
};

struct KernelTiming {
  std::string site;
  int batch_size = 0;
  double original_median_s = 0;
  double kforge_median_s = 0;
  double speedup = 0;
  // Per call when calls are issued back to back and synchronised once: the host side (dispatch,
  // launches) counts as it does in a launch-bound decode step. 0 when not measured.
  double original_back_to_back_s = 0;
  double kforge_back_to_back_s = 0;
};

struct Coverage {
  std::string site;
  long kernel_calls = 0;
  long unrouted_calls = 0;  // eager calls the kernel was not made for, left to the original
                            // forward (not counted under torch.compile: runner's torch_op.py)
};

struct MeasureRequest {
  std::filesystem::path model_file;
  std::string config;
  std::string device;
  int seed = 0;
  std::vector<std::string> site_json;                    // the sites to patch (Site::json)
  std::map<std::string, std::filesystem::path> kernels;  // site name -> shared object
  std::string op_namespace;                              // torch.library namespace, new per run
  int warmup_steps = 3;
  int timed_steps = 20;
  int kernel_repeats = 50;
};

struct Measurement {
  std::string implementation;
  std::string policy;
  double tolerance = 0;  // atol = rtol
  std::string torch_version;
  // torch._dynamo's per-code-object recompile limit the compiled configurations ran under;
  // unset without torch.compile.
  std::optional<int> dynamo_recompile_limit;
  std::vector<Configuration> configurations;
  std::vector<Equivalence> equivalence;
  std::vector<StepTiming> timing;
  std::vector<KernelTiming> kernels;
  std::vector<Coverage> coverage;
  std::string json;
};

// Where a phase keeps its job, log and result, and how long it may take.
struct PhaseRun {
  std::filesystem::path dir;  // <run_dir>/e2e
  std::chrono::seconds timeout{1800};
};

// Errors: kInvalidArgument for the model file's or the request's faults (the message names the
// input and the fix), kInternal when the phase failed otherwise (its diagnostics and log path).
Result<Profile> ProfileModel(const ProfileRequest& request, const PhaseRun& run);
Result<Measurement> MeasureModel(const MeasureRequest& request, const PhaseRun& run);

}  // namespace kforge::e2e

#endif  // KFORGE_E2E_PHASES_H_
