#include "kforge/app/run_config.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace kforge::app {
namespace {

using nlohmann::json;

void WriteModelSource(json& j, const ModelSource& m) {
  j["model"] = m.model;
  j["analysis_model"] = m.analysis_model;
  j["models"] = m.models;
  j["record"] = m.record;
  j["record_note"] = m.record_note;
  j["replay"] = m.replay;
  j["replay_match"] = m.replay_match;
  j["inbox_wait"] = m.inbox_wait;
}

// Throws json::exception when `model` is missing or a field has the wrong type.
ModelSource ReadModelSource(const json& j) {
  ModelSource m;
  m.model = j.at("model").get<std::string>();
  m.analysis_model = j.value("analysis_model", "");
  m.models = j.value("models", std::vector<std::string>{});
  m.record = j.value("record", "");
  m.record_note = j.value("record_note", "");
  m.replay = j.value("replay", "");
  m.replay_match = j.value("replay_match", "exact");
  m.inbox_wait = j.value("inbox_wait", false);
  return m;
}

void ReadCommon(const json& j, RunConfig& c) {
  c.target = j.at("target").get<std::string>();
  c.models = ReadModelSource(j);
  c.iterations = j.value("iterations", c.iterations);
  c.samples = j.value("samples", 1);
  c.max_tokens = j.value("max_tokens", std::int64_t{0});
  c.max_cost = j.value("max_cost", 0.0);
  c.max_time_s = j.value("max_time_s", 0);
  c.runs_dir = j.value("runs_dir", "kforge-runs");
}

void ReadSlurm(const json& j, SlurmConfig& s) {
  s.partition = j.value("partition", "");
  s.gpus_per_task = j.value("gpus_per_task", -1);
  s.cpus_per_task = j.value("cpus_per_task", 2);
  s.max_resubmits = j.value("max_resubmits", 2);
  s.time_limit = j.value("time_limit", "");
  s.sbatch_args = j.value("sbatch_args", std::vector<std::string>{});
  s.poll_ms = j.value("poll_ms", 2000);
}

void ReadE2e(const json& j, E2eConfig& e) {
  e.model_file = j.at("model_file").get<std::string>();
  e.config = j.value("config", "tiny");
  e.top = j.value("top", 3);
  e.sites = j.value("sites", std::vector<std::string>{});
  e.seed = j.value("seed", 0);
  e.warmup_steps = j.value("warmup_steps", 3);
  e.timed_steps = j.value("timed_steps", 20);
  e.kernel_repeats = j.value("kernel_repeats", 50);
  e.phase_timeout_s = j.value("phase_timeout_s", 1800);
}

// Version 1 of `kforge run` (no kind), of `kforge bench` (kind "bench"), and the unversioned
// `kforge e2e` form (model_file, no version).
RunConfig FromEarlierForm(const json& j, int version) {
  RunConfig c;
  if (version == 0) {
    c.kind = store::RunKind::kE2e;
    c.iterations = 3;
    ReadCommon(j, c);
    ReadE2e(j, c.e2e);
    c.profile = !j.value("no_profile", false);
    return c;
  }
  if (j.value("kind", "") == "bench") {
    c.kind = store::RunKind::kBench;
    c.iterations = 3;
    ReadCommon(j, c);
    c.suite = j.at("suite").get<std::string>();
    c.jobs = j.value("jobs", 0);
    c.devices = j.value("devices", 0);
    c.executor = j.value("executor", "local");
    c.time = j.value("time", true);
    ReadSlurm(j, c.slurm);
    return c;
  }
  c.kind = store::RunKind::kRun;
  ReadCommon(j, c);
  c.task = j.at("task").get<std::string>();
  c.profile = !j.value("no_profile", false);
  c.reference_impl = j.value("reference_impl", "");
  c.reference_target = j.value("reference_target", "");
  return c;
}

}  // namespace

std::string RunConfig::ToJson() const {
  json j{{"config_version", kVersion},
         {"kind", std::string(store::ToString(kind))},
         {"target", target},
         {"iterations", iterations},
         {"samples", samples},
         {"profile", profile},
         {"time", time},
         {"max_tokens", max_tokens},
         {"max_cost", max_cost},
         {"max_time_s", max_time_s},
         {"runs_dir", runs_dir}};
  WriteModelSource(j, models);
  switch (kind) {
    case store::RunKind::kRun:
      j["task"] = task;
      j["reference_impl"] = reference_impl;
      j["reference_target"] = reference_target;
      break;
    case store::RunKind::kBench:
      j["suite"] = suite;
      j["jobs"] = jobs;
      j["devices"] = devices;
      j["executor"] = executor;
      j["slurm"] = {{"partition", slurm.partition},
                    {"gpus_per_task", slurm.gpus_per_task},
                    {"cpus_per_task", slurm.cpus_per_task},
                    {"max_resubmits", slurm.max_resubmits},
                    {"time_limit", slurm.time_limit},
                    {"sbatch_args", slurm.sbatch_args},
                    {"poll_ms", slurm.poll_ms}};
      break;
    case store::RunKind::kE2e:
      j["e2e"] = {{"model_file", e2e.model_file},
                  {"config", e2e.config},
                  {"top", e2e.top},
                  {"sites", e2e.sites},
                  {"seed", e2e.seed},
                  {"warmup_steps", e2e.warmup_steps},
                  {"timed_steps", e2e.timed_steps},
                  {"kernel_repeats", e2e.kernel_repeats},
                  {"phase_timeout_s", e2e.phase_timeout_s}};
      break;
    case store::RunKind::kEval:
      break;
  }
  return j.dump();
}

Result<RunConfig> RunConfig::FromJson(const std::string& text, const std::string& where) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) {
    return ParseError(fmt::format("{}: the stored run configuration is not a JSON object", where));
  }
  const int version = j.value("config_version", j.contains("model_file") ? 0 : -1);
  if (version != 0 && version != 1 && version != kVersion) {
    return ParseError(fmt::format(
        "{}: the stored run configuration has version {}; this kforge reads versions 1 to {}",
        where, version, kVersion));
  }
  try {
    if (version != kVersion) return FromEarlierForm(j, version);
    RunConfig c;
    auto kind = store::ParseRunKind(j.at("kind").get<std::string>());
    if (!kind) return ParseError(fmt::format("{}: {}", where, kind.error().message));
    c.kind = *kind;
    ReadCommon(j, c);
    c.profile = j.value("profile", true);
    c.time = j.value("time", true);
    c.task = j.value("task", "");
    c.reference_impl = j.value("reference_impl", "");
    c.reference_target = j.value("reference_target", "");
    c.suite = j.value("suite", "");
    c.jobs = j.value("jobs", 0);
    c.devices = j.value("devices", 0);
    c.executor = j.value("executor", "local");
    if (j.contains("slurm")) ReadSlurm(j.at("slurm"), c.slurm);
    if (j.contains("e2e")) ReadE2e(j.at("e2e"), c.e2e);
    return c;
  } catch (const json::exception& e) {
    return ParseError(fmt::format("{}: stored run configuration: {}", where, e.what()));
  }
}

}  // namespace kforge::app
