#include "kforge/eval/compile_service.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

#include "file_modes.h"
#include "kforge/core/files.h"
#include "kforge/core/hash.h"
#include "kforge/core/host_gate.h"
#include "kforge/core/subprocess.h"
#include "kforge/eval/diagnostics.h"
#include "toolchain_view.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kArtifactName = "candidate.so";
constexpr std::string_view kAbiHeader = "kforge_kernel.h";

fs::path AbiIncludeDir() { return KforgeHome() / "runner" / "kforge_runner" / "abi"; }

// The compiler binary as it is now: a changed or upgraded compiler changes the key.
std::string BinaryIdentity(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return path;
  return fmt::format("{}:{}:{}", path, st.st_size, st.st_mtim.tv_sec);
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("model name")) return line;
  }
  return {};
}

std::string RandomSuffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  return fmt::format("{:016x}", rng());
}

// Toolkit variables a compiler driver reads (hipcc, nvcc's host compiler choice); passed when set
// and part of the cache key. Nothing else of KForge's environment reaches a compile.
constexpr const char* kToolkitVariables[] = {"CUDA_HOME", "CUDA_PATH", "ROCM_PATH", "HIP_PATH",
                                             "HIP_PLATFORM", "HIP_CLANG_PATH", "HIP_DEVICE_LIB_PATH",
                                             "ONEAPI_ROOT"};

// The compile's environment: PATH without private folders (toolchain_view.h) but inside the
// compiler's installation, a C locale, HOME and TMPDIR inside the sandbox, the toolkit variables.
std::vector<std::string> CompileEnvironment(const std::string& compiler, const fs::path& home) {
  std::error_code ec;
  fs::path prefix = fs::canonical(compiler, ec);
  prefix = ec ? fs::path() : prefix.parent_path().parent_path();
  std::string path;
  const char* host_path = std::getenv("PATH");
  std::string_view rest = host_path != nullptr ? host_path : "/usr/local/bin:/usr/bin:/bin";
  while (!rest.empty()) {
    std::size_t colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    if (dir.empty() || dir[0] != '/' || IsPrivateHostPath(dir, prefix)) continue;
    if (!path.empty()) path += ':';
    path += dir;
  }
  std::vector<std::string> env = {"PATH=" + path, "LC_ALL=C", "LANG=C", "HOME=" + home.string(),
                                  "TMPDIR=/tmp"};
  for (const char* name : kToolkitVariables) {
    if (const char* value = std::getenv(name)) env.push_back(fmt::format("{}={}", name, value));
  }
  return env;
}

// Copies the regular file `from` (never through a symbolic link) to `to`.
Status CopyRegularFile(const fs::path& from, const fs::path& to) {
  int in = ::open(from.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (in < 0) return IoError(fmt::format("cannot open {}: {}", from.string(), std::strerror(errno)));
  struct stat st{};
  if (::fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(in);
    return IoError(fmt::format("{} is not a regular file", from.string()));
  }
  int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
  if (out < 0) {
    ::close(in);
    return IoError(fmt::format("cannot create {}: {}", to.string(), std::strerror(errno)));
  }
  std::array<char, 1 << 16> buf{};
  bool ok = true;
  for (ssize_t n; (n = ::read(in, buf.data(), buf.size())) > 0;) {
    if (::write(out, buf.data(), static_cast<std::size_t>(n)) != n) {
      ok = false;
      break;
    }
  }
  ::close(in);
  if (::close(out) != 0) ok = false;
  if (!ok) return IoError(fmt::format("cannot copy {} to {}", from.string(), to.string()));
  return Ok();
}

std::string SignalText(int sig) {
  switch (sig) {
    case SIGXFSZ:
      return "its output passed the file size limit";
    case SIGXCPU:
      return "it passed its CPU time limit";
    case SIGKILL:
      return "it was killed (SIGKILL: out of memory, or the deadline)";
    default:
      return fmt::format("it was killed by signal {} ({})", sig, ::strsignal(sig));
  }
}

}  // namespace

fs::path DefaultCompileCacheDir() {
  if (const char* dir = std::getenv("KFORGE_CACHE_DIR"); dir != nullptr && *dir != '\0') {
    return fs::path(dir) / "compile";
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return fs::path(xdg) / "kforge" / "compile";
  }
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr ? home : "/tmp") / ".cache" / "kforge" / "compile";
}

CompileService::CompileService(CompileServiceOptions options) : options_(std::move(options)) {
  if (options_.cache_dir.empty()) options_.cache_dir = DefaultCompileCacheDir();
  if (options_.build_root.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    options_.build_root = fs::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") /
                          fmt::format("kforge-{}", ::geteuid()) / "builds";
  }
  if (!options_.sandbox) options_.sandbox = DefaultSandbox();
  pool_ = std::make_unique<ThreadPool>(options_.threads);
}

