#include "runner_protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace kforge {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json TaskJson(const fs::path& task_file, const Task& task) {
  json overrides = json::object();
  for (const auto& o : task.overrides) overrides[o.name] = json::parse(o.value_json);
  return {{"name", task.name}, {"source_file", task_file.string()}, {"overrides", overrides}};
}

// A manifest entry's file is absolute, or relative to the trial folder `dir/<folder>_K`, or to
// `dir`.
fs::path ResolveFile(const std::string& file, const fs::path& dir, int trial,
                     std::string_view folder = "trial") {
  fs::path p(file);
  if (p.is_absolute()) return p;
  fs::path in_trial = dir / fmt::format("{}_{}", folder, trial) / p;
  if (fs::exists(in_trial)) return in_trial;
  return dir / p;
}

// A file the untrusted candidate phase named: relative, no "..", and once resolved a regular file
// (not a symbolic link) whose real path lies inside `dir`'s real path.
Status CheckContained(const std::string& file, const fs::path& resolved, const fs::path& dir) {
  const fs::path named(file);
  bool dotdot = false;
  for (const auto& part : named) dotdot |= part == "..";
  if (named.is_absolute() || dotdot) {
    return MakeError(ErrorCode::kPermissionDenied, fmt::format("output file '{}' is outside the candidate's folder", file));
  }
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(resolved, ec))) return Ok();  // compared later: missing
  if (fs::is_symlink(fs::symlink_status(resolved, ec))) {
    return MakeError(ErrorCode::kPermissionDenied, fmt::format("output file '{}' is a symbolic link", file));
  }
  const fs::path real = fs::canonical(resolved, ec);
  const fs::path root = fs::canonical(dir, ec);
  if (ec) return ParseError(fmt::format("output file '{}' cannot be resolved", file));
  if (std::mismatch(root.begin(), root.end(), real.begin(), real.end()).first != root.end()) {
    return MakeError(ErrorCode::kPermissionDenied, fmt::format("output file '{}' is outside the candidate's folder", file));
  }
  return Ok();
}

Result<TensorFile> ParseEntry(const json& e, const fs::path& dir, int trial, bool contained,
                              std::string_view folder) {
  if (!e.is_object() || !e.contains("file") || !e.contains("dtype") || !e.contains("shape")) {
    return ParseError("tensor entry lacks file, dtype or shape");
  }
  TensorFile t;
  t.name = e.value("name", "");
  t.file = ResolveFile(e["file"].get<std::string>(), dir, trial, folder);
  if (contained) KFORGE_RETURN_IF_ERROR(CheckContained(e["file"].get<std::string>(), t.file, dir));
  t.dtype = e["dtype"].get<std::string>();
  t.shape = e["shape"].get<std::vector<std::int64_t>>();
  if (e.contains("scalar") && e["scalar"].is_string()) t.scalar = e["scalar"].get<std::string>();
  if (e.contains("key") && e["key"].is_string()) t.key = e["key"].get<std::string>();
  return t;
}

Result<std::vector<TensorFile>> ParseEntries(const json& array, const fs::path& dir, int trial,
                                             bool contained = false,
                                             std::string_view folder = "trial") {
  std::vector<TensorFile> out;
  if (!array.is_array()) return ParseError("tensor list is not an array");
  for (const auto& e : array) {
    auto t = ParseEntry(e, dir, trial, contained, folder);
    if (!t) return std::unexpected(t.error());
    out.push_back(std::move(*t));
  }
  return out;
}

// A reference trial or timing set (`folder` "trial" or "timing"): inputs, outputs and truth.
Result<ReferenceTrial> ParseReferenceTrial(const json& t, const fs::path& inputs_dir,
                                           const fs::path& outputs_dir, std::string_view folder) {
  ReferenceTrial trial;
  trial.index = t.value("index", 0);
  trial.distribution = t.value("distribution", "task");
  trial.notes = t.value("notes", "");
  auto inputs = ParseEntries(t.value("inputs", json::array()), inputs_dir, trial.index, false,
                             folder);
  auto outputs = ParseEntries(t.value("outputs", json::array()), outputs_dir, trial.index, false,
                              folder);
  if (!inputs) return std::unexpected(inputs.error());
  if (!outputs) return std::unexpected(outputs.error());
  trial.inputs = std::move(*inputs);
  trial.outputs = std::move(*outputs);
  if (auto truth = t.find("truth"); truth != t.end() && truth->is_array()) {
    if (truth->size() != trial.outputs.size()) {
      return ParseError("a reference trial's truth list does not match its outputs");
    }
    for (const auto& e : *truth) {
      if (e.is_null()) {
        trial.truth.emplace_back();
        continue;
      }
      auto entry = ParseEntry(e, outputs_dir, trial.index, false, folder);
      if (!entry) return std::unexpected(entry.error());
      trial.truth.emplace_back(std::move(*entry));
    }
  }
  return trial;
}

