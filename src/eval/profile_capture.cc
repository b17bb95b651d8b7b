#include "kforge/eval/profile_capture.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "kforge/core/files.h"
#include "kforge/core/subprocess.h"
#include "kforge/eval/profile_pass.h"
#include "kforge/profile/capture_files.h"
#include "kforge/profile/parsers.h"
#include "kforge/profile/reducer.h"

namespace kforge {
namespace {

using profile::Tool;

namespace fs = std::filesystem;

// Whether the backend lists `tool` among the profilers of its candidates.
bool Lists(const Backend& backend, Tool tool) {
  const auto& tools = backend.traits().profilers;
  return std::find(tools.begin(), tools.end(), profile::ToolName(tool)) != tools.end();
}

// Runs an export command; its stdout is the file's content.
Status ExportTo(const std::vector<std::string>& argv, const fs::path& file) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.timeout = std::chrono::minutes(5);
  spec.max_output_bytes = 512ull << 20;
  auto r = RunProcess(spec);
  if (!r) return std::unexpected(r.error());
  if (r->exit_code != 0) {
    return Unavailable(fmt::format("{} failed (exit code {}): {}", argv[0], r->exit_code,
                                   r->stderr_text.substr(0, 1500)));
  }
  return WriteFile(file, r->stdout_text);
}

}  // namespace

using profile::Tool;

