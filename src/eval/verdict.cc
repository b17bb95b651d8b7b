#include "kforge/eval/verdict.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "kforge/eval/accuracy.h"
#include <utility>

namespace kforge {
namespace {

nlohmann::json ParseOrNull(const std::string& text) {
  if (text.empty()) return nullptr;
  auto j = nlohmann::json::parse(text, nullptr, false);
  return j.is_discarded() ? nlohmann::json(text) : j;
}

nlohmann::json OrNull(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// An error figure for JSON, which has no infinity: a NaN output's infinite error is stored as the
// largest double (documented in docs/verdict.md), so "far out" survives a round trip.
double Finite(double v) { return std::isfinite(v) ? v : std::numeric_limits<double>::max(); }
nlohmann::json FiniteOrNull(const std::optional<double>& v) {
  return v ? nlohmann::json(Finite(*v)) : nlohmann::json(nullptr);
}

nlohmann::json TimingJson(const std::optional<TimingStats>& t) {
  if (!t) return nullptr;
  nlohmann::json j = {
      {"clock", t->clock},     {"median_s", t->median_s}, {"mean_s", t->mean_s},
      {"min_s", t->min_s},     {"p10_s", t->p10_s},       {"p90_s", t->p90_s},
      {"rel_std", t->rel_std}, {"samples", t->samples},   {"stopped_by", t->stopped_by}};
  if (t->clock == "events-cold") {
    j["discarded"] = t->discarded;
    j["sm_clock_mhz"] = t->sm_clock_mhz ? nlohmann::json(*t->sm_clock_mhz) : nullptr;
    j["warm_median_s"] = OrNull(t->warm_median_s);
    j["graph_replay_median_s"] = OrNull(t->graph_replay_median_s);
    j["graph_replay_error"] = t->graph_replay_error;
    j["host_sync_median_s"] = OrNull(t->host_sync_median_s);
    j["side_stream_suspect"] = t->side_stream_suspect;
    j["cold"] = ParseOrNull(t->cold_json);
  }
  // Parent-driven timing through a harness (docs/verdict.md "Timing").
  if (t->median_ci_low_s) j["median_ci_low_s"] = *t->median_ci_low_s;
  if (t->median_ci_high_s) j["median_ci_high_s"] = *t->median_ci_high_s;
  if (t->checked_samples > 0) {
    j["checked_samples"] = t->checked_samples;
    j["check_seconds"] = t->check_seconds;
  }
  if (t->parent_median_s) j["parent_median_s"] = *t->parent_median_s;
  if (t->graph_calls > 0) j["graph_calls"] = t->graph_calls;
  if (t->clock != "events-cold" && t->host_sync_median_s) {
    j["host_sync_median_s"] = *t->host_sync_median_s;
  }
  return j;
}

nlohmann::json WorkJson(const std::optional<CallWork>& w) {
  if (!w) return nullptr;
  return {{"flops", OrNull(w->flops)}, {"min_bytes", w->min_bytes}, {"dtype", w->dtype}};
}

nlohmann::json FloorJson(const std::optional<PhysicsFloor>& f) {
  if (!f) return nullptr;
  return {{"floor_s", f->floor_s},
          {"compute_s", f->compute_s},
          {"memory_s", f->memory_s},
          {"rate_used", f->rate_used},
          {"memory_level", f->memory_level}};
}

// The first line of a (possibly multi-line) error, for the one-line text summary.
std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

bool IsBetter(const Verdict& challenger, const Verdict& incumbent) {
  const bool c = challenger.status == EvalStatus::kCorrect;
  const bool i = incumbent.status == EvalStatus::kCorrect;
  if (c != i) return c;
  if (!c || !challenger.timing || !incumbent.timing) return false;
  return challenger.timing->median_s < incumbent.timing->median_s;
}

std::string DegenerateFlags::Describe() const {
  std::vector<std::string_view> parts;
  if (all_zero) parts.emplace_back("the reference output is all zeros");
  if (mostly_zero && !all_zero) {
    parts.emplace_back("at least 99 % of the reference output is exactly zero");
  }
  if (constant && !all_zero) parts.emplace_back("the reference output is constant");
  if (constant_passes && !constant) parts.emplace_back("a constant tensor passes the tolerance");
  if (nondeterministic)
    parts.emplace_back("the reference does not match itself (nondeterministic)");
  return fmt::format("{}", fmt::join(parts, "; "));
}

namespace {

std::optional<double> NumberOrNull(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? std::optional<double>(it->get<double>())
                                          : std::nullopt;
}

std::optional<TimingStats> TimingFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  TimingStats t;
  t.clock = j.value("clock", "");
  t.median_s = j.value("median_s", 0.0);
  t.mean_s = j.value("mean_s", 0.0);
  t.min_s = j.value("min_s", 0.0);
  t.p10_s = j.value("p10_s", 0.0);
  t.p90_s = j.value("p90_s", 0.0);
  t.rel_std = j.value("rel_std", 0.0);
  t.samples = j.value("samples", 0);
  t.stopped_by = j.value("stopped_by", "");
  t.discarded = j.value("discarded", 0);
  if (auto mhz = NumberOrNull(j, "sm_clock_mhz")) t.sm_clock_mhz = static_cast<int>(*mhz);
  t.warm_median_s = NumberOrNull(j, "warm_median_s");
  t.graph_replay_median_s = NumberOrNull(j, "graph_replay_median_s");
  t.graph_replay_error = j.value("graph_replay_error", "");
  t.host_sync_median_s = NumberOrNull(j, "host_sync_median_s");
  t.side_stream_suspect = j.value("side_stream_suspect", false);
  if (auto cold = j.find("cold"); cold != j.end() && !cold->is_null()) t.cold_json = cold->dump();
  t.median_ci_low_s = NumberOrNull(j, "median_ci_low_s");
  t.median_ci_high_s = NumberOrNull(j, "median_ci_high_s");
  t.checked_samples = j.value("checked_samples", 0);
  t.check_seconds = j.value("check_seconds", 0.0);
  t.parent_median_s = NumberOrNull(j, "parent_median_s");
  t.graph_calls = j.value("graph_calls", 0);
  return t;
}


}  // namespace

Verdict Verdict::FromJson(const std::string& text) {
  Verdict v;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) {
    v.status = EvalStatus::kInfraError;
    v.message = "the stored verdict is not a JSON object";
    return v;
  }
  auto status = ParseEvalStatus(j.value("status", ""));
  v.status = status ? *status : EvalStatus::kInfraError;
  v.message = j.value("message", "");
  v.diagnostics = j.value("diagnostics", "");
  v.target = j.value("target", "");
  v.device = j.value("device", "");
  if (auto task = j.find("task"); task != j.end() && task->is_object()) {
    v.task_name = task->value("name", "");
    v.task_origin = task->value("origin", "");
  }
  if (auto c = j.find("candidate"); c != j.end() && c->is_object()) {
    v.candidate = c->value("path", "");
    v.candidate_kind = c->value("kind", "");
    v.mode = c->value("mode", "");
  }
  if (auto p = j.find("precision"); p != j.end() && p->is_object()) {
    if (auto policy = ParsePrecisionPolicy(p->value("policy", ""))) v.policy = *policy;
    v.tolerance.atol = p->value("atol", v.tolerance.atol);
    v.tolerance.rtol = p->value("rtol", v.tolerance.rtol);
    // Version 2 (absent from version 1: empty).
    v.precision.rule = p->value("rule", "");
    v.precision.fallback_reason = p->value("fallback_reason", "");
    v.precision.worst_error_ratio = NumberOrNull(*p, "worst_error_ratio");
    v.precision.achieved = p->value("achieved", "");
  }
  if (auto trials = j.find("trials"); trials != j.end() && trials->is_array()) {
    for (const auto& t : *trials) {
      if (!t.is_object()) continue;
      TrialVerdict tv;
      tv.index = t.value("index", 0);
      tv.distribution = t.value("distribution", "");
      tv.ok = t.value("ok", false);
      tv.max_abs_error = NumberOrNull(t, "max_abs_error").value_or(0);
      tv.max_rel_error = NumberOrNull(t, "max_rel_error").value_or(0);
      tv.fraction_bad = NumberOrNull(t, "fraction_bad").value_or(0);
      tv.inputs_unchanged = t.value("inputs_unchanged", true);
      tv.problem = t.value("problem", "");
      tv.rule = t.value("rule", "");
      tv.error_ratio = NumberOrNull(t, "error_ratio");
      tv.reference_error = NumberOrNull(t, "reference_error");
      tv.meets_strict = t.value("meets_strict", false);
      v.trials.push_back(std::move(tv));
    }
  }
  if (auto skipped = j.find("skipped_trials"); skipped != j.end() && skipped->is_array()) {
    for (const auto& t : *skipped) {
      if (t.is_object()) v.skipped_trials.push_back({t.value("distribution", ""), t.value("reason", "")});
    }
  }
  if (auto d = j.find("degenerate"); d != j.end() && d->is_object()) {
    v.degenerate.all_zero = d->value("all_zero", false);
    v.degenerate.mostly_zero = d->value("mostly_zero", false);
    v.degenerate.constant = d->value("constant", false);
    v.degenerate.constant_passes = d->value("constant_passes", false);
    v.degenerate.nondeterministic = d->value("nondeterministic", false);
    if (auto r = d->find("reasons"); r != d->end() && r->is_array()) {
      for (const auto& line : *r) {
        if (line.is_string()) v.degenerate.reasons.push_back(line.get<std::string>());
      }
    }
  }
  if (auto s = j.find("seconds"); s != j.end() && s->is_object()) {
    v.compile_seconds = s->value("compile", 0.0);
    v.reference_seconds = s->value("reference", 0.0);
    v.candidate_seconds = s->value("candidate", 0.0);
    v.total_seconds = s->value("total", 0.0);
  }
  v.compile_cache_hit = j.value("compile_cache_hit", false);
  if (auto d = j.find("device_time_check"); d != j.end() && d->is_object()) {
    v.device_time_check_json = d->dump();
  }
  if (auto t = j.find("timing"); t != j.end() && t->is_object()) {
    v.timing = TimingFromJson(t->value("candidate", nlohmann::json()));
    v.timing_error = t->value("candidate_error", "");
    v.eager_baseline = TimingFromJson(t->value("eager_baseline", nlohmann::json()));
    v.eager_baseline_error = t->value("eager_baseline_error", "");
    v.compile_baseline = TimingFromJson(t->value("compile_baseline", nlohmann::json()));
    v.compile_baseline_error = t->value("compile_baseline_error", "");
    v.compile_baseline_cached = t->value("compile_baseline_cached", false);
    v.compile_max_autotune_baseline =
        TimingFromJson(t->value("compile_max_autotune_baseline", nlohmann::json()));
    v.compile_max_autotune_baseline_error = t->value("compile_max_autotune_baseline_error", "");
    v.compile_max_autotune_baseline_cached =
        t->value("compile_max_autotune_baseline_cached", false);
    v.speedup_vs_eager = NumberOrNull(*t, "speedup_vs_eager");
    v.speedup_vs_compile = NumberOrNull(*t, "speedup_vs_compile");
    v.speedup_vs_best_baseline = NumberOrNull(*t, "speedup_vs_best_baseline");
    v.sol_fraction = NumberOrNull(*t, "sol_fraction");
    v.held_for_review = t->value("held_for_review", false);
    v.review_reason = t->value("review_reason", "");
    if (auto load = t->find("load"); load != t->end() && load->is_object()) {
      v.timed_under_load = load->value("busy", false);
      if (auto reasons = load->find("reasons"); reasons != load->end() && reasons->is_array()) {
        for (const auto& line : *reasons) {
          if (line.is_string()) v.load_reasons.push_back(line.get<std::string>());
        }
      }
      v.retimed = load->value("retimed", 0);
    }
  }
  return v;
}

namespace {

nlohmann::json LoadJson(const std::optional<LoadReading>& r) {
  if (!r) return nullptr;
  return {{"window_s", r->window_seconds},
          {"host_cpus", r->host_cpus},
          {"host_busy_cores", r->host_busy_cores},
          {"own_cpu_cores", r->own_cpu_cores},
          {"other_cpu_cores", r->other_cpu_cores},
          {"steal_fraction", r->steal_fraction},
          {"loadavg_1m", r->loadavg_1m},
          {"device", r->device},
          {"device_measured", r->device_measured},
          {"device_note", r->device_note},
          {"device_other_sm_util", r->device_other_sm_util},
          {"device_other_pids", r->device_other_pids},
          {"busy", r->busy},
          {"reasons", r->reasons}};
}

}  // namespace

std::string Verdict::ToJson() const {
  nlohmann::json j;
  j["verdict_version"] = kVerdictVersion;
  j["status"] = EvalStatusName(status);
  j["message"] = message;
  j["diagnostics"] = diagnostics;
  j["task"] = {{"name", task_name}, {"origin", task_origin}};
  j["target"] = target;
  j["device"] = device;
  j["candidate"] = {{"path", candidate}, {"kind", candidate_kind}, {"mode", mode}};
  j["precision"] = {{"policy", PrecisionPolicyName(policy)},
                     {"atol", tolerance.atol},
                     {"rtol", tolerance.rtol},
                     {"rule", precision.rule},
                     {"factor", kAccuracyFactor},
                     {"floor_eps", kAccuracyFloorEps},
                     {"low_precision_factor", kLowPrecisionFactor},
                     {"fallback_reason", precision.fallback_reason},
                     {"worst_error_ratio", FiniteOrNull(precision.worst_error_ratio)},
                     {"achieved", precision.achieved}};
  j["trials"] = nlohmann::json::array();
  for (const auto& t : trials) {
    j["trials"].push_back({{"index", t.index},
                           {"distribution", t.distribution},
                           {"ok", t.ok},
                           {"rule", t.rule},
                           {"max_abs_error", Finite(t.max_abs_error)},
                           {"max_rel_error", Finite(t.max_rel_error)},
                           {"error_ratio", FiniteOrNull(t.error_ratio)},
                           {"reference_error", FiniteOrNull(t.reference_error)},
                           {"fraction_bad", t.fraction_bad},
                           {"meets_strict", t.meets_strict},
                           {"inputs_unchanged", t.inputs_unchanged},
                           {"problem", t.problem}});
  }
  j["skipped_trials"] = nlohmann::json::array();
  for (const auto& t : skipped_trials) {
    j["skipped_trials"].push_back({{"distribution", t.distribution}, {"reason", t.reason}});
  }
  j["degenerate"] = {{"flagged", degenerate.any()},
                     {"all_zero", degenerate.all_zero},
                     {"mostly_zero", degenerate.mostly_zero},
                     {"constant", degenerate.constant},
                     {"constant_passes", degenerate.constant_passes},
                     {"nondeterministic", degenerate.nondeterministic},
                     {"reasons", degenerate.reasons}};
  j["guardrail_flags"] = guardrail_flags;
  nlohmann::json orchestrator = nlohmann::json::object();
  for (const auto& [name, seconds] : steps) orchestrator[name] = seconds;
  j["seconds"] = {{"compile", compile_seconds},
                  {"reference", reference_seconds},
                  {"candidate", candidate_seconds},
                  {"total", total_seconds},
                  {"steps", {{"orchestrator", orchestrator},
                             {"reference", ParseOrNull(reference_steps)},
                             {"candidate", ParseOrNull(candidate_steps)}}}};
  j["compile_cache_hit"] = compile_cache_hit;
  j["isolation"] = {{"sandbox", isolation}, {"observed", ParseOrNull(observed_isolation)}};
  j["environment"] = ParseOrNull(environment);
  if (timing || eager_baseline || !timing_error.empty() || !eager_baseline_error.empty()) {
    j["timing"] = {{"candidate", TimingJson(timing)},
                   {"candidate_error", timing_error},
                   {"eager_baseline", TimingJson(eager_baseline)},
                   {"eager_baseline_error", eager_baseline_error},
                   {"compile_baseline", TimingJson(compile_baseline)},
                   {"compile_baseline_error", compile_baseline_error},
                   {"compile_baseline_cached", compile_baseline_cached},
                   {"compile_max_autotune_baseline", TimingJson(compile_max_autotune_baseline)},
                   {"compile_max_autotune_baseline_error", compile_max_autotune_baseline_error},
                   {"compile_max_autotune_baseline_cached", compile_max_autotune_baseline_cached},
                   {"speedup_vs_eager", OrNull(speedup_vs_eager)},
                   {"speedup_vs_compile", OrNull(speedup_vs_compile)},
                   {"speedup_vs_best_baseline", OrNull(speedup_vs_best_baseline)},
                   {"work", WorkJson(work)},
                   {"floor", FloorJson(floor)},
                   {"sol_fraction", OrNull(sol_fraction)},
                   {"held_for_review", held_for_review},
                   {"review_reason", review_reason},
                   {"load", {{"busy", timed_under_load},
                             {"reasons", load_reasons},
                             {"retimed", retimed},
                             {"reference", LoadJson(reference_load)},
                             {"candidate", LoadJson(candidate_load)}}}};
  } else {
    j["timing"] = nullptr;
  }
  // The out-of-process device-time check of a promoted result (eval/device_time_check.h).
  j["device_time_check"] = ParseOrNull(device_time_check_json);
  return j.dump(2);
}

std::string Verdict::ToText() const {
  std::string out = fmt::format("{}  {}\n", EvalStatusName(status), message);
  out += fmt::format("  task      {} ({})\n", task_name, task_origin);
  out += fmt::format("  target    {}  candidate {} [{}{}]\n", target, candidate, candidate_kind,
                     mode == "kernelbench-compat" ? ", KernelBench compatibility mode" : "");
  if (precision.rule == "truth") {
    out += fmt::format("  precision {}: measured against the float64 truth", PrecisionPolicyName(policy));
    if (precision.worst_error_ratio) {
      out += fmt::format("; worst error {:.3g}x the reference's own (strict allows {:g}x)",
                         *precision.worst_error_ratio, kAccuracyFactor);
    }
  } else {
    out += fmt::format("  precision {} (atol {:g}, rtol {:g})", PrecisionPolicyName(policy),
                       tolerance.atol, tolerance.rtol);
    if (!precision.fallback_reason.empty()) {
      out += fmt::format("; no float64 truth: {}", precision.fallback_reason);
    }
  }
  if (!precision.achieved.empty()) out += fmt::format("; achieved {}", precision.achieved);
  out += "\n";
  for (const auto& t : trials) {
    out += fmt::format("  trial {:<2}  {:<8} {}  max abs err {:.2e}  max rel err {:.2e}{}{}\n",
                       t.index, t.distribution, t.ok ? "ok  " : "FAIL", t.max_abs_error,
                       t.max_rel_error,
                       t.error_ratio ? fmt::format("  ratio {:.3g}", *t.error_ratio) : "",
                       t.problem.empty() ? "" : "  " + t.problem);
  }
  for (const auto& t : skipped_trials) {
    out += fmt::format("  skipped   {:<8} {}\n", t.distribution, t.reason);
  }
  if (degenerate.any()) {
    out += fmt::format("  DEGENERATE TASK: {} — a pass here proves little; reported apart\n",
                       degenerate.reasons.empty() ? degenerate.Describe()
                                                  : fmt::format("{}", fmt::join(degenerate.reasons, "; ")));
  }
  for (const auto& flag : guardrail_flags) out += fmt::format("  guardrail flag: {}\n", flag);
  if (!diagnostics.empty()) {
    out += "  diagnostics:\n";
    std::size_t start = 0;
    while (start < diagnostics.size()) {
      std::size_t end = diagnostics.find('\n', start);
      if (end == std::string::npos) end = diagnostics.size();
      out += "    " + diagnostics.substr(start, end - start) + "\n";
      start = end + 1;
    }
  }
  out += fmt::format(
      "  time      compile {:.2f} s{}, reference {:.2f} s, candidate {:.2f} s, total {:.2f} s\n",
      compile_seconds, compile_cache_hit ? " (cached)" : "", reference_seconds, candidate_seconds,
      total_seconds);
  if (timing) {
    out += fmt::format("  timing    {}\n", timing->Describe());
  } else if (!timing_error.empty()) {
    out += fmt::format("  timing    not measured: {}\n", FirstLine(timing_error));
  }
  if (eager_baseline) {
    out += fmt::format("  eager     {}\n", eager_baseline->Describe());
  } else if (!eager_baseline_error.empty()) {
    out += fmt::format("  eager     not measured: {}\n", FirstLine(eager_baseline_error));
  }
  auto baseline_line = [&out](const char* label, const std::optional<TimingStats>& stats,
                              const std::string& error, bool cached) {
    if (stats) {
      out += fmt::format("  {:<9} {}{}\n", label, stats->Describe(),
                         cached ? " [cached for this task, device and library versions]" : "");
    } else if (!error.empty()) {
      out += fmt::format("  {:<9} not measured: {}\n", label, FirstLine(error));
    }
  };
  baseline_line("compile", compile_baseline, compile_baseline_error, compile_baseline_cached);
  baseline_line("autotune", compile_max_autotune_baseline, compile_max_autotune_baseline_error,
                compile_max_autotune_baseline_cached);
  if (speedup_vs_eager) {
    out += fmt::format("  speedup   {:.3g}x vs PyTorch eager", *speedup_vs_eager);
    if (speedup_vs_compile) out += fmt::format(", {:.3g}x vs torch.compile", *speedup_vs_compile);
    if (speedup_vs_best_baseline) {
      out += fmt::format(", {:.3g}x vs the faster of the two", *speedup_vs_best_baseline);
    }
    out += " (median / median)\n";
  }
  if (floor) {
    out += fmt::format("  physics   {}", floor->Describe());
    if (sol_fraction) out += fmt::format("; speed of light {:.1f} %", *sol_fraction * 100);
    out += "\n";
  } else if (work && timing) {
    out += "  physics   no calibration of this device: run `kforge calibrate --target " + target +
           "` for the speed-of-light fraction\n";
  }
  if (timing) {
    for (const std::string& w : TimingWarnings(*timing, eager_baseline)) {
      out += fmt::format("  WARNING   {}\n", w);
    }
  }
  if (held_for_review) out += fmt::format("  HELD FOR REVIEW: {}\n", review_reason);
  if (timed_under_load) {
    out += fmt::format("  LOAD      timed while other work competed{}: {}\n",
                       retimed > 0 ? " (also when timed again)" : "",
                       fmt::join(load_reasons, "; "));
  } else if (candidate_load && timing) {
    out += fmt::format("  load      {}\n", candidate_load->Describe());
  }
  out += fmt::format("  isolation {}\n", isolation);
  return out;
}

}  // namespace kforge