Result<json> ParseDocument(std::string_view text, std::string_view phase) {
  // The runner writes exactly one document; take the first line that parses.
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return ParseError(fmt::format("the {} runner's result is not a JSON object", phase));
  }
  if (doc.value("protocol", 0) != kRunnerProtocolVersion) {
    return ParseError(fmt::format("the {} runner speaks protocol {}, kforge speaks {}", phase,
                                  doc.value("protocol", 0), kRunnerProtocolVersion));
  }
  return doc;
}

json TimingOptionsJson(const TimingOptions& t) {
  return {{"min_samples", t.min_samples},
          {"min_seconds", t.min_seconds},
          {"max_seconds", t.max_seconds},
          {"target_rel_std", t.target_rel_std},
          {"warmup_seconds", t.warmup_seconds}};
}

TimingOutcome ParseTiming(const json& doc) {
  TimingOutcome out;
  if (!doc.contains("timing")) {
    out.error = "the runner reported no timing";
    return out;
  }
  const json& t = doc["timing"];
  if (!t.is_object()) {
    out.error = "the runner's timing is not an object";
    return out;
  }
  if (t.contains("error")) {
    out.error = t["error"].is_string() ? t["error"].get<std::string>() : t["error"].dump();
    return out;
  }
  try {
    TimingStats s;
    s.clock = t.at("clock").get<std::string>();
    s.median_s = t.at("median_s").get<double>();
    s.mean_s = t.at("mean_s").get<double>();
    s.min_s = t.at("min_s").get<double>();
    s.p10_s = t.at("p10_s").get<double>();
    s.p90_s = t.at("p90_s").get<double>();
    s.rel_std = t.at("rel_std").get<double>();
    s.samples = t.at("samples").get<int>();
    s.stopped_by = t.at("stopped_by").get<std::string>();
    s.discarded = t.value("discarded", 0);
    if (t.contains("sm_clock_mhz") && t["sm_clock_mhz"].is_number()) {
      s.sm_clock_mhz = t["sm_clock_mhz"].get<int>();
    }
    auto side = [&t](const char* key) -> std::optional<double> {
      if (!t.contains(key) || !t[key].is_object()) return std::nullopt;
      const json& f = t[key];
      if (!f.contains("median_s") || !f["median_s"].is_number()) return std::nullopt;
      return f["median_s"].get<double>();
    };
    s.warm_median_s = side("warm");
    s.graph_replay_median_s = side("graph_replay");
    s.host_sync_median_s = side("host_sync");
    if (t.contains("graph_replay") && t["graph_replay"].is_object()) {
      s.graph_replay_error = t["graph_replay"].value("error", "");
    }
    if (t.contains("host_sync") && t["host_sync"].is_object()) {
      s.side_stream_suspect = t["host_sync"].value("side_stream_suspect", false);
    }
    if (t.contains("cold")) s.cold_json = t["cold"].dump();
    if (s.samples < 1 || !(s.median_s >= 0)) {
      out.error = "the runner's timing has no samples or a negative median";
      return out;
    }
    out.stats = std::move(s);
  } catch (const json::exception& e) {
    out.error = fmt::format("malformed timing in the runner's result: {}", e.what());
  }
  return out;
}

}  // namespace

Result<std::string> UnsealResult(std::string_view text, std::string_view seal) {
  const std::size_t newline = text.find('\n');
  if (newline == std::string_view::npos || newline + 1 != text.size()) {
    return ParseError(fmt::format(
        "the result channel carried {} instead of exactly one line: something besides the runner "
        "wrote to it", newline == std::string_view::npos ? "no complete line" : "more than one line"));
  }
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return ParseError("the result channel carried a line that is not a JSON object");
  }
  if (!doc.contains("seal") || !doc["seal"].is_string() || doc["seal"].get<std::string>() != seal) {
    return ParseError("the result document lacks the job's seal: it was not written by the runner "
                      "(a forged result on an inherited descriptor)");
  }
  doc.erase("seal");
  return doc.dump() + "\n";
}

TimingOutcome ParseTimingField(std::string_view json_text) {
  json doc = json::object();
  if (!json_text.empty()) {
    json t = json::parse(json_text, nullptr, false);
    if (t.is_discarded()) return {std::nullopt, "the runner's timing is not JSON"};
    doc["timing"] = std::move(t);
  }
  return ParseTiming(doc);
}