std::future<Result<CompileOutcome>> CompileService::Submit(const Backend& backend,
                                                           fs::path source) {
  return pool_->Submit([this, &backend, source = std::move(source)] {
    return Compile(backend, source);
  });
}

Result<CompileOutcome> CompileService::Compile(const Backend& backend, const fs::path& source) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto code = ReadFile(source);
  if (!code) return std::unexpected(code.error());
  auto abi = ReadFile(AbiIncludeDir() / kAbiHeader);
  if (!abi) return std::unexpected(abi.error());

  // The command is built against placeholder paths so the key does not depend on where the
  // entry is built. What a compile may read is only what the key covers: the source, the ABI
  // header (both copied into its build folder), the command, the compiler's identity, the toolkit
  // variables of its environment, and the toolchain's own files (the sandbox shows nothing else;
  // a toolchain upgraded without its driver binary changing is the one thing the key can miss).
  const std::string ext = source.extension().string();
  const fs::path placeholder_dir = "/kforge-build";
  auto command = backend.NativeCompile(placeholder_dir / ("candidate" + ext),
                                       placeholder_dir / kArtifactName, placeholder_dir / "abi");
  if (!command) return std::unexpected(command.error());

  const fs::path build_home = "/tmp";
  const std::vector<std::string> env = CompileEnvironment(command->argv[0], build_home);
  Hasher hasher;
  hasher.Add("kforge-compile-v2").Add(*code).Add(*abi).Add(BinaryIdentity(command->argv[0]));
  for (const auto& arg : command->argv) hasher.Add(arg);
  for (const auto& e : env) {
    if (!e.starts_with("PATH=") && !e.starts_with("HOME=")) hasher.Add(e);
  }
  if (!backend.UsesAccelerator()) hasher.Add(CpuModel());  // -march=native
  CompileOutcome outcome;
  outcome.key = hasher.Hex();
  const fs::path entry = options_.cache_dir / outcome.key;

  auto load_entry = [&](bool hit) -> Result<CompileOutcome> {
    auto status = ReadFile(entry / "status");
    if (!status) return std::unexpected(status.error());
    auto log = ReadFile(entry / "compile.log");
    outcome.full_log = log ? *log : std::string();
    outcome.ok = status->starts_with("ok");
    outcome.timed_out = status->starts_with("timeout");
    outcome.cache_hit = hit;
    outcome.artifact = outcome.ok ? entry / kArtifactName : fs::path();
    outcome.diagnostics =
        outcome.ok ? std::string() : TrimDiagnostics(outcome.full_log, placeholder_dir.string());
    if (outcome.timed_out) {
      outcome.diagnostics = fmt::format("the compiler did not finish within {} s",
                                        options_.timeout.count());
    }
    outcome.seconds = elapsed();
    return outcome;
  };

  if (fs::exists(entry / "status")) return load_entry(true);

  // Build in a private folder that the compiler's user owns, outside the cache.
  std::error_code ec;
  fs::create_directories(options_.build_root, ec);
  for (fs::path p = options_.build_root; !p.empty() && p != p.root_path(); p = p.parent_path()) {
    // The compiler's user must be able to reach its folder: the build root and the kforge-<uid>
    // folder above it are 0711 (enter, not list).
    if (p.filename().string().starts_with("kforge-") || p == options_.build_root) {
      fs::permissions(p, file_modes::kTraversable, ec);
    }
  }
  std::string tmpl = (options_.build_root / "build-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return IoError(fmt::format("cannot create a build folder under {}: {}",
                               options_.build_root.string(), std::strerror(errno)));
  }
  const fs::path build_dir = tmpl;
  struct RemoveOnExit {
    fs::path dir;
    ~RemoveOnExit() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } remove_build{build_dir};
  const fs::path build_source = build_dir / ("candidate" + ext);
  KFORGE_RETURN_IF_ERROR(WriteFile(build_source, *code));
  KFORGE_RETURN_IF_ERROR(MakeDirs(build_dir / "abi"));
  KFORGE_RETURN_IF_ERROR(WriteFile(build_dir / "abi" / kAbiHeader, *abi));
  const bool as_nobody = ::geteuid() == 0;
  if (as_nobody) {
    for (const fs::path& p : {build_dir, build_source, build_dir / "abi", build_dir / "abi" / fs::path(kAbiHeader)}) {
      if (::chown(p.c_str(), kUnprivilegedUid, kUnprivilegedUid) != 0) {
        return IoError(fmt::format("cannot hand the build folder {} to user nobody: {}",
                                   build_dir.string(), std::strerror(errno)));
      }
    }
  }
  fs::permissions(build_dir, fs::perms::owner_all, ec);
  auto real = backend.NativeCompile(build_source, build_dir / kArtifactName, build_dir / "abi");
  if (!real) return std::unexpected(real.error());
  outcome.command = real->argv;

  // What the compiler may see of the host: its toolchain's view (asked with the placeholder
  // command, so that it is found once per command shape).
  auto view = DiscoverToolchainView(command->argv, placeholder_dir / ("candidate" + ext),
                                    placeholder_dir / kArtifactName, env, options_.build_root,
                                    options_.cache_dir / "views");
  if (!view) return std::unexpected(view.error());
  SandboxPolicy policy;
  policy.scratch_dir = build_dir;
  policy.visible_paths = view->paths;
  policy.show_host_root = false;
  policy.tmp_bytes = options_.tmp_bytes;
  policy.shm_bytes = 64ull << 20;
  policy.allow_network = false;
  policy.drop_privileges = true;
  outcome.isolation = options_.sandbox->isolation(policy).Describe();

  ProcessSpec spec;
  spec.argv = real->argv;
  spec.env = env;
  spec.cwd = build_dir;
  spec.timeout = options_.timeout;
  spec.max_output_bytes = 1 << 20;
  spec.limits.address_space_bytes = options_.memory_limit_bytes;
  spec.limits.cpu_seconds = static_cast<std::uint64_t>(options_.timeout.count()) * 2;
  spec.limits.file_size_bytes = options_.output_limit_bytes;
  spec.limits.open_files = 1024;
  spec = options_.sandbox->Wrap(std::move(spec), policy);
  // Wrap() points TMPDIR at the scratch folder; the compile's intermediates belong in its /tmp,
  // which is size-limited (the build folder holds only what is kept).
  std::erase_if(spec.env, [](const std::string& e) { return e.starts_with("TMPDIR="); });
  spec.env.push_back("TMPDIR=/tmp");
  spdlog::debug("compile: {}", fmt::join(spec.argv, " "));

  // No compile beside a timed phase on this host (core/host_gate.h).
  auto gate = HostGate::Default().Compile();
  if (!gate) return std::unexpected(gate.error());
  outcome.gate_wait_seconds = gate->waited_seconds();
  auto run = RunProcess(spec);
  gate = HostGate::Lease();
  if (!run) return std::unexpected(run.error());
  options_.sandbox->UnwrapResult(*run);
  std::string log = run->stderr_text;
  if (!run->stdout_text.empty()) log = run->stdout_text + "\n" + log;
  if (run->term_signal != 0 && run->state != ProcessState::kTimedOut) {
    log += fmt::format("\nkforge: the compiler did not finish: {}\n", SignalText(run->term_signal));
  }
  // Paths in the log name the placeholder folder, as the key does.
  std::string build_prefix = build_dir.string();
  for (auto pos = log.find(build_prefix); pos != std::string::npos;
       pos = log.find(build_prefix, pos)) {
    log.replace(pos, build_prefix.size(), placeholder_dir.string());
  }
  struct stat artifact_stat{};
  const bool artifact_ok =
      ::lstat((build_dir / kArtifactName).c_str(), &artifact_stat) == 0 &&
      S_ISREG(artifact_stat.st_mode);
  const char* status = run->state == ProcessState::kDone && artifact_ok ? "ok"
                       : run->state == ProcessState::kTimedOut         ? "timeout"
                                                                       : "error";

  // The entry is assembled by KForge's user from what it takes out of the build folder.
  KFORGE_RETURN_IF_ERROR(MakeDirs(options_.cache_dir));
  const fs::path staging = options_.cache_dir / fmt::format(".build-{}", RandomSuffix());
  KFORGE_RETURN_IF_ERROR(MakeDirs(staging));
  if (std::string_view(status) == "ok") {
    if (auto copied = CopyRegularFile(build_dir / kArtifactName, staging / kArtifactName);
        !copied) {
      fs::remove_all(staging, ec);
      return std::unexpected(copied.error());
    }
    // Readable by the unprivileged runner.
    fs::permissions(staging / kArtifactName, file_modes::kReadable, ec);
  }
  KFORGE_RETURN_IF_ERROR(WriteFile(staging / "compile.log", log));
  KFORGE_RETURN_IF_ERROR(WriteFile(staging / "status", status));
  fs::rename(staging, entry, ec);
  if (ec) {
    // Another compile of the same key won the race; use its entry.
    fs::remove_all(staging);
    if (!fs::exists(entry / "status")) {
      return IoError(fmt::format("cannot store compile result in {}: {}", entry.string(),
                                 ec.message()));
    }
  }
  auto result = load_entry(false);
  if (result) {
    result->command = real->argv;
    result->gate_wait_seconds = outcome.gate_wait_seconds;
  }
  return result;
}

}  // namespace kforge
