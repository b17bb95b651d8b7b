#include "kforge/eval/calibration.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "baseline_cache.h"
#include "kforge/core/files.h"
#include "kforge/core/host_gate.h"
#include "kforge/eval/compile_service.h"
#include "runner_process.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// "NVIDIA H200" -> "NVIDIA_H200": a device name as a file name.
std::string FileNameFor(const std::string& device_name) {
  std::string out;
  for (char c : device_name) {
    out.push_back(std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' ? c
                                                                                           : '_');
  }
  return out.empty() ? "unknown-device" : out;
}

std::string RateFor(const CallWork& work, PrecisionPolicy policy,
                    const std::map<std::string, double>& rates) {
  auto has = [&rates](const char* name) { return rates.contains(name); };
  if (work.dtype == "bfloat16" || work.dtype == "float16") {
    return has(work.dtype.c_str()) ? work.dtype : "";
  }
  // fp32 storage: strict means fp32 arithmetic; tf32 allows tf32 matrix math; mixed allows
  // lower-precision compute, so the fastest measured rate is the floor.
  if (policy == PrecisionPolicy::kMixed) {
    std::string best;
    for (const auto& [name, rate] : rates) {
      if (best.empty() || rate > rates.at(best)) best = name;
    }
    return best;
  }
  if (policy == PrecisionPolicy::kTf32 && has("tf32")) return "tf32";
  return has("float32") ? "float32" : "";
}

// An exclusive flock on a file, released when this object goes.
class ScopedFileLock {
 public:
  explicit ScopedFileLock(const fs::path& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ScopedFileLock(const ScopedFileLock&) = delete;
  ScopedFileLock& operator=(const ScopedFileLock&) = delete;
  ~ScopedFileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }

 private:
  int fd_ = -1;
};

}  // namespace

bool CalibrationMatches(const Calibration& calibration, const std::string& environment_json) {
  return !calibration.environment_json.empty() &&
         NormalisedEnvironment(calibration.environment_json) ==
             NormalisedEnvironment(environment_json);
}

Result<Calibration> CalibrateOnce(const std::string& device_name,
                                  const std::string& environment_json,
                                  const std::function<Result<Calibration>()>& measure) {
  const fs::path path = CalibrationPath(device_name);
  KFORGE_RETURN_IF_ERROR(MakeDirs(path.parent_path()));
  ScopedFileLock lock(fs::path(path.string() + ".lock"));
  // Another process may have measured while this one waited for the lock.
  if (auto stored = LoadCalibration(device_name); stored && *stored &&
                                                   CalibrationMatches(**stored, environment_json)) {
    return **stored;
  }
  auto measured = measure();
  if (!measured) return measured;
  KFORGE_RETURN_IF_ERROR(SaveCalibration(*measured));
  return measured;
}

std::string Calibration::ToJson() const {
  json levels = json::array();
  for (const auto& l : cache_levels) {
    levels.push_back({{"name", l.name},
                      {"bytes", l.bytes},
                      {"copy_bytes_per_s", l.copy_bytes_per_s ? json(*l.copy_bytes_per_s)
                                                              : json(nullptr)}});
  }
  return json{{"calibration_version", 2},
              {"device_name", device_name},
              {"target", target},
              {"copy_bytes_per_s", copy_bytes_per_s},
              {"cache_levels", levels},
              {"matmul_flops_per_s", matmul_flops_per_s},
              {"measured_at", measured_at},
              {"environment",
               json::parse(environment_json.empty() ? "null" : environment_json, nullptr, false)}}
      .dump(2);
}

Result<Calibration> Calibration::FromJson(const std::string& text, const std::string& where) {
  const json j = json::parse(text, nullptr, false);
  const int version = j.is_object() ? j.value("calibration_version", 0) : 0;
  if (version != 1 && version != 2) {
    return ParseError(
        fmt::format("{}: not a KForge calibration of version 1 or 2 (run `kforge "
                    "calibrate` again)",
                    where));
  }
  try {
    Calibration c;
    c.device_name = j.at("device_name").get<std::string>();
    c.target = j.value("target", "");
    c.copy_bytes_per_s = j.at("copy_bytes_per_s").get<double>();
    c.matmul_flops_per_s = j.at("matmul_flops_per_s").get<std::map<std::string, double>>();
    for (const auto& l : j.value("cache_levels", json::array())) {  // version 2
      CacheLevel level{l.at("name").get<std::string>(), l.at("bytes").get<double>(), {}};
      if (l.contains("copy_bytes_per_s") && l["copy_bytes_per_s"].is_number()) {
        level.copy_bytes_per_s = l["copy_bytes_per_s"].get<double>();
      }
      c.cache_levels.push_back(std::move(level));
    }
    c.measured_at = j.value("measured_at", "");
    if (j.contains("environment")) c.environment_json = j["environment"].dump();
    return c;
  } catch (const json::exception& e) {
    return ParseError(fmt::format("{}: {}", where, e.what()));
  }
}

std::string Calibration::ToText() const {
  std::string out =
      fmt::format("device     {} ({}), measured {}\n", device_name, target, measured_at);
  out += fmt::format("copy       {:.3g} GB/s (bytes read + written)\n", copy_bytes_per_s / 1e9);
  for (const auto& l : cache_levels) {
    out += fmt::format("copy {:<5} {} (working sets up to {:.3g} MB)\n", l.name,
                       l.copy_bytes_per_s ? fmt::format("{:.3g} GB/s", *l.copy_bytes_per_s / 1e9)
                                          : std::string("not measurable"),
                       l.bytes / 1e6);
  }
  for (const auto& [name, rate] : matmul_flops_per_s) {
    out += fmt::format("matmul     {:<9} {:.4g} TFLOP/s\n", name, rate / 1e12);
  }
  return out;
}

