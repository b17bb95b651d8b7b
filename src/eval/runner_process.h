// Starting runner processes (runner/PROTOCOL.md): the runner package installed where every user
// can read it, an allow-listed environment, the sandbox, and warm starts. Internal to src/eval.
#ifndef KFORGE_SRC_EVAL_RUNNER_PROCESS_H_
#define KFORGE_SRC_EVAL_RUNNER_PROCESS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/core/sandbox.h"
#include "kforge/core/subprocess.h"

namespace kforge {

using SteadyClock = std::chrono::steady_clock;

// Copies runner/kforge_runner to a folder under `work_root` that every user can read (KForge's own
// tree may sit in a private home), keyed by content so that evaluations share one copy. Returns the
// folder to put on PYTHONPATH.
Result<std::filesystem::path> InstallRunner(const std::filesystem::path& work_root);

// The environment of a native harness (runner/HARNESS.md): the runner's allow-list of variables
// (paths, device selection, OpenCL and OpenMP settings; never API keys), HOME and TMPDIR at its
// scratch folder.
std::vector<std::string> HarnessEnvironment(const std::filesystem::path& scratch);

// Folders of $KFORGE_RUNNER_PYTHONPATH (extra site packages for the runner, e.g. carried wheels):
// they go on the runner's PYTHONPATH and are shown read-only inside the sandbox.
std::vector<std::filesystem::path> ExtraRunnerPythonPath();

// The installation an interpreter belongs to: the folder above its bin/ ("/tmp/venv" for
// "/tmp/venv/bin/python"), else its own folder. Shown read-only inside the sandbox.
std::filesystem::path InterpreterHome(const std::filesystem::path& python);

// How one runner process is started.
struct RunnerLaunch {
  std::filesystem::path job_file;
  std::string job_json;  // written before the start; empty: published later (warm start)
  std::string preload;   // warm start: the device to initialise while waiting for the job
  std::shared_ptr<std::atomic<std::int64_t>> deadline;  // movable deadline (warm start)
  std::chrono::seconds timeout{0};
  std::vector<std::string> wrapper;  // put before the runner's command line (a profiler)
  std::shared_ptr<const Sandbox> sandbox;  // the sandbox it starts in; null: DefaultSandbox()
  std::shared_ptr<FolderQuota> scratch_quota;  // null: the scratch folder has no quota
  std::shared_ptr<std::atomic<pid_t>> pid;     // the process's pid while it runs (may be null)
};

struct RunnerRun {
  // process.result_text is the runner's document with its seal checked and removed; when the
  // channel carried anything else, result_text is empty and channel_problem says what was wrong.
  ProcessResult process;
  std::string channel_problem;
  double seconds = 0;  // from the start of the process
};

// One runner phase, sandboxed under `policy`: job file in, result document out through fd 3.
// Each process gets a fresh random seal on its stdin (read and closed by the runner before any
// candidate code loads); only a single document carrying it is accepted (UnsealResult).
Result<RunnerRun> RunRunner(const RunnerLaunch& launch, const std::filesystem::path& runner_dir,
                            const std::filesystem::path& scratch, const SandboxPolicy& policy,
                            const ResourceLimits& limits, std::stop_token stop);

// steady_clock time as the nanosecond count ProcessSpec::deadline holds.
std::int64_t SteadyNanos(SteadyClock::time_point t);

}  // namespace kforge

#endif  // KFORGE_SRC_EVAL_RUNNER_PROCESS_H_
