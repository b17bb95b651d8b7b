#include "kforge/exec/slurm_executor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <condition_variable>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "kforge/core/files.h"
#include "kforge/core/subprocess.h"

namespace kforge::exec {
namespace {

namespace fs = std::filesystem;

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n')) s.erase(0, 1);
  return s;
}

}  // namespace

CommandRunner SystemCommandRunner() {
  return [](const std::vector<std::string>& argv) -> Result<CommandOutcome> {
    if (FindProgram(argv.at(0)).empty()) {
      return Unavailable(fmt::format(
          "{} is not on PATH: the Slurm executor needs Slurm's client commands (sbatch, squeue, "
          "scancel) on this machine",
          argv.at(0)));
    }
    ProcessSpec spec;
    spec.argv = argv;
    spec.timeout = std::chrono::seconds(60);
    auto result = RunProcess(spec);
    if (!result) return std::unexpected(result.error());
    return CommandOutcome{result->exit_code, result->stdout_text, result->stderr_text};
  };
}

std::string ExplainSbatchError(const std::string& text) {
  std::string why = fmt::format("the cluster refused the job array: sbatch said: {}", Trim(text));
  if (text.find("invalid partition") != std::string::npos ||
      text.find("Invalid partition") != std::string::npos) {
    why += "\n  fix: name an existing partition with --partition (`sinfo -s` lists them)";
  } else if (text.find("gres") != std::string::npos || text.find("Gres") != std::string::npos ||
             text.find("generic resource") != std::string::npos) {
    why +=
        "\n  fix: the cluster has no GPUs configured as generic resources (GresTypes=gpu and "
        "Gres= in slurm.conf, gres.conf on the nodes); use a GPU partition, or --gpus-per-task "
        "0 for a CPU target";
  } else if (text.find("Unable to contact") != std::string::npos ||
             text.find("Connection refused") != std::string::npos) {
    why += "\n  fix: slurmctld is not reachable from here (`scontrol ping`)";
  } else if (text.find("Requested node configuration is not available") != std::string::npos) {
    why +=
        "\n  fix: no node has what the array asks for (CPUs, GPUs, time); lower --cpus-per-task "
        "or pick another partition";
  }
  return why;
}

SlurmExecutor::SlurmExecutor(SlurmOptions options, CommandRunner run)
    : options_(std::move(options)), run_(std::move(run)) {}

fs::path SlurmExecutor::ElementDir(int index) const {
  return options_.work_dir / "tasks" / std::to_string(index);
}
fs::path SlurmExecutor::MarkerPath(int index) const { return ElementDir(index) / "exit.json"; }

std::optional<ElementEnd> SlurmExecutor::ReadMarker(int index) const {
  auto text = ReadFile(MarkerPath(index));
  if (!text) return std::nullopt;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  return j.value("status", "") == "done" ? ElementEnd::kDone : ElementEnd::kInterrupted;
}

Result<std::string> SlurmExecutor::Submit(const std::vector<int>& indices) {
  KFORGE_RETURN_IF_ERROR(MakeDirs(options_.work_dir / "logs"));
  std::string script = "#!/bin/sh\n# Written by kforge bench: one element of the job array.\nexec";
  for (const auto& a : options_.element_argv) {
    script.push_back(' ');
    script.append(ShellQuote(a));
  }
  script += " \"$SLURM_ARRAY_TASK_ID\"\n";
  const fs::path script_path = options_.work_dir / "element.sh";
  KFORGE_RETURN_IF_ERROR(WriteFile(script_path, script));
  fs::permissions(script_path, fs::perms::owner_all | fs::perms::group_read |
                                   fs::perms::group_exec | fs::perms::others_read |
                                   fs::perms::others_exec);
  for (int i : indices) {
    std::error_code ec;
    fs::remove(MarkerPath(i), ec);  // a resubmitted element writes it again
  }
  std::vector<std::string> argv = {
      "sbatch",
      "--parsable",
      fmt::format("--array={}", fmt::join(indices, ",")),
      fmt::format("--job-name={}", options_.job_name),
      fmt::format("--output={}", (options_.work_dir / "logs" / "%A_%a.out").string()),
      fmt::format("--cpus-per-task={}", options_.cpus_per_element)};
  if (!options_.partition.empty()) argv.push_back("--partition=" + options_.partition);
  if (options_.gpus_per_element > 0) {
    argv.push_back(fmt::format("--gres=gpu:{}", options_.gpus_per_element));
  }
  if (!options_.time_limit.empty()) argv.push_back("--time=" + options_.time_limit);
  for (const auto& a : options_.extra_sbatch_args) argv.push_back(a);
  argv.push_back(script_path.string());
  auto out = run_(argv);
  if (!out) return std::unexpected(out.error());
  if (out->exit_code != 0) {
    return Unavailable(ExplainSbatchError(out->err.empty() ? out->out : out->err));
  }
  // --parsable prints "jobid" or "jobid;cluster".
  std::string id = Trim(out->out);
  if (auto semi = id.find(';'); semi != std::string::npos) id = id.substr(0, semi);
  if (id.empty()) return Internal("sbatch printed no job id");
  spdlog::info("slurm: submitted job array {} for elements {}", id, fmt::join(indices, ","));
  return id;
}

