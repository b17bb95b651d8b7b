#include "kforge/e2e/phases.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "kforge/core/files.h"
#include "kforge/core/host_gate.h"
#include "kforge/core/log.h"
#include "kforge/core/subprocess.h"
#include "kforge/target/probe.h"

extern char** environ;

namespace kforge::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Our environment with PYTHONPATH = KForge's runner, then $KFORGE_RUNNER_PYTHONPATH (carried
// wheels such as transformers), then any PYTHONPATH we had.
std::vector<std::string> PhaseEnvironment() {
  std::string pythonpath = (KforgeHome() / "runner").string();
  if (const char* extra = std::getenv("KFORGE_RUNNER_PYTHONPATH"); extra && *extra)
    pythonpath += std::string(":") + extra;
  if (const char* own = std::getenv("PYTHONPATH"); own && *own)
    pythonpath += std::string(":") + own;
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).starts_with("PYTHONPATH=")) continue;
    env.emplace_back(*e);
  }
  env.push_back("PYTHONPATH=" + pythonpath);
  return env;
}

// Runs phase `name` with `job`; returns its result document, or the error to report.
Result<json> RunPhase(const std::string& name, const json& job, const PhaseRun& run) {
  if (RunnerPython().empty()) {
    return Unavailable(
        "no Python with torch for the runner: apt-get install python3-torch (or set "
        "KFORGE_PYTHON)");
  }
  if (auto made = MakeDirs(run.dir); !made) return std::unexpected(made.error());
  const fs::path job_file = run.dir / (name + "-job.json");
  const fs::path log_file = run.dir / (name + ".log");
  if (auto written = WriteFile(job_file, job.dump(2)); !written) {
    return std::unexpected(written.error());
  }
  ProcessSpec spec;
  spec.argv = {RunnerPython(),    "-m",          "kforge_runner.e2e",      "--job",
               job_file.string(), "--result-fd", std::to_string(kResultFd)};
  spec.env = PhaseEnvironment();
  spec.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(run.timeout);
  spec.result_pipe = true;
  spdlog::info("e2e {}: {}", name, fmt::join(spec.argv, " "));
  // Both phases time the model: no compile of this or another KForge process runs beside them.
  auto gate = HostGate::Default().Timing(job.value("device", std::string("cpu")));
  if (!gate) return std::unexpected(gate.error());
  auto process = RunProcess(spec);
  gate = HostGate::Lease();
  if (!process) return std::unexpected(process.error());
  (void)WriteFile(log_file, process->stdout_text + process->stderr_text);
  if (process->state == ProcessState::kTimedOut) {
    return TimeoutError(fmt::format("the e2e {} phase ran past {} s (log: {})", name,
                                    run.timeout.count(), log_file.string()));
  }
  auto result = json::parse(process->result_text, nullptr, false);
  if (!result.is_object()) {
    return Internal(
        fmt::format("the e2e {} phase ended ({}, exit {}, signal {}) without a result; log: {}",
                    name, ProcessStateName(process->state), process->exit_code,
                    process->term_signal, log_file.string()));
  }
  (void)WriteFile(run.dir / (name + ".json"), result.dump(2));
  const std::string status = result.value("status", "");
  if (status == "ok") return result;
  const std::string diagnostics = result.value("diagnostics", "");
  if (status == "model_error" || status == "bad_sites") return InvalidArgument(diagnostics);
  return Internal(fmt::format("the e2e {} phase failed ({}): {}\nlog: {}", name, status,
                              diagnostics, log_file.string()));
}

std::map<int, double> ByBatch(const json& j) {
  std::map<int, double> out;
  if (!j.is_object()) return out;
  for (const auto& [key, value] : j.items()) out[std::stoi(key)] = value.get<double>();
  return out;
}

Site ParseSite(const json& s) {
  Site site;
  site.name = s.at("name").get<std::string>();
  site.class_name = s.value("class", "");
  site.instances = s.value("instances", std::vector<std::string>{});
  site.rank = s.value("rank", 0);
  site.total_seconds = s.value("total_seconds", 0.0);
  site.share = ByBatch(s.value("share", json::object()));
  site.extractable = s.value("extractable", false);
  site.reason = s.value("reason", "");
  site.selected = s.value("selected", false);
  if (s.contains("task_file") && s["task_file"].is_string())
    site.task_file = s["task_file"].get<std::string>();
  site.json = s.dump();
  return site;
}

}  // namespace

