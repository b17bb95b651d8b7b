#include "runner_process.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <random>

#include "file_modes.h"
#include "kforge/core/files.h"
#include "kforge/core/hash.h"
#include "kforge/target/probe.h"
#include "runner_protocol.h"

namespace kforge {
namespace {

using namespace file_modes;  // NOLINT(google-build-using-namespace): the modes read as words

namespace fs = std::filesystem;

// Variables a child may inherit: an allow-list, so that API keys and the like never reach
// candidates.
std::vector<std::string> PassedThrough() {
  std::vector<std::string> env;
  static const char* kPassThrough[] = {"PATH",
                                       "LD_LIBRARY_PATH",
                                       "LANG",
                                       "LC_ALL",
                                       "CUDA_HOME",
                                       "CUDA_PATH",
                                       "CUDA_VISIBLE_DEVICES",
                                       "NVIDIA_VISIBLE_DEVICES",
                                       "HIP_VISIBLE_DEVICES",
                                       "ROCM_PATH",
                                       "OCL_ICD_VENDORS",
                                       "OCL_ICD_FILENAMES",
                                       "POCL_DEVICES",
                                       "OMP_NUM_THREADS",
                                       "NCCL_NVLS_ENABLE",
                                       "TORCH_SYMM_MEM_DISABLE_MULTICAST"};
  for (const char* name : kPassThrough) {
    if (const char* value = std::getenv(name)) env.push_back(fmt::format("{}={}", name, value));
  }
  return env;
}

// The runner's environment: the allow-list, the runner's paths and Python's settings.
std::vector<std::string> RunnerEnvironment(const fs::path& runner_dir, const fs::path& scratch) {
  std::vector<std::string> env = PassedThrough();
  // ICD loaders differ: some read OCL_ICD_FILENAMES, others (the one in pyopencl's wheels) only
  // a vendors folder. Offer the host's list both ways.
  const char* filenames = std::getenv("OCL_ICD_FILENAMES");
  if (filenames != nullptr && *filenames != '\0' && std::getenv("OCL_ICD_VENDORS") == nullptr) {
    const fs::path vendors = runner_dir.parent_path() / "opencl-vendors";
    std::error_code ec;
    fs::create_directories(vendors, ec);
    fs::permissions(vendors, kReadable, ec);
    std::string_view rest(filenames);
    for (int i = 0; !rest.empty(); ++i) {
      std::size_t colon = rest.find(':');
      std::string_view library = rest.substr(0, colon);
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      const fs::path icd = vendors / fmt::format("{:02}.icd", i);
      if (!library.empty() && WriteFile(icd, std::string(library) + "\n")) {
        fs::permissions(icd,
                        fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                            fs::perms::others_read,
                        ec);
      }
    }
    env.push_back("OCL_ICD_VENDORS=" + vendors.string());
  }
  std::string pythonpath = runner_dir.string();
  for (const auto& extra : ExtraRunnerPythonPath()) {
    pythonpath += ":";
    pythonpath += extra.string();
  }
  env.push_back("PYTHONPATH=" + pythonpath);
  env.push_back("HOME=" + scratch.string());
  env.push_back("TRITON_CACHE_DIR=" + (scratch / ".triton").string());
  env.push_back("TORCH_EXTENSIONS_DIR=" + (scratch / ".torch_extensions").string());
  env.push_back("PYTHONDONTWRITEBYTECODE=1");
  env.push_back("PYTHONUNBUFFERED=1");
  return env;
}

// 128 random bits as hex: the per-process result seal.
std::string FreshSeal() {
  static std::mutex mu;
  static std::random_device device;
  std::lock_guard lock(mu);
  std::string seal;
  for (int i = 0; i < 4; ++i) seal += fmt::format("{:08x}", device());
  return seal;
}

}  // namespace

std::vector<std::string> HarnessEnvironment(const fs::path& scratch) {
  std::vector<std::string> env = PassedThrough();
  env.push_back("HOME=" + scratch.string());
  env.push_back("TMPDIR=" + scratch.string());
  return env;
}

fs::path InterpreterHome(const fs::path& python) {
  const fs::path dir = python.parent_path();
  return dir.filename() == "bin" ? dir.parent_path() : dir;
}

std::vector<fs::path> ExtraRunnerPythonPath() {
  std::vector<fs::path> paths;
  const char* extra = std::getenv("KFORGE_RUNNER_PYTHONPATH");
  if (extra == nullptr) return paths;
  std::string_view rest(extra);
  while (!rest.empty()) {
    std::size_t colon = rest.find(':');
    std::string_view item = rest.substr(0, colon);
    if (!item.empty()) paths.emplace_back(std::string(item));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
  }
  return paths;
}

Result<fs::path> InstallRunner(const fs::path& work_root) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  const fs::path source = KforgeHome() / "runner" / "kforge_runner";
  if (!fs::exists(source / "__main__.py")) {
    return Unavailable(fmt::format(
        "the runner package is missing at {} (set KFORGE_HOME to KForge's source folder)",
        source.string()));
  }
  Hasher hasher;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(source)) {
    if (e.is_regular_file() && e.path().extension() != ".pyc") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    auto text = ReadFile(f);
    if (!text) return std::unexpected(text.error());
    hasher.Add(fs::relative(f, source).string()).Add(*text);
  }
  const fs::path target = work_root / fmt::format("runner-{}", hasher.Hex().substr(0, 16));
  if (fs::exists(target / "kforge_runner" / "__main__.py")) return target;
  const fs::path tmp = work_root / fmt::format(".runner-{}", ::getpid());
  fs::remove_all(tmp);
  std::error_code ec;
  fs::create_directories(tmp, ec);
  fs::copy(source, tmp / "kforge_runner", fs::copy_options::recursive, ec);
  if (ec)
    return IoError(fmt::format("cannot copy the runner to {}: {}", tmp.string(), ec.message()));
  for (const auto& e : fs::recursive_directory_iterator(tmp)) {
    fs::permissions(e.path(),
                    e.is_directory() ? kReadable
                                     : kReadable & ~(fs::perms::owner_exec | fs::perms::group_exec |
                                                     fs::perms::others_exec),
                    ec);
  }
  fs::permissions(tmp, kReadable, ec);
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove_all(tmp);
    if (!fs::exists(target))
      return IoError(fmt::format("cannot install the runner: {}", ec.message()));
  }
  return target;
}