Result<std::map<int, std::string>> SlurmExecutor::Active(const std::string& job_id) {
  auto out = run_({"squeue", "-h", "-r", "-j", job_id, "-o", "%i|%T"});
  if (!out) return std::unexpected(out.error());
  std::map<int, std::string> active;
  if (out->exit_code != 0) {
    // A job that left the controller's memory is "Invalid job id": nothing is active.
    if (out->err.find("Invalid job id") != std::string::npos) return active;
    return Unavailable(fmt::format("squeue failed: {}", Trim(out->err)));
  }
  std::istringstream lines(out->out);
  std::string line;
  while (std::getline(lines, line)) {
    const auto bar = line.find('|');
    const auto under = line.find('_');
    if (bar == std::string::npos || under == std::string::npos || under > bar) continue;
    const std::string idx = line.substr(under + 1, bar - under - 1);
    if (idx.empty() || idx.front() == '[') {
      // Pending elements not yet split out: "123_[0-3]".
      std::string range = idx.substr(1, idx.find(']') - 1);
      std::istringstream parts(range);
      std::string part;
      while (std::getline(parts, part, ',')) {
        const auto dash = part.find('-');
        try {
          const int lo = std::stoi(part.substr(0, dash));
          const int hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
          for (int i = lo; i <= hi; ++i) active[i] = line.substr(bar + 1);
        } catch (...) {
        }
      }
      continue;
    }
    try {
      active[std::stoi(idx)] = line.substr(bar + 1);
    } catch (...) {
    }
  }
  return active;
}

std::string SlurmExecutor::FinalState(const std::string& job_id, int index) {
  const std::string id = fmt::format("{}_{}", job_id, index);
  if (auto out = run_({"sacct", "-n", "-P", "-X", "-j", id, "-o", "State"});
      out && out->exit_code == 0 && !Trim(out->out).empty()) {
    std::string state = Trim(out->out);
    return state.substr(0, state.find('\n'));
  }
  if (auto out = run_({"scontrol", "-o", "show", "job", id}); out && out->exit_code == 0) {
    const auto pos = out->out.find("JobState=");
    if (pos != std::string::npos) {
      const auto end = out->out.find(' ', pos);
      return out->out.substr(pos + 9, end == std::string::npos ? end : end - pos - 9);
    }
  }
  return "UNKNOWN";
}

Result<std::vector<ElementResult>> SlurmExecutor::Run(
    const std::vector<int>& indices, const std::function<void(int, ElementEnd)>& on_end,
    std::stop_token stop) {
  std::map<int, ElementResult> results;
  std::map<int, std::string> job_of;  // element -> job id of its current submission
  std::set<int> pending(indices.begin(), indices.end());
  for (int i : indices) {
    ElementResult r;
    r.index = i;
    results[i] = r;
  }

  auto submit = [&](const std::vector<int>& which) -> Status {
    auto id = Submit(which);
    if (!id) return std::unexpected(id.error());
    for (int i : which) {
      job_of[i] = *id;
      ++results[i].submissions;
    }
    return Ok();
  };
  if (pending.empty()) return std::vector<ElementResult>{};
  KFORGE_RETURN_IF_ERROR(submit(indices));

  while (!pending.empty()) {
    if (stop.stop_requested()) {
      std::set<std::string> jobs;
      for (int i : pending) jobs.insert(job_of[i]);
      for (const auto& j : jobs) (void)run_({"scancel", j});
      spdlog::warn("slurm: stopped; cancelled job(s) {}", fmt::join(jobs, ","));
      break;
    }
    std::map<std::string, std::map<int, std::string>> active_by_job;
    for (int i : pending) {
      const std::string& job = job_of[i];
      if (active_by_job.contains(job)) continue;
      auto active = Active(job);
      if (!active) return std::unexpected(active.error());
      active_by_job[job] = *active;
    }
    std::vector<int> resubmit;
    for (auto it = pending.begin(); it != pending.end();) {
      const int i = *it;
      const std::string& job = job_of[i];
      if (active_by_job[job].contains(i)) {
        results[i].last_state = active_by_job[job][i];
        ++it;
        continue;
      }
      if (auto end = ReadMarker(i)) {
        results[i].end = *end;
        results[i].last_state = FinalState(job, i);
        if (on_end) on_end(i, *end);
        it = pending.erase(it);
        continue;
      }
      const std::string state = FinalState(job, i);
      results[i].last_state = state;
      if (results[i].submissions <= options_.max_resubmits) {
        spdlog::warn("slurm: element {} (job {}_{}) ended without a result ({}); resubmitting", i,
                     job, i, state);
        fmt::print(stderr, "slurm: element {} ended without a result ({}); resubmitting ({} of {})\n",
                   i, state, results[i].submissions, options_.max_resubmits);
        resubmit.push_back(i);
        ++it;
      } else {
        results[i].end = ElementEnd::kLost;
        fmt::print(stderr,
                   "slurm: element {} lost after {} submission(s) (last state {}); its log: {}\n",
                   i, results[i].submissions, state,
                   (options_.work_dir / "logs" / fmt::format("{}_{}.out", job, i)).string());
        if (on_end) on_end(i, ElementEnd::kLost);
        it = pending.erase(it);
      }
    }
    if (!resubmit.empty()) KFORGE_RETURN_IF_ERROR(submit(resubmit));
    if (!pending.empty()) {
      std::mutex m;
      std::unique_lock lock(m);
      std::condition_variable_any cv;
      cv.wait_for(lock, stop, options_.poll_interval, [] { return false; });
    }
  }
  std::vector<ElementResult> out;
  for (int i : indices) {
    if (!pending.contains(i)) out.push_back(results[i]);
  }
  return out;
}

}  // namespace kforge::exec