fs::path CalibrationPath(const std::string& device_name) {
  return DefaultCompileCacheDir().parent_path() / "calibration" /
         (FileNameFor(device_name) + ".json");
}

Result<std::optional<Calibration>> LoadCalibration(const std::string& device_name) {
  const fs::path path = CalibrationPath(device_name);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::optional<Calibration>();
  auto text = ReadFile(path);
  if (!text) return std::unexpected(text.error());
  auto c = Calibration::FromJson(*text, path.string());
  if (!c) return std::unexpected(c.error());
  return std::optional<Calibration>(std::move(*c));
}

Status SaveCalibration(const Calibration& calibration) {
  const fs::path path = CalibrationPath(calibration.device_name);
  KFORGE_RETURN_IF_ERROR(MakeDirs(path.parent_path()));
  return WriteFile(path, calibration.ToJson() + "\n");
}

Result<Calibration> MeasureCalibration(const Backend& backend, const std::string& target,
                                       const EvalOptions& options) {
  const fs::path work_root = options.work_root.empty() ? DefaultWorkRoot() : options.work_root;
  auto runner_dir = InstallRunner(work_root);
  if (!runner_dir) return std::unexpected(runner_dir.error());
  const fs::path scratch =
      work_root / fmt::format("calibrate-{:%Y%m%d-%H%M%S}", fmt::gmtime(std::time(nullptr)));
  KFORGE_RETURN_IF_ERROR(MakeDirs(scratch));
  // The calibration is KForge's own code: KForge's user, sandboxed like the reference.
  SandboxPolicy policy;
  policy.scratch_dir = scratch;
  policy.drop_privileges = false;
  policy.visible_paths = {work_root};
  RunnerLaunch launch{
      .job_file = scratch / "calibrate-job.json",
      .job_json =
          json{{"protocol", 1}, {"phase", "calibrate"}, {"device", backend.RunnerDevice()}}.dump(),
      .preload = "",
      .deadline = nullptr,
      .timeout = std::chrono::seconds(600),
      .wrapper = {},
      .sandbox = options.sandbox,
      .scratch_quota = nullptr,
      .pid = nullptr};
  // The ceilings are timed: no compile beside them on this host.
  auto gate = HostGate::Default().Timing(backend.RunnerDevice());
  if (!gate) return std::unexpected(gate.error());
  auto run = RunRunner(launch, *runner_dir, scratch, policy, ResourceLimits{}, {});
  gate = HostGate::Lease();
  std::error_code ec;
  fs::remove_all(scratch, ec);
  if (!run) return std::unexpected(run.error());
  const json doc = json::parse(run->process.result_text, nullptr, false);
  if (!doc.is_object()) {
    return MakeError(ErrorCode::kInternal,
                     fmt::format("the calibration runner gave no result (exit {}); its "
                                 "stderr:\n{}",
                                 run->process.exit_code, run->process.stderr_text));
  }
  if (doc.value("status", "") != "ok") {
    return MakeError(ErrorCode::kInternal,
                     fmt::format("calibration failed: {}", doc.value("diagnostics", "")));
  }
  Calibration c;
  c.target = target;
  c.environment_json = doc.value("environment", json::object()).dump();
  c.device_name = doc.value("environment", json::object()).value("device_name", "unknown");
  c.copy_bytes_per_s = doc.at("copy").at("bytes_per_s").get<double>();
  for (const auto& l : doc.value("cache_levels", json::array())) {
    CacheLevel level{l.value("name", "cache"), l.value("bytes", 0.0), {}};
    if (l.contains("copy_bytes_per_s") && l["copy_bytes_per_s"].is_number()) {
      level.copy_bytes_per_s = l["copy_bytes_per_s"].get<double>();
    }
    if (level.bytes > 0) c.cache_levels.push_back(std::move(level));
  }
  std::sort(c.cache_levels.begin(), c.cache_levels.end(),
            [](const CacheLevel& a, const CacheLevel& b) { return a.bytes < b.bytes; });
  for (const auto& [name, m] : doc.at("matmul").items()) {
    c.matmul_flops_per_s[name] = m.at("flops_per_s").get<double>();
  }
  c.measured_at = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)));
  return c;
}

std::optional<PhysicsFloor> FloorFor(const CallWork& work, const Calibration& calibration,
                                     PrecisionPolicy policy) {
  if (calibration.copy_bytes_per_s <= 0) return std::nullopt;
  PhysicsFloor f;
  f.memory_level = "memory";
  std::optional<double> rate = calibration.copy_bytes_per_s;
  for (const auto& level : calibration.cache_levels) {
    if (work.min_bytes <= level.bytes) {
      f.memory_level = level.name;
      rate = level.copy_bytes_per_s;
      break;
    }
  }
  f.memory_s = rate && *rate > 0 ? work.min_bytes / *rate : 0.0;
  if (work.flops && *work.flops > 0) {
    f.rate_used = RateFor(work, policy, calibration.matmul_flops_per_s);
    if (!f.rate_used.empty()) {
      f.compute_s = *work.flops / calibration.matmul_flops_per_s.at(f.rate_used);
    }
  }
  f.floor_s = std::max(f.compute_s, f.memory_s);
  if (f.floor_s <= 0) return std::nullopt;
  return f;
}

}  // namespace kforge
