#include "kforge/eval/task_check.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <ctime>
#include <nlohmann/json.hpp>
#include <random>

#include "kforge/core/files.h"
#include "runner_process.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Where the check failed, said the way a user finds it: a file's path and line, or the dataset
// entry and the line of its code.
std::string Location(const TaskProblem& p) {
  const bool file = p.origin.ends_with(".py");
  if (!p.line) return p.origin;
  return file ? fmt::format("{}:{}", p.origin, *p.line)
              : fmt::format("{}, line {} of its code", p.origin, *p.line);
}

}  // namespace

std::string TaskProblem::Describe() const {
  std::string where = stage;
  if (!function.empty() && function != "<module>" && stage != function) {
    where = fmt::format("in {}, {}", function, stage);
  }
  return fmt::format("{}: {} ({})", Location(*this), error, where);
}

Result<std::vector<TaskProblem>> CheckTasks(const std::vector<Task>& tasks,
                                            const Backend& backend, const EvalOptions& options) {
  std::vector<TaskProblem> problems;
  if (tasks.empty()) return problems;
  const fs::path work_root = options.work_root.empty() ? DefaultWorkRoot() : options.work_root;
  auto runner_dir = InstallRunner(work_root);
  if (!runner_dir) return std::unexpected(runner_dir.error());
  std::random_device rd;
  const fs::path scratch =
      work_root / fmt::format("task-check-{:%Y%m%d-%H%M%S}-{:04x}",
                              fmt::gmtime(std::time(nullptr)), rd() & 0xffff);
  KFORGE_RETURN_IF_ERROR(MakeDirs(scratch));
  json job_tasks = json::array();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const fs::path file = scratch / fmt::format("task-{}.py", i);
    KFORGE_RETURN_IF_ERROR(WriteFile(file, tasks[i].source));
    json overrides = json::object();
    for (const auto& o : tasks[i].overrides) {
      overrides[o.name] = json::parse(o.value_json, nullptr, false);
    }
    job_tasks.push_back(
        {{"name", tasks[i].name}, {"source_file", file.string()}, {"overrides", overrides}});
  }
  // The tasks' own code, as in the reference phase: KForge's user, sandboxed, the scratch folder
  // its one writable place, the memory limit of CPU targets.
  SandboxPolicy policy;
  policy.scratch_dir = scratch;
  policy.drop_privileges = false;
  policy.visible_paths = {work_root};
  ResourceLimits limits;
  if (!backend.UsesAccelerator()) limits.address_space_bytes = options.memory_limit_bytes;
  RunnerLaunch launch{
      .job_file = scratch / "task-check-job.json",
      .job_json = json{{"protocol", 1},
                       {"phase", "task_check"},
                       {"device", backend.RunnerDevice()},
                       {"tasks", job_tasks}}
                      .dump(),
      .preload = "",
      .deadline = nullptr,
      .timeout = options.reference_timeout,
      .wrapper = {},
      .sandbox = nullptr,
      .scratch_quota = nullptr,
      .pid = nullptr};
  auto run = RunRunner(launch, *runner_dir, scratch, policy, limits, {});
  std::error_code ec;
  fs::remove_all(scratch, ec);
  if (!run) return std::unexpected(run.error());
  const json doc = json::parse(run->process.result_text, nullptr, false);
  if (!doc.is_object() || doc.value("status", "") != "ok" || !doc.contains("tasks") ||
      !doc["tasks"].is_array() || doc["tasks"].size() != tasks.size()) {
    std::string why = doc.is_object() ? doc.value("diagnostics", "") : run->process.stderr_text;
    if (run->process.state == ProcessState::kTimedOut) {
      why = fmt::format("the check ran past {} s", options.reference_timeout.count());
    }
    return MakeError(ErrorCode::kInternal,
                     fmt::format("the task check gave no result (exit code {}): {}",
                                 run->process.exit_code, why.substr(0, 2000)));
  }
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const json& r = doc["tasks"][i];
    if (r.value("ok", false)) continue;
    TaskProblem p;
    p.task_name = tasks[i].name;
    p.origin = tasks[i].origin;
    if (r.contains("line") && r["line"].is_number_integer()) p.line = r["line"].get<int>();
    p.stage = r.value("stage", "");
    if (r.contains("function") && r["function"].is_string()) p.function = r["function"];
    p.error = r.value("error", "");
    problems.push_back(std::move(p));
  }
  return problems;
}

Status CheckTasksRun(const std::vector<Task>& tasks, const Backend& backend,
                     const EvalOptions& options) {
  auto problems = CheckTasks(tasks, backend, options);
  if (!problems) return std::unexpected(problems.error());
  if (problems->empty()) return Ok();
  std::vector<std::string> lines;
  for (const auto& p : *problems) {
    lines.push_back(fmt::format("task {} cannot run: {}; fix the task (no model was asked)",
                                p.task_name, p.Describe()));
  }
  return InvalidArgument(fmt::format("{}", fmt::join(lines, "\n")));
}

}  // namespace kforge
