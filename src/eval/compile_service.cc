#include "kforge/eval/compile_service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>

#include "kforge/core/files.h"
#include "kforge/core/hash.h"
#include "kforge/core/subprocess.h"
#include "kforge/eval/diagnostics.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kArtifactName = "candidate.so";

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
  auto abi = ReadFile(AbiIncludeDir() / "kforge_kernel.h");
  if (!abi) return std::unexpected(abi.error());

  // The command is built against placeholder paths so the key does not depend on where the
  // entry is built.
  const std::string ext = source.extension().string();
  const fs::path placeholder_dir = "/kforge-build";
  auto command = backend.NativeCompile(placeholder_dir / ("candidate" + ext),
                                       placeholder_dir / kArtifactName, AbiIncludeDir());
  if (!command) return std::unexpected(command.error());

  Hasher hasher;
  hasher.Add("kforge-compile-v1").Add(*code).Add(*abi).Add(BinaryIdentity(command->argv[0]));
  for (const auto& arg : command->argv) hasher.Add(arg);
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

  // Build in a private folder under the same parent, then rename it into place.
  const fs::path build_dir = options_.cache_dir / fmt::format(".build-{}", RandomSuffix());
  KFORGE_RETURN_IF_ERROR(MakeDirs(build_dir));
  const fs::path build_source = build_dir / ("candidate" + ext);
  KFORGE_RETURN_IF_ERROR(WriteFile(build_source, *code));
  auto real = backend.NativeCompile(build_source, build_dir / kArtifactName, AbiIncludeDir());
  if (!real) return std::unexpected(real.error());
  outcome.command = real->argv;

  ProcessSpec spec;
  spec.argv = real->argv;
  spec.cwd = build_dir;
  spec.timeout = options_.timeout;
  spec.max_output_bytes = 1 << 20;
  spdlog::debug("compile: {}", fmt::join(spec.argv, " "));
  auto run = RunProcess(spec);
  if (!run) {
    fs::remove_all(build_dir);
    return std::unexpected(run.error());
  }
  std::string log = run->stderr_text;
  if (!run->stdout_text.empty()) log = run->stdout_text + "\n" + log;
  // Paths in the log name the placeholder folder, as the key does.
  std::string build_prefix = build_dir.string();
  for (auto pos = log.find(build_prefix); pos != std::string::npos;
       pos = log.find(build_prefix, pos)) {
    log.replace(pos, build_prefix.size(), placeholder_dir.string());
  }
  const char* status = run->state == ProcessState::kDone && fs::exists(build_dir / kArtifactName)
                           ? "ok"
                       : run->state == ProcessState::kTimedOut ? "timeout"
                                                               : "error";
  KFORGE_RETURN_IF_ERROR(WriteFile(build_dir / "compile.log", log));
  KFORGE_RETURN_IF_ERROR(WriteFile(build_dir / "status", status));
  if (std::string_view(status) == "ok") {
    // Readable by the unprivileged runner.
    fs::permissions(build_dir / kArtifactName, fs::perms::owner_all | fs::perms::group_read |
                                                   fs::perms::group_exec | fs::perms::others_read |
                                                   fs::perms::others_exec);
  }
  std::error_code ec;
  fs::rename(build_dir, entry, ec);
  if (ec) {
    // Another compile of the same key won the race; use its entry.
    fs::remove_all(build_dir);
    if (!fs::exists(entry / "status")) {
      return IoError(fmt::format("cannot store compile result in {}: {}", entry.string(),
                                 ec.message()));
    }
  }
  auto result = load_entry(false);
  if (result) result->command = real->argv;
  return result;
}

}  // namespace kforge
