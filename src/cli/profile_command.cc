#include "profile_command.h"
#include "exit_codes.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "kforge/app/setup.h"
#include "kforge/core/files.h"
#include "kforge/eval/profile_capture.h"
#include "kforge/profile/capture_files.h"
#include "kforge/profile/reducer.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

struct ProfileArgs {
  std::string task;
  std::string candidate;
  std::string target;
  std::string tool;
  bool raw = false;
  bool reference = false;
  int calls = 3;
  std::string out;
  std::vector<std::string> overrides;
  std::string from;  // summarise the raw files of an earlier capture
};

int RunProfile(const ProfileArgs& args) {
  auto fail = [](const std::string& message, int code) {
    fmt::print(stderr, "kforge profile: {}\n", message);
    return code;
  };
  if (!args.from.empty()) {
    auto tool = profile::ParseToolName(args.tool.empty() ? "ncu" : args.tool);
    if (!tool) return fail(fmt::format("--tool {}: use ncu, nsys, torch or opencl", args.tool), 2);
    auto parsed = profile::ParseCaptureFiles(*tool, args.from);
    if (!parsed) return fail(parsed.error().message, 2);
    auto peaks = profile::DatasheetPeaks(parsed->device);
    auto summary = profile::Summarize(*parsed, peaks);
    fmt::print("{}", summary.text);
    fmt::print(stderr, "kforge profile: summary of about {} tokens{}\n", summary.estimated_tokens,
               peaks.facts ? "; device peaks: " + peaks.source : "; device peaks unknown");
    return 0;
  }
  if (args.task.empty() || args.target.empty())
    return fail("give TASK and --target (or --from DIR)", 2);
  auto task = LoadTask(args.task);
  if (!task) return fail(task.error().message, 2);
  if (auto added = AddOverrides(*task, args.overrides); !added) {
    return fail(added.error().message, 2);
  }
  if (!args.reference && args.candidate.empty()) {
    return fail("give a CANDIDATE file, or --reference to profile the task's reference Model", 2);
  }
  if (!args.reference && !fs::exists(args.candidate)) {
    return fail(fmt::format("candidate {} does not exist", args.candidate), 2);
  }
  // The composition root: target, backend, compile service, evaluator options. A target that
  // cannot run here is one line (exit 3).
  app::RunConfig config;
  config.kind = store::RunKind::kEval;
  config.target = args.target;
  config.profile = false;
  app::SetupOptions setup;
  setup.probe = true;
  auto root = app::Setup::Build(config, setup);
  if (!root) return fail(root.error().error.message, root.error().user_input ? 2 : 3);
  const Backend* backend = &(*root)->backend();
  const Target* target = &(*root)->target();
  ProfileCaptureOptions options;
  options.tool = DefaultProfileTool(*backend);
  if (!args.tool.empty()) {
    auto tool = profile::ParseToolName(args.tool);
    if (!tool) return fail(fmt::format("--tool {}: use ncu, nsys, torch or opencl", args.tool), 2);
    options.tool = *tool;
  }
  options.calls = args.calls;
  options.reference = args.reference;
  options.output_dir = args.out.empty()
                           ? fs::temp_directory_path() / fmt::format("kforge-profile-{}", ::getpid())
                           : fs::path(args.out);
  options.output_dir = fs::absolute(options.output_dir);
  fmt::print(stderr, "kforge profile: {} under {} on {} (raw outputs in {})\n",
             args.reference ? "the reference" : args.candidate, profile::ToolName(options.tool),
             target->ToString(), options.output_dir.string());
  auto capture = CaptureProfile((*root)->compiler(), (*root)->eval_options(), *task, *backend,
                                args.candidate, options);
  if (!capture) {
    const bool usage = capture.error().code == ErrorCode::kInvalidArgument ||
                       capture.error().code == ErrorCode::kUnavailable;
    return fail(capture.error().message, usage ? 2 : 3);
  }
  if (capture->status != "ok") {
    fmt::print(stderr, "kforge profile: the profiled run failed: {}\n{}\n{}\n", capture->status,
               capture->diagnostics, capture->log);
    return 1;
  }
  if (args.raw) {
    for (const auto& f : capture->files) {
      if (f.extension() == ".ncu-rep" || f.extension() == ".nsys-rep") {
        fmt::print("# {} (binary report, kept)\n", f.string());
        continue;
      }
      auto text = ReadFile(f);
      fmt::print("# {}\n{}\n", f.string(), text ? *text : text.error().message);
    }
    return 0;
  }
  auto peaks = profile::DatasheetPeaks(capture->profile->device);
  auto summary = profile::Summarize(*capture->profile, peaks);
  fmt::print("{}", summary.text);
  fmt::print(stderr, "kforge profile: summary of about {} tokens{}\n", summary.estimated_tokens,
             peaks.facts ? "; device peaks: " + peaks.source : "; device peaks unknown");
  return 0;
}

}  // namespace

void AddProfileCommand(CLI::App& app) {
  auto args = std::make_shared<ProfileArgs>();
  auto* cmd = app.add_subcommand(
      "profile",
      "Run a candidate (or --reference, the task's Model) under a profiler in a separate, untimed "
      "pass and print a summary of at most about 1,000 tokens: bottleneck, speed of light, "
      "occupancy, stalls, launch overhead, the tool's hints. Correctness is not checked here "
      "(kforge eval does that).\n"
      "Tools: ncu (NVIDIA CUDA targets, --clock-control none), nsys, torch (torch.profiler in the "
      "runner, any target), opencl (event profiling, OpenCL targets).");
  cmd->footer(ExitCodesFooter("profile"));
  cmd->add_option("task", args->task, "task: a problem file, FILE.jsonl#N or kernelbench:levelL#N");
  cmd->add_option("candidate", args->candidate, "the candidate's source file");
  cmd->add_option("--target,-t", args->target, "target, e.g. nvidia/cuda, cpu/cpp, cpu/opencl");
  cmd->add_option("--from", args->from,
                  "summarise the raw files an earlier run kept in this folder (--out) for --tool "
                  "(default ncu) instead of profiling");
  cmd->add_option("--tool", args->tool,
                  "ncu | nsys | torch | opencl (default: ncu on CUDA targets where it is "
                  "installed, opencl on OpenCL targets, else torch)");
  cmd->add_flag("--raw", args->raw, "print the tool's raw exports instead of the summary");
  cmd->add_flag("--reference", args->reference, "profile the task's reference Model instead");
  cmd->add_option("--calls", args->calls, "profiled calls after one warm-up (ncu: always 1)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--out", args->out, "folder for the raw outputs (default: a new temporary one)");
  cmd->add_option("--set", args->overrides, "override a task global, NAME=VALUE (repeatable)")
      ->allow_extra_args(false);  // one NAME=VALUE per --set: a candidate after it stays a candidate
  cmd->callback([args] {
    const int code = RunProfile(*args);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace kforge
