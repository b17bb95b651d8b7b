#include "kforge/report/report_json.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

namespace kforge::report {
namespace {

using nlohmann::json;

constexpr std::size_t Index(Baseline b) { return static_cast<std::size_t>(b); }

// Rounded to 6 significant digits: timings are noisier than that, and it keeps the text stable.
json Number(double x) {
  if (!std::isfinite(x)) return nullptr;
  return std::stod(fmt::format("{:.6g}", x));
}
json Number(const std::optional<double>& x) { return x ? Number(*x) : json(nullptr); }

json Millis(store::Timestamp t) { return t.time_since_epoch().count(); }

json PrecisionJson(const PrecisionKey& k) {
  return {{"policy", k.policy}, {"atol", Number(k.atol)}, {"rtol", Number(k.rtol)}};
}

std::string FastPKey(double p) { return fmt::format("{:g}", p); }

json GroupJson(const GroupMetrics& g) {
  json j;
  j["class"] = TaskClassName(g.task_class);
  j["precision"] = PrecisionJson(g.precision);
  j["tasks"] = g.tasks;
  j["correct"] = g.correct;
  j["correctness_rate"] = Number(g.correctness_rate);
  json baselines = json::object();
  for (Baseline b : kBaselines) {
    const BaselineMetrics& m = g.baselines[Index(b)];
    json fast = json::object();
    for (std::size_t k = 0; k < kFastPThresholds.size(); ++k) {
      fast[FastPKey(kFastPThresholds[k])] = Number(m.fast_p[k]);
    }
    baselines[std::string(BaselineName(b))] = {
        {"measured_tasks", m.measured},
        {"correct_without_speedup", m.correct_without_speedup},
        {"geomean_speedup", Number(m.geomean_speedup)},
        {"fast_p", fast},
        {"measured", m.measured > 0}};
  }
  j["baselines"] = baselines;
  j["sol_fraction"] = {{"n", g.sol_fraction.n},
                       {"min", Number(g.sol_fraction.min)},
                       {"median", Number(g.sol_fraction.median)},
                       {"mean", Number(g.sol_fraction.mean)},
                       {"max", Number(g.sol_fraction.max)}};
  json iterations = json::array();
  for (const IterationPoint& p : g.iterations) {
    iterations.push_back({{"iteration", p.iteration + 1},  // from 1, as the terminal counts
                          {"correct_rate", Number(p.correct_rate)},
                          {"fast_1_vs_eager", Number(p.fast_1)},
                          {"geomean_best_speedup_vs_eager", Number(p.geomean_best)},
                          {"measured_tasks", p.measured}});
  }
  j["iterations"] = iterations;
  j["input_tokens"] = g.input_tokens;
  j["output_tokens"] = g.output_tokens;
  j["cost_usd"] = Number(g.cost_usd);
  return j;
}

json TaskJson(const TaskOutcome& t, const TaskData& data) {
  json j;
  j["name"] = t.name;
  j["origin"] = data.origin;
  j["class"] = TaskClassName(t.task_class);
  j["precision"] = PrecisionJson(t.precision);
  j["achieved_precision"] = t.best_achieved_precision;
  j["status"] = t.status;
  j["correct"] = t.correct;
  j["candidates"] = t.candidates;
  j["evaluated"] = t.evaluated;
  j["correct_candidates"] = t.correct_candidates;
  j["best_candidate"] = t.best_id.empty() ? json(nullptr) : json(t.best_id);
  json best = json::object();
  for (Baseline b : kBaselines) {
    best[std::string(BaselineName(b))] = {
        {"speedup", Number(t.best_speedup[Index(b)])},
        {"candidate", t.best_candidate_id[Index(b)].empty()
                          ? json(nullptr)
                          : json(t.best_candidate_id[Index(b)])}};
  }
  j["best_speedup"] = best;
  j["invalid_speedups"] = t.invalid_speedups;
  j["sol_fraction"] = Number(t.best_sol_fraction);
  j["arithmetic_intensity"] = Number(t.arithmetic_intensity);
  j["degenerate_flags"] = t.degenerate_flags;
  json held = json::array();
  for (const HeldCandidate& h : t.held) {
    held.push_back({{"candidate", h.candidate_id},
                    {"sample", h.sample},
                    {"iteration", h.iteration + 1},
                    {"speedup_vs_eager", Number(h.speedup_vs_eager)},
                    {"reason", h.reason}});
  }
  j["held_for_review"] = held;
  json so_far = json::array();
  for (const auto& s : t.best_so_far) so_far.push_back(Number(s));
  j["best_speedup_vs_eager_by_iteration"] = so_far;
  j["input_tokens"] = t.input_tokens;
  j["output_tokens"] = t.output_tokens;
  j["cost_usd"] = Number(t.cost_usd);
  return j;
}

std::string Dump(const json& j, int indent) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

// One CSV cell: quoted when it holds a separator, quote or line break; text that a spreadsheet
// would evaluate as a formula gets a leading quote character.
std::string Cell(std::string_view text) {
  std::string s(text);
  if (!s.empty() && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' || s[0] == '\t' ||
                     s[0] == '\r')) {
    s.insert(s.begin(), '\'');
  }
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string NumberCell(const std::optional<double>& x) {
  return x && std::isfinite(*x) ? fmt::format("{:.6g}", *x) : std::string();
}

}  // namespace

std::string RenderReportJson(const RunData& run, const RunMetrics& metrics) {
  json j;
  j["report_version"] = kReportVersion;
  j["run"] = {{"id", run.run.id},
              {"kind", std::string(store::ToString(run.run.kind))},
              {"status", std::string(store::ToString(run.run.status))},
              {"command_line", run.run.command_line},
              {"created_at_ms", Millis(run.run.created_at)},
              {"finished_at_ms", run.run.finished_at ? Millis(*run.run.finished_at) : json(nullptr)},
              {"model", run.model},
              {"target", run.target}};
  json baselines = json::object();
  for (Baseline b : kBaselines) baselines[std::string(BaselineName(b))] = BaselineDescription(b);
  j["baselines"] = baselines;
  j["definitions"] = {
      {"fast_p",
       "tasks whose best candidate is correct with speedup > p (strictly), divided by all tasks of "
       "the group (KernelBench); null for an empty group"},
      {"geomean_speedup",
       "geometric mean of the tasks' best speedups over the tasks with a measured speedup "
       "(measured_tasks); null when none"},
      {"sol_fraction", "timing.sol_fraction of each task's best candidate (fraction of the "
                       "device's speed-of-light time), over the tasks that state one"},
      {"groups",
       "figures are per precision group (policy, atol, rtol) and class: headline, degenerate "
       "(reported apart), held_for_review (reported apart)"}};
  j["counts"] = {{"tasks", metrics.tasks.size()},
                 {"headline_tasks", metrics.headline_tasks},
                 {"degenerate_tasks", metrics.degenerate_tasks},
                 {"held_for_review_tasks", metrics.held_tasks},
                 {"max_iteration", metrics.max_iteration + 1},
                 {"unparsable_verdicts", run.unparsable_verdicts}};
  json groups = json::array();
  for (const GroupMetrics& g : metrics.groups) groups.push_back(GroupJson(g));
  j["groups"] = groups;
  j["llm_usage"] = {{"calls", run.llm_calls},
                    {"input_tokens", run.input_tokens},
                    {"output_tokens", run.output_tokens},
                    {"cost_usd", Number(run.cost_usd)},
                    {"cost_per_task_usd", Number(metrics.cost_per_task_usd)},
                    {"tokens_per_task", Number(metrics.tokens_per_task)},
                    {"unattributed_input_tokens", run.unattributed_input_tokens},
                    {"unattributed_output_tokens", run.unattributed_output_tokens},
                    {"unattributed_cost_usd", Number(run.unattributed_cost_usd)}};
  json tasks = json::array();
  for (const TaskOutcome& t : metrics.tasks) tasks.push_back(TaskJson(t, run.tasks[t.task_index]));
  j["tasks"] = tasks;
  return Dump(j, 2) + "\n";
}

std::string RenderTasksCsv(const RunData& run, const RunMetrics& metrics) {
  (void)run;  // the outcomes carry everything a row shows
  std::string out =
      "task,class,policy,atol,rtol,status,correct,candidates,evaluated,best_candidate,"
      "speedup_vs_eager,speedup_vs_compile,speedup_vs_best_baseline,sol_fraction,"
      "arithmetic_intensity,held_for_review,degenerate_flags,input_tokens,output_tokens,cost_usd\n";
  for (const TaskOutcome& t : metrics.tasks) {
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", Cell(t.name),
        TaskClassName(t.task_class), Cell(t.precision.policy), NumberCell(t.precision.atol),
        NumberCell(t.precision.rtol), Cell(t.status), t.correct ? "true" : "false", t.candidates,
        t.evaluated, Cell(t.best_id), NumberCell(t.best_speedup[0]), NumberCell(t.best_speedup[1]),
        NumberCell(t.best_speedup[2]), NumberCell(t.best_sol_fraction),
        NumberCell(t.arithmetic_intensity), t.held.size(), Cell(t.degenerate_flags),
        t.input_tokens, t.output_tokens, NumberCell(t.cost_usd));
  }
  return out;
}