std::string ReferenceJobJson(const ReferenceJob& job) {
  json trials = json::array();
  for (const auto& t : job.trials) {
    trials.push_back({{"seed", t.seed},
                      {"distribution", t.distribution},
                      {"purpose", TrialPurposeName(t.purpose)}});
  }
  json j = {{"protocol", kRunnerProtocolVersion},
            {"phase", "reference"},
            {"task", TaskJson(job.task_file, *job.task)},
            {"device", job.device},
            {"init_seed", job.init_seed},
            {"trials", trials},
            {"tolerance", {{"atol", job.tolerance.atol}, {"rtol", job.tolerance.rtol}}},
            {"inputs_dir", job.inputs_dir.string()},
            {"outputs_dir", job.outputs_dir.string()},
            {"truth", job.truth},
            {"precision_policy", PrecisionPolicyName(job.policy)}};
  if (job.timing) {
    j["timing"] = TimingOptionsJson(*job.timing);
    if (!job.baselines.empty()) j["baselines"] = job.baselines;
  }
  return j.dump(2);
}

// The candidate job as the `phase` phase's job object.
json CandidateJobObject(const CandidateJob& job, const char* phase) {
  json trials = json::array();
  for (std::size_t k = 0; k < job.expected_outputs.size(); ++k) {
    json outputs = json::array();
    for (const auto& t : job.expected_outputs[k]) {
      outputs.push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}});
    }
    trials.push_back({{"index", k}, {"outputs", outputs}});
  }
  json candidate = {{"kind", job.kind}, {"backend", job.backend}};
  if (!job.artifact.empty()) candidate["artifact"] = job.artifact.string();
  if (!job.source_file.empty()) candidate["source_file"] = job.source_file.string();
  if (!job.opencl_platform.empty()) candidate["opencl_platform"] = job.opencl_platform;
  if (!job.stream_handle.empty()) candidate["stream_handle"] = job.stream_handle;
  json j = {{"protocol", kRunnerProtocolVersion},
            {"phase", phase},
            {"task", TaskJson(job.task_file, *job.task)},
            {"device", job.device},
            {"candidate", candidate},
            {"init_seed", job.init_seed},
            {"inputs_dir", job.inputs_dir.string()},
            {"outputs_dir", job.outputs_dir.string()},
            {"trials", trials}};
  return j;
}

std::string CandidateJobJson(const CandidateJob& job) {
  json j = CandidateJobObject(job, "candidate");
  if (job.timing) j["timing"] = TimingOptionsJson(*job.timing);
  return j.dump(2);
}

std::string ProfileJobJson(const ProfileJob& job) {
  json j = CandidateJobObject(job.candidate, "profile");
  j["profile"] = {
      {"tool", job.tool}, {"calls", job.calls}, {"output_dir", job.output_dir.string()}};
  return j.dump(2);
}

ProfileResult ParseProfileResult(std::string_view text) {
  const json result = json::parse(text, nullptr, false);
  if (result.is_discarded() || !result.is_object()) return {"malformed_result", ""};
  ProfileResult out{"malformed_result", ""};
  if (auto it = result.find("status"); it != result.end() && it->is_string()) out.status = *it;
  if (auto it = result.find("diagnostics"); it != result.end() && it->is_string()) {
    out.diagnostics = *it;
  }
  return out;
}

// A result's `steps` object (diagnostic step times) as JSON text: numbers only, at most 32 short
// names; anything else is dropped (a candidate's process could have written it).
std::string StepsJson(const json& doc) {
  auto it = doc.find("steps");
  if (it == doc.end() || !it->is_object()) return "";
  json steps = json::object();
  for (const auto& [name, value] : it->items()) {
    if (steps.size() >= 32) break;
    if (value.is_number() && name.size() <= 40) steps[name] = value.get<double>();
  }
  return steps.dump();
}