Result<Profile> ProfileModel(const ProfileRequest& request, const PhaseRun& run) {
  const json job = {{"phase", "e2e_profile"},   {"model_file", request.model_file.string()},
                    {"config", request.config}, {"device", request.device},
                    {"seed", request.seed},     {"top", request.top},
                    {"sites", request.sites},   {"tasks_dir", request.tasks_dir.string()}};
  auto result = RunPhase("profile", job, run);
  if (!result) return std::unexpected(result.error());
  const json& r = *result;
  try {
    Profile p;
    p.implementation = r.value("implementation", "");
    p.policy = r.value("policy", "strict");
    p.batch_sizes = r.at("batch_sizes").get<std::vector<int>>();
    p.task_batch_size = r.at("task_batch_size").get<int>();
    p.step_seconds = ByBatch(r.at("step_seconds"));
    for (const auto& o : r.value("operators", json::array())) {
      p.operators.push_back({.name = o.value("name", ""),
                             .calls_per_step = o.value("calls_per_step", 0.0),
                             .self_cpu_seconds = o.value("self_cpu_seconds_per_step", 0.0),
                             .self_device_seconds = o.value("self_device_seconds_per_step", 0.0)});
    }
    for (const auto& s : r.at("sites")) p.sites.push_back(ParseSite(s));
    p.json = r.dump();
    return p;
  } catch (const json::exception& e) {
    return Internal(fmt::format("the e2e profile result is malformed: {}", e.what()));
  }
}

Result<Measurement> MeasureModel(const MeasureRequest& request, const PhaseRun& run) {
  json sites = json::array();
  for (const auto& s : request.site_json) sites.push_back(json::parse(s));
  json kernels = json::object();
  for (const auto& [name, path] : request.kernels) kernels[name] = path.string();
  const json job = {{"phase", "e2e_measure"},
                    {"model_file", request.model_file.string()},
                    {"config", request.config},
                    {"device", request.device},
                    {"seed", request.seed},
                    {"sites", sites},
                    {"kernels", kernels},
                    {"namespace", request.op_namespace},
                    {"warmup_steps", request.warmup_steps},
                    {"timed_steps", request.timed_steps},
                    {"kernel_repeats", request.kernel_repeats}};
  auto result = RunPhase("measure", job, run);
  if (!result) return std::unexpected(result.error());
  const json& r = *result;
  try {
    Measurement m;
    m.implementation = r.value("implementation", "");
    m.policy = r.value("policy", "");
    m.tolerance = r.at("tolerance").value("atol", 0.0);
    m.torch_version = r.value("torch", "");
    if (auto limit = r.find("dynamo_recompile_limit");
        limit != r.end() && limit->is_number_integer()) {
      m.dynamo_recompile_limit = limit->get<int>();
    }
    for (const char* name : {"eager", "compile", "eager+kforge", "compile+kforge"}) {
      const json& c = r.at("configurations").at(name);
      m.configurations.push_back(
          {.name = name, .available = c.value("available", false), .why = c.value("why", "")});
    }
    for (const auto& e : r.at("equivalence")) {
      m.equivalence.push_back(
          {.batch_size = e.at("batch_size").get<int>(),
           .configuration = e.at("configuration").get<std::string>(),
           .steps = e.value("steps", 0),
           .within_tolerance = e.value("within_tolerance", false),
           .same_greedy_tokens = e.value("same_greedy_tokens", false),
           .tokens_agree = e.value("tokens_agree", e.value("same_greedy_tokens", false)),
           .token_disagreements = e.value("token_disagreements", 0),
           .near_tie_disagreements = e.value("near_tie_disagreements", 0),
           .teacher_forced = e.value("teacher_forced", false),
           .max_abs_error = e.value("max_abs_error", 0.0),
           .max_rel_error = e.value("max_rel_error", 0.0),
           .worst_fraction_out = e.value("worst_fraction_out", 0.0)});
    }
    for (const auto& t : r.at("timing")) {
      m.timing.push_back({.batch_size = t.at("batch_size").get<int>(),
                          .configuration = t.at("configuration").get<std::string>(),
                          .median_s = t.at("median_s").get<double>(),
                          .p10_s = t.value("p10_s", 0.0),
                          .p90_s = t.value("p90_s", 0.0),
                          .tokens_per_s = t.at("tokens_per_s").get<double>(),
                          .samples = t.value("samples", 0),
                          .recompile_limit_hit = t.value("recompile_limit_hit", false)});
    }
    for (const auto& k : r.at("kernels")) {
      m.kernels.push_back({.site = k.at("site").get<std::string>(),
                           .batch_size = k.at("batch_size").get<int>(),
                           .original_median_s = k.at("original_median_s").get<double>(),
                           .kforge_median_s = k.at("kforge_median_s").get<double>(),
                           .speedup = k.at("speedup").get<double>(),
                           .original_back_to_back_s = k.value("original_back_to_back_s", 0.0),
                           .kforge_back_to_back_s = k.value("kforge_back_to_back_s", 0.0)});
    }
    for (const auto& [site, c] : r.at("coverage").items()) {
      m.coverage.push_back({.site = site,
                            .kernel_calls = c.value("kernel_calls", 0L),
                            .unrouted_calls = c.value("unrouted_calls", 0L)});
    }
    m.json = r.dump();
    return m;
  } catch (const json::exception& e) {
    return Internal(fmt::format("the e2e measure result is malformed: {}", e.what()));
  }
}

}  // namespace kforge::e2e