std::string RenderCandidatesCsv(const RunData& run) {
  std::string out =
      "task,candidate,parent,sample,iteration,pass_kind,status,policy,candidate_median_s,"
      "eager_median_s,compile_median_s,speedup_vs_eager,speedup_vs_compile,"
      "speedup_vs_best_baseline,sol_fraction,held_for_review,degenerate,wall_s\n";
  for (const TaskData& t : run.tasks) {
    for (const CandidateData& c : t.candidates) {
      const VerdictSummary& v = c.verdict;
      auto median = [](const std::optional<TimingSummary>& s) {
        return s ? NumberCell(s->median_s) : std::string();
      };
      out += fmt::format(
          "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", Cell(t.record.name),
          c.record.id, c.record.parent_id.value_or(""), c.record.sample, c.record.iteration + 1,
          store::ToString(c.record.pass_kind),
          c.evaluation ? store::ToString(c.evaluation->status) : "not_evaluated", Cell(v.policy),
          median(v.candidate_time), median(v.eager_baseline), median(v.compile_baseline),
          NumberCell(v.speedup_vs_eager), NumberCell(v.speedup_vs_compile),
          NumberCell(v.speedup_vs_best_baseline), NumberCell(v.sol_fraction),
          v.held_for_review ? "true" : "false", v.degenerate ? "true" : "false",
          c.evaluation ? NumberCell(c.evaluation->wall_s) : std::string());
    }
  }
  return out;
}

}  // namespace kforge::report