std::optional<fs::path> FindProfilerTool(std::string_view name) {
  std::vector<fs::path> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::string_view rest(path);
    while (!rest.empty()) {
      const std::size_t colon = rest.find(':');
      dirs.emplace_back(std::string(rest.substr(0, colon)));
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  dirs.emplace_back("/usr/local/cuda/bin");
  for (const auto& d : dirs) {
    const fs::path candidate = d / std::string(name);
    std::error_code ec;
    if (!d.empty() && fs::is_regular_file(candidate, ec) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return std::nullopt;
}

Tool DefaultProfileTool(const Backend& backend) {
  // The backend's first profiler that can run here: a vendor tool only where it is installed.
  for (const std::string& name : backend.traits().profilers) {
    const std::optional<Tool> tool = profile::ParseToolName(name);
    if (!tool) continue;
    if ((*tool == Tool::kNcu || *tool == Tool::kNsys) && !FindProfilerTool(name)) continue;
    return *tool;
  }
  return Tool::kTorch;
}

Status CheckProfileTool(Tool tool, const Backend& backend) {
  const std::string target = backend.target().ToString();
  switch (tool) {
    case Tool::kTorch:
    case Tool::kOpenCl:
      if (!Lists(backend, tool)) {
        return InvalidArgument(fmt::format(
            "--tool {} does not profile {} candidates (use --tool {})", profile::ToolName(tool),
            target, profile::ToolName(DefaultProfileTool(backend))));
      }
      return Ok();
    case Tool::kNcu:
    case Tool::kNsys: {
      const std::string name = profile::ToolName(tool);
      if (!Lists(backend, tool)) {
        return InvalidArgument(
            fmt::format("--tool {} needs an NVIDIA CUDA target, not {}", name, target));
      }
      if (!FindProfilerTool(name)) {
        return Unavailable(
            fmt::format("--tool {}: {} is not on PATH nor in /usr/local/cuda/bin "
                        "(install Nsight, or use --tool torch)",
                        name, name));
      }
      return Ok();
    }
    default:
      return InvalidArgument(
          fmt::format("--tool {} cannot run candidates; its exports are parsed "
                      "by the profile module only",
                      profile::ToolName(tool)));
  }
}

std::vector<std::string> NcuCommand(const fs::path& ncu, const fs::path& out) {
  auto env_or = [](const char* name, const char* fallback) {
    const char* v = std::getenv(name);
    return std::string(v != nullptr && *v != '\0' ? v : fallback);
  };
  return {ncu.string(),
          "--clock-control",
          "none",
          "--profile-from-start",
          "off",
          "--target-processes",
          "all",
          "--set",
          env_or("KFORGE_NCU_SET", "full"),
          "--import-source",
          "no",
          "--launch-count",
          env_or("KFORGE_NCU_LAUNCH_COUNT", "200"),
          "--force-overwrite",
          "--export",
          (out / "ncu").string()};
}

Result<ProfileCapture> CaptureProfile(CompileService& compiler, const EvalOptions& eval_options,
                                      const Task& task, const Backend& backend,
                                      const fs::path& candidate,
                                      const ProfileCaptureOptions& options, std::stop_token stop) {
  KFORGE_RETURN_IF_ERROR(CheckProfileTool(options.tool, backend));
  ProfilePassRequest request;
  request.calls = options.calls;
  request.reference = options.reference;
  request.output_dir = options.output_dir;
  std::optional<fs::path> exe;
  switch (options.tool) {
    case Tool::kTorch:
      request.runner_tool = "torch";
      break;
    case Tool::kOpenCl:
      if (options.reference)
        return InvalidArgument(
            "--reference: the task's reference is PyTorch; profile it with --tool torch");
      request.runner_tool = "opencl";
      break;
    case Tool::kNcu:
      exe = FindProfilerTool("ncu");
      request.runner_tool = "external";
      request.calls = 1;
      request.keep_privileges = true;
      request.wrapper = [exe](const fs::path& out) { return NcuCommand(*exe, out); };
      break;
    case Tool::kNsys:
      exe = FindProfilerTool("nsys");
      request.runner_tool = "external";
      request.calls = std::min(options.calls, 3);
      request.keep_privileges = true;
      request.wrapper = [exe](const fs::path& out) {
        return std::vector<std::string>{exe->string(),
                                        "profile",
                                        "--capture-range=cudaProfilerApi",
                                        "--capture-range-end=stop",
                                        "--trace=cuda",
                                        "--force-overwrite=true",
                                        "--output",
                                        (out / "nsys").string()};
      };
      break;
    default:
      break;
  }
  auto pass = RunProfilePass(compiler, eval_options, task, backend, candidate, request, stop);
  if (!pass) return std::unexpected(pass.error());
  ProfileCapture c;
  c.tool = options.tool;
  c.status = pass->status;
  c.diagnostics = pass->diagnostics;
  c.log = pass->log;
  c.files = pass->files;
  if (!pass->ok()) return c;
  const fs::path& dir = options.output_dir;
  if (options.tool == Tool::kNcu) {
    const fs::path report = dir / "ncu.ncu-rep";
    if (!fs::exists(report)) {
      c.status = "no_report";
      c.diagnostics =
          "ncu wrote no report (no kernel ran inside the capture range?); its log:\n" + c.log;
      return c;
    }
    KFORGE_RETURN_IF_ERROR(ExportTo({exe->string(), "--import", report.string(), "--csv", "--page",
                                     "raw", "--print-units", "base"},
                                    dir / "ncu.raw.csv"));
    KFORGE_RETURN_IF_ERROR(ExportTo({exe->string(), "--import", report.string(), "--csv", "--page",
                                     "details", "--print-details", "all", "--print-units", "base"},
                                    dir / "ncu.details.csv"));
    c.files.push_back(dir / "ncu.raw.csv");
    c.files.push_back(dir / "ncu.details.csv");
  } else if (options.tool == Tool::kNsys) {
    KFORGE_RETURN_IF_ERROR(
        ExportTo({exe->string(), "stats", "--report", "cuda_gpu_kern_sum", "--format", "csv",
                  "--output", "-", (dir / "nsys.nsys-rep").string()},
                 dir / "nsys.cuda_gpu_kern_sum.csv"));
    c.files.push_back(dir / "nsys.cuda_gpu_kern_sum.csv");
  }
  auto parsed = ParseCaptureFiles(options.tool, dir);
  if (!parsed) return std::unexpected(parsed.error());
  if (options.tool == Tool::kNsys) parsed->calls = request.calls;
  c.profile = std::move(*parsed);
  return c;
}

std::function<Result<AnalysisProfile>(const std::string&, const std::string&)> MakeSummaryProfiler(
    CompileService& compiler, EvalOptions eval_options, Task task, const Backend& backend,
    fs::path work_dir) {
  const Tool tool = DefaultProfileTool(backend);
  if (backend.target().vendor == Vendor::kCpu && tool != Tool::kOpenCl) return {};
  return [&compiler, eval_options, task = std::move(task), &backend, work_dir, tool](
             const std::string& file_name, const std::string& source) -> Result<AnalysisProfile> {
    static std::atomic<int> counter{0};
    const fs::path dir = work_dir / fmt::format("profile-{}", counter++);
    std::error_code ec;
    fs::create_directories(dir, ec);
    KFORGE_RETURN_IF_ERROR(WriteFile(dir / file_name, source));
    ProfileCaptureOptions options;
    options.tool = tool;
    options.output_dir = dir / "raw";
    auto capture = CaptureProfile(compiler, eval_options, task, backend, dir / file_name, options);
    if (!capture) return std::unexpected(capture.error());
    if (!capture->profile) {
      return Unavailable(fmt::format("the profiled run ended {}: {}", capture->status,
                                     capture->diagnostics.substr(0, 500)));
    }
    AnalysisProfile summary;
    summary.tool = profile::ToolName(tool);
    summary.text =
        profile::Summarize(*capture->profile, profile::DatasheetPeaks(capture->profile->device)).text;
    if (auto raw = ReadFile(options.output_dir / profile::MainExportName(tool))) {
      summary.raw = std::move(*raw);
    }
    return summary;
  };
}

}  // namespace kforge