Result<ReferenceResult> ParseReferenceResult(std::string_view text, const fs::path& inputs_dir,
                                             const fs::path& outputs_dir) {
  auto doc = ParseDocument(text, "reference");
  if (!doc) return std::unexpected(doc.error());
  try {
    ReferenceResult r;
    r.status = doc->value("status", "infra_error");
    r.diagnostics = doc->value("diagnostics", "");
    if (doc->contains("environment")) r.environment_json = (*doc)["environment"].dump();
    if (doc->contains("degenerate") && (*doc)["degenerate"].is_object()) {
      const json& d = (*doc)["degenerate"];
      r.degenerate.all_zero = d.value("all_zero", false);
      r.degenerate.mostly_zero = d.value("mostly_zero", false);
      r.degenerate.constant = d.value("constant", false);
      r.degenerate.constant_passes = d.value("constant_passes", false);
      r.degenerate.nondeterministic = d.value("nondeterministic", false);
      if (d.contains("reasons") && d["reasons"].is_array()) {
        for (const auto& line : d["reasons"]) {
          if (line.is_string()) r.degenerate.reasons.push_back(line.get<std::string>());
        }
      }
    }
    r.timing = ParseTiming(*doc);
    r.steps_json = StepsJson(*doc);
    if (doc->contains("baselines") && (*doc)["baselines"].is_object()) {
      for (const auto& [name, value] : (*doc)["baselines"].items()) {
        r.baselines[name] = ParseTiming(json{{"timing", value}});
        r.baselines_json[name] = value.dump();
      }
    }
    if (doc->contains("work") && (*doc)["work"].is_object()) {
      const json& w = (*doc)["work"];
      CallWork work;
      if (w.contains("flops") && w["flops"].is_number()) work.flops = w["flops"].get<double>();
      work.min_bytes = w.value("min_bytes", 0.0);
      if (w.contains("dtype") && w["dtype"].is_string()) work.dtype = w["dtype"].get<std::string>();
      r.work = work;
    }
    if (doc->contains("state") && (*doc)["state"].is_array()) {
      auto state = ParseEntries((*doc)["state"], inputs_dir / "state", -1);
      if (!state) return std::unexpected(state.error());
      r.state = std::move(*state);
    }
    for (const auto& t : doc->value("trials", json::array())) {
      auto trial = ParseReferenceTrial(t, inputs_dir, outputs_dir, "trial");
      if (!trial) return std::unexpected(trial.error());
      r.trials.push_back(std::move(*trial));
    }
    for (const auto& t : doc->value("timing_sets", json::array())) {
      auto set = ParseReferenceTrial(t, inputs_dir, outputs_dir, "timing");
      if (!set) return std::unexpected(set.error());
      r.timing_sets.push_back(std::move(*set));
    }
    for (const auto& s : doc->value("skipped", json::array())) {
      if (!s.is_object()) return ParseError("a skipped trial is not an object");
      if (s.value("purpose", "trial") != "trial") continue;
      r.skipped.push_back({s.value("distribution", ""), s.value("reason", "")});
    }
    if (auto truth = doc->find("truth"); truth != doc->end() && truth->is_object()) {
      r.truth_requested = true;
      r.truth_available = truth->value("available", false);
      r.truth_reason = truth->value("reason", "");
    }
    return r;
  } catch (const json::exception& e) {
    return ParseError(fmt::format("malformed reference result: {}", e.what()));
  }
}

Result<CandidateResult> ParseCandidateResult(std::string_view text, const fs::path& outputs_dir) {
  auto doc = ParseDocument(text, "candidate");
  if (!doc) return std::unexpected(doc.error());
  try {
    CandidateResult r;
    r.status = doc->value("status", "infra_error");
    r.diagnostics = doc->value("diagnostics", "");
    if (doc->contains("environment")) r.environment_json = (*doc)["environment"].dump();
    if (doc->contains("observed_isolation")) {
      r.observed_isolation_json = (*doc)["observed_isolation"].dump();
    }
    r.timing = ParseTiming(*doc);
    r.steps_json = StepsJson(*doc);
    r.tampering = doc->value("tampering", std::vector<std::string>{});
    for (const auto& t : doc->value("trials", json::array())) {
      CandidateTrial trial;
      trial.index = t.value("index", 0);
      trial.inputs_unchanged = t.value("inputs_unchanged", true);
      trial.problems = t.value("problems", std::vector<std::string>{});
      auto outputs = ParseEntries(t.value("outputs", json::array()), outputs_dir, trial.index,
                                  /*contained=*/true);
      if (!outputs) return std::unexpected(outputs.error());
      trial.outputs = std::move(*outputs);
      r.trials.push_back(std::move(trial));
    }
    if (doc->contains("address_probe") && (*doc)["address_probe"].contains("outputs")) {
      const json& p = (*doc)["address_probe"];
      CandidateTrial probe;
      probe.index = p.value("index", 1);
      probe.inputs_unchanged = p.value("inputs_unchanged", true);
      probe.problems = p.value("problems", std::vector<std::string>{});
      auto outputs = ParseEntries(p["outputs"], outputs_dir / "address_probe", -1,
                                  /*contained=*/true);
      if (!outputs) return std::unexpected(outputs.error());
      probe.outputs = std::move(*outputs);
      r.address_probe = std::move(probe);
    }
    return r;
  } catch (const json::exception& e) {
    return ParseError(fmt::format("malformed candidate result: {}", e.what()));
  }
}

}  // namespace kforge