Result<RunnerRun> RunRunner(const RunnerLaunch& launch, const fs::path& runner_dir,
                            const fs::path& scratch, const SandboxPolicy& policy,
                            const ResourceLimits& limits, std::stop_token stop) {
  if (!launch.job_json.empty()) {
    KFORGE_RETURN_IF_ERROR(WriteFile(launch.job_file, launch.job_json));
    std::error_code ec;
    fs::permissions(
        launch.job_file,
        kReadable & ~fs::perms::others_exec & ~fs::perms::group_exec & ~fs::perms::owner_exec, ec);
  }
  if (RunnerPython().empty()) {
    return Unavailable(
        "no Python with torch for the runner: apt-get install python3-torch, or set "
        "KFORGE_PYTHON to an interpreter that can import torch");
  }
  ProcessSpec spec;
  spec.argv = {RunnerPython(),           "-m",          "kforge_runner",          "--job",
               launch.job_file.string(), "--result-fd", std::to_string(kResultFd)};
  if (!launch.preload.empty()) spec.argv.insert(spec.argv.end(), {"--preload", launch.preload});
  spec.argv.insert(spec.argv.begin(), launch.wrapper.begin(), launch.wrapper.end());
  const std::string seal = FreshSeal();
  spec.argv.push_back("--seal-stdin");
  spec.stdin_data = seal + "\n";
  spec.env = RunnerEnvironment(runner_dir, scratch);
  spec.cwd = scratch;
  spec.timeout = launch.timeout;
  spec.deadline = launch.deadline;
  spec.limits = limits;
  spec.result_pipe = true;
  spec.folder_quota = launch.scratch_quota;
  spec.running_pid = launch.pid;
  auto start = SteadyClock::now();
  SandboxPolicy with_site = policy;
  for (const auto& extra : ExtraRunnerPythonPath()) with_site.visible_paths.push_back(extra);
  // The sandbox gives the runner a private, empty /tmp: an interpreter installed there (a venv
  // in /tmp, as CI jobs often make) would be missing inside it ("execvp ...: No such file").
  with_site.visible_paths.push_back(InterpreterHome(RunnerPython()));
  const std::shared_ptr<const Sandbox> sandbox = launch.sandbox ? launch.sandbox : DefaultSandbox();
  auto wrapped = sandbox->Wrap(std::move(spec), with_site);
  auto r = RunProcess(wrapped, stop);
  if (!r) return std::unexpected(r.error());
  sandbox->UnwrapResult(*r);
  RunnerRun run{
      std::move(*r), {}, std::chrono::duration<double>(SteadyClock::now() - start).count()};
  if (!run.process.result_text.empty()) {
    auto unsealed = UnsealResult(run.process.result_text, seal);
    if (unsealed) {
      run.process.result_text = std::move(*unsealed);
    } else {
      run.channel_problem = unsealed.error().message;
      run.process.result_text.clear();
    }
  }
  return run;
}

std::int64_t SteadyNanos(SteadyClock::time_point t) {
  return std::chrono::nanoseconds(t.time_since_epoch()).count();
}

}  // namespace kforge
