#include "kforge/report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "kforge/report/html_escape.h"
#include "kforge/report/line_diff.h"

namespace kforge::report {
namespace {

using nlohmann::json;

constexpr std::size_t Index(Baseline b) { return static_cast<std::size_t>(b); }

// A diff longer than this is cut, with a note, and the candidate's full source is shown instead:
// a candidate rewritten from scratch would otherwise weigh its page down twice (every line deleted
// and inserted).
constexpr std::size_t kMaxDiffLines = 2000;

std::string H(std::string_view text) { return EscapeHtml(text); }

std::string Fixed(const std::optional<double>& x, int digits = 2, std::string_view none = "—") {
  return x && std::isfinite(*x) ? fmt::format("{:.{}f}", *x, digits) : std::string(none);
}
std::string Speedup(const std::optional<double>& x) {
  return x ? fmt::format("{:.2f}×", *x) : std::string("not measured");
}
std::string Percent(const std::optional<double>& x) {
  return x ? fmt::format("{:.1f}%", *x * 100) : std::string("—");
}
std::string Seconds(double s) {
  if (s >= 1) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} µs", s * 1e6);
}
std::string Stats(const std::optional<TimingSummary>& t) {
  if (!t) return "not measured";
  return fmt::format("{} (±{:.1f}%, n={}, {})", Seconds(t->median_s), t->rel_std * 100, t->samples,
                     t->clock.empty() ? "clock not stated" : t->clock);
}
std::string Timestamp(store::Timestamp t) {
  const std::time_t secs = std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }
json Num(const std::optional<double>& x) {
  return x && std::isfinite(*x) ? json(std::stod(fmt::format("{:.6g}", *x))) : json(nullptr);
}

constexpr std::string_view kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1b1f24;background:#fff}
header,main{max-width:1200px;margin:0 auto;padding:0 20px}
header{border-bottom:1px solid #d0d7de;padding-bottom:8px}
h1{font-size:22px;margin:16px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #eaeef2}
h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.n{text-align:right;font-variant-numeric:tabular-nums}
.note{color:#57606a;font-size:12.5px;max-width:1000px}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;background:#eaeef2}
.ok{background:#dafbe1}.bad{background:#ffebe9}.warn{background:#fff8c5}
.charts{display:grid;grid-template-columns:1fr 1fr;gap:18px}
.chart{border:1px solid #d0d7de;border-radius:6px;padding:8px}
.chart .area{position:relative;height:300px}
pre{background:#f6f8fa;border:1px solid #d0d7de;padding:8px;overflow:auto;font-size:12px;max-height:520px}
pre.diff .a{color:#116329;background:#dafbe1;display:block}pre.diff .d{color:#82071e;background:#ffebe9;display:block}
pre.diff .h{color:#0550ae;display:block}
details{margin:4px 0}summary{cursor:pointer}
)";

// The chart data of index.html: Chart.js configurations without functions. Every chart draws
// every task of the run: the tasks reported apart (degenerate, held for review) in series of
// their own, named so, so that a run whose tasks are all apart still shows what it did.

// " (held for review, apart)" for a series of apart tasks, "" for the headline.
std::string ApartSuffix(TaskClass c) {
  switch (c) {
    case TaskClass::kHeadline: return "";
    case TaskClass::kDegenerate: return " (degenerate, apart)";
    case TaskClass::kHeld: return " (held for review, apart)";
  }
  return "";
}

json FastPChart(const RunMetrics& m) {
  json datasets = json::array();
  json labels = json::array();
  for (int i = 0; i <= 60; ++i) labels.push_back(fmt::format("{:g}", i * 0.05));
  const char* colors[] = {"#0969da", "#bf3989", "#1a7f37", "#9a6700", "#8250df", "#cf222e"};
  int color = 0;
  for (const GroupMetrics& g : m.groups) {
    std::vector<const TaskOutcome*> tasks;
    for (const TaskOutcome& t : m.tasks) {
      if (t.task_class == g.task_class && t.precision == g.precision) tasks.push_back(&t);
    }
    for (Baseline b : kBaselines) {
      if (g.baselines[Index(b)].measured == 0) continue;
      json points = json::array();
      for (int i = 0; i <= 60; ++i) points.push_back(Num(FastP(tasks, b, i * 0.05)));
      datasets.push_back({{"label", fmt::format("{} · vs {}{}", g.precision.Describe(), BaselineName(b),
                                                ApartSuffix(g.task_class))},
                          {"data", points},
                          {"borderColor", colors[color % 6]},
                          {"backgroundColor", colors[color % 6]},
                          {"pointRadius", 0},
                          {"stepped", true}});
      ++color;
    }
  }
  return {{"type", "line"},
          {"data", {{"labels", labels}, {"datasets", datasets}}},
          {"options",
           {{"scales",
             {{"x", {{"title", {{"display", true}, {"text", "threshold p (speedup)"}}}}},
              {"y", {{"min", 0}, {"max", 1}, {"title", {{"display", true}, {"text", "fast_p"}}}}}}},
            {"plugins",
             {{"title",
               {{"display", true},
                {"text", datasets.empty() ? std::string("fast_p curve: no task has a measured speedup")
                                          : std::string("fast_p curve")}}}}}}}};
}

json DistributionChart(const RunMetrics& m) {
  static constexpr double kEdges[] = {0, 0.25, 0.5, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0};
  constexpr std::size_t kBins = std::size(kEdges);
  // One series per class, so that apart tasks are drawn and named as such.
  std::map<TaskClass, std::vector<int>> counts;
  int unmeasured = 0;
  int correct = 0;
  for (const TaskOutcome& t : m.tasks) {
    if (!t.correct) continue;
    ++correct;
    const auto& s = t.best_speedup[Index(Baseline::kEager)];
    if (!s) {
      ++unmeasured;
      continue;
    }
    std::size_t bin = 0;
    while (bin + 1 < kBins && *s >= kEdges[bin + 1]) ++bin;
    auto& series = counts[t.task_class];
    series.resize(kBins, 0);
    ++series[bin];
  }
  json datasets = json::array();
  const char* colors[] = {"#0969da", "#9a6700", "#bf3989"};
  for (const auto& [c, series] : counts) {
    datasets.push_back({{"label", fmt::format("correct tasks by best speedup vs eager{}", ApartSuffix(c))},
                        {"data", series},
                        {"backgroundColor", colors[static_cast<int>(c) % 3]}});
  }
  json labels = json::array();
  for (std::size_t i = 0; i < kBins; ++i) {
    labels.push_back(i + 1 < kBins ? fmt::format("{:g}–{:g}×", kEdges[i], kEdges[i + 1])
                                   : fmt::format("≥ {:g}×", kEdges[i]));
  }
  return {{"type", "bar"},
          {"data", {{"labels", labels}, {"datasets", datasets}}},
          {"options",
           {{"scales", {{"y", {{"beginAtZero", true}, {"title", {{"display", true}, {"text", "tasks"}}}}}}},
            {"plugins",
             {{"title",
               {{"display", true},
                {"text", correct == 0
                             ? std::string("Speedup distribution vs eager: no correct task in this run")
                             : fmt::format("Speedup distribution vs eager ({} correct without a "
                                           "measured speedup not shown)",
                                           unmeasured)}}}}}}}};
}

json IterationChart(const RunMetrics& m) {
  json labels = json::array();
  for (std::int64_t i = 0; i <= m.max_iteration; ++i) labels.push_back(fmt::format("{}", i + 1));
  json datasets = json::array();
  const char* colors[] = {"#0969da", "#1a7f37", "#bf3989", "#9a6700"};
  int color = 0;
  for (const GroupMetrics& g : m.groups) {
    json best = json::array(), correct = json::array();
    for (const IterationPoint& p : g.iterations) {
      best.push_back(Num(p.geomean_best));
      correct.push_back(Num(p.correct_rate));
    }
    datasets.push_back({{"label", fmt::format("{} · geomean best speedup vs eager{}", g.precision.Describe(),
                                              ApartSuffix(g.task_class))},
                        {"data", best},
                        {"yAxisID", "y"},
                        {"borderColor", colors[color % 4]},
                        {"backgroundColor", colors[color % 4]}});
    datasets.push_back({{"label", fmt::format("{} · share of tasks correct{}", g.precision.Describe(),
                                              ApartSuffix(g.task_class))},
                        {"data", correct},
                        {"yAxisID", "y1"},
                        {"borderDash", json::array({5, 4})},
                        {"borderColor", colors[(color + 1) % 4]},
                        {"backgroundColor", colors[(color + 1) % 4]}});
    color += 2;
  }
  return {{"type", "line"},
          {"data", {{"labels", labels}, {"datasets", datasets}}},
          {"options",
           {{"scales",
             {{"x", {{"title", {{"display", true}, {"text", "iteration"}}}}},
              {"y", {{"position", "left"}, {"title", {{"display", true}, {"text", "best speedup so far (geomean)"}}}}},
              {"y1",
               {{"position", "right"},
                {"min", 0},
                {"max", 1},
                {"grid", {{"drawOnChartArea", false}}},
                {"title", {{"display", true}, {"text", "share correct"}}}}}}},
            {"plugins",
             {{"title", {{"display", true}, {"text", "Improvement per iteration"}}}}}}}};
}

json RooflineChart(const RunMetrics& m, bool& by_intensity) {
  by_intensity = false;
  for (const TaskOutcome& t : m.tasks) {
    if (t.best_sol_fraction && t.arithmetic_intensity) by_intensity = true;
  }
  std::map<TaskClass, json> points;
  int shown = 0;
  for (const TaskOutcome& t : m.tasks) {
    if (!t.best_sol_fraction) continue;
    const auto x = by_intensity ? t.arithmetic_intensity : t.best_speedup[Index(Baseline::kEager)];
    if (!x) continue;
    auto& series = points[t.task_class];
    if (series.is_null()) series = json::array();
    series.push_back({{"x", Num(x)}, {"y", Num(t.best_sol_fraction)}});
    ++shown;
  }
  json datasets = json::array();
  const char* colors[] = {"#bf3989", "#9a6700", "#0969da"};
  for (const auto& [c, series] : points) {
    datasets.push_back({{"label", fmt::format("best candidate per task{}", ApartSuffix(c))},
                        {"data", series},
                        {"backgroundColor", colors[static_cast<int>(c) % 3]}});
  }
  const std::string x_title =
      by_intensity ? "arithmetic intensity (FLOP/byte, from task metadata)"
                   : "speedup vs eager (arithmetic intensity not in the task metadata)";
  return {{"type", "scatter"},
          {"data", {{"datasets", datasets}}},
          {"options",
           {{"scales",
             {{"x", {{"type", "logarithmic"}, {"title", {{"display", true}, {"text", x_title}}}}},
              {"y", {{"min", 0}, {"max", 1}, {"title", {{"display", true}, {"text", "speed-of-light fraction"}}}}}}},
            {"plugins",
             {{"title",
               {{"display", true},
                {"text", shown == 0 ? std::string("Roofline: SOL fraction not measured for any task")
                                    : fmt::format("Roofline: SOL fraction vs {} ({} tasks)",
                                                  by_intensity ? "arithmetic intensity" : "speedup",
                                                  shown)}}}}}}}};
}

constexpr std::string_view kChartScript = R"JS(
(function () {
  var body = document.body;
  body.setAttribute('data-charts-rendered', '0');
  var data = JSON.parse(document.getElementById('kforge-data').textContent);
  if (typeof Chart === 'undefined') {
    body.setAttribute('data-charts-error', 'Chart.js was not available when this report was made');
    return;
  }
  var rendered = 0;
  var marker = {
    id: 'kforgeRendered',
    afterRender: function (chart) {
      if (chart.$kforgeCounted) return;
      var c = chart.canvas, px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      var painted = 0;
      for (var i = 3; i < px.length && painted <= 200; i += 4) if (px[i] !== 0) painted++;
      if (painted > 200) {
        chart.$kforgeCounted = true;
        rendered++;
        body.setAttribute('data-charts-rendered', String(rendered));
      }
    }
  };
  data.charts.forEach(function (spec) {
    var canvas = document.getElementById(spec.id);
    if (!canvas) return;
    var config = spec.config;
    config.options = config.options || {};
    config.options.animation = false;
    config.options.responsive = true;
    config.options.maintainAspectRatio = false;
    config.plugins = [marker];
    try { new Chart(canvas, config); }
    catch (e) { body.setAttribute('data-charts-error', String(e)); }
  });
})();
)JS";

std::string GroupTable(const GroupMetrics& g, const RunData& run) {
  std::string out;
  out += fmt::format(
      "<h3>{} · precision {}</h3>\n<p>{} tasks · correct: {} ({}) · speed-of-light fraction of the "
      "best candidates: {}",
      TaskClassName(g.task_class) == std::string_view("headline") ? "Headline"
      : g.task_class == TaskClass::kDegenerate                    ? "Degenerate (apart)"
                                                                  : "Held for review (apart)",
      H(g.precision.Describe()), g.tasks, g.correct, Percent(g.correctness_rate),
      g.sol_fraction.n == 0
          ? std::string("not measured")
          : fmt::format("median {} (mean {}, min {}, max {}, n={})", Fixed(g.sol_fraction.median, 3),
                        Fixed(g.sol_fraction.mean, 3), Fixed(g.sol_fraction.min, 3),
                        Fixed(g.sol_fraction.max, 3), g.sol_fraction.n));
  const double tokens = static_cast<double>(g.input_tokens + g.output_tokens);
  out += fmt::format(" · LLM use credited to these tasks: {:.0f} tokens, ${:.4f}", tokens, g.cost_usd);
  if (g.tasks > 0) {
    out += fmt::format(" ({:.0f} tokens, ${:.4f} per task)", tokens / g.tasks, g.cost_usd / g.tasks);
  }
  out += "</p>\n<table><tr><th>baseline</th><th>tasks with a measured speedup</th><th>correct, "
         "no speedup</th><th>geomean speedup</th>";
  for (double p : kFastPThresholds) out += fmt::format("<th>fast<sub>{:g}</sub></th>", p);
  out += "</tr>\n";
  for (Baseline b : kBaselines) {
    const BaselineMetrics& m = g.baselines[Index(b)];
    out += fmt::format("<tr><td title=\"{}\">{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td>",
                       H(BaselineDescription(b)), BaselineName(b), m.measured,
                       m.correct_without_speedup,
                       m.measured == 0 ? "not measured" : Speedup(m.geomean_speedup));
    for (const auto& f : m.fast_p) {
      out += fmt::format("<td class=n>{}</td>", m.measured == 0 && g.correct > 0 ? "not measured" : Percent(f));
    }
    out += "</tr>\n";
  }
  out += "</table>\n";
  (void)run;
  return out;
}

// After the task's precision: what its best candidate's outputs met, when that is not the policy
// itself (a lower-precision speedup under tf32/mixed, or strict met under a looser policy).
std::string AchievedNote(const TaskOutcome& t) {
  if (t.best_achieved_precision.empty() || t.best_achieved_precision == t.precision.policy) {
    return t.best_achieved_precision.empty() || t.best_achieved_precision == "strict"
               ? ""
               : " · lower-precision result";
  }
  return " · met " + t.best_achieved_precision;
}

std::string StatusBadge(const TaskOutcome& t) {
  const char* cls = t.task_class != TaskClass::kHeadline ? "warn" : t.correct ? "ok" : "bad";
  return fmt::format("<span class=\"badge {}\">{}</span>", cls, H(t.status));
}

}  // namespace

std::string TaskPagePath(std::size_t task_index) {
  return fmt::format("tasks/task-{:04}.html", task_index + 1);
}

std::string RenderIndexHtml(const RunData& run, const RunMetrics& m, std::string_view chartjs) {
  std::string out;
  out.reserve(chartjs.size() + 64 * 1024 + m.tasks.size() * 600);
  out += "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
         "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n";
  out += fmt::format("<title>KForge report · {}</title>\n<style>{}</style></head>\n", H(run.run.id), kStyle);
  out += fmt::format("<body data-charts-expected=\"{}\">\n<header><h1>KForge report · {}</h1>\n", kIndexCharts,
                     H(run.run.id));
  out += fmt::format(
      "<p class=note>{} run, status <b>{}</b>, started {}{} · model {} · target {} · {} tasks, {} "
      "candidates up to iteration {}<br>command: <code>{}</code></p></header>\n<main>\n",
      H(store::ToString(run.run.kind)), H(store::ToString(run.run.status)), Timestamp(run.run.created_at),
      run.run.finished_at ? ", ended " + Timestamp(*run.run.finished_at) : std::string(),
      run.model.empty() ? "not stated" : H(run.model), run.target.empty() ? "not stated" : H(run.target),
      m.tasks.size(),
      [&] {
        std::size_t n = 0;
        for (const auto& t : run.tasks) n += t.candidates.size();
        return n;
      }(),
      m.max_iteration + 1, H(run.run.command_line));

  // Summary.
  out += "<h2 id=\"summary\">Summary</h2>\n<p class=note>Figures are computed per precision group "
         "(policy and the tolerance it implies) and never pooled across groups. A task's speedup "
         "is its best candidate's (the kernel the run wrote to best/: correct, the lowest timed "
         "median, not held for review while another correct one is not), as stored in the "
         "verdict: baseline median / candidate median, same device, same evaluation. "
         "fast<sub>p</sub> (KernelBench) = tasks correct with speedup &gt; p, divided by all tasks "
         "of the group. Geomean over the tasks with a measured speedup. Degenerate tasks and tasks "
         "with a candidate held for review are reported apart and are not in the headline figures; "
         "the charts draw them in series of their own.<br>";
  for (Baseline b : kBaselines) {
    out += fmt::format("<b>{}</b>: {}.<br>", BaselineName(b), H(BaselineDescription(b)));
  }
  out += "</p>\n";
  bool any_headline = false;
  for (const GroupMetrics& g : m.groups) {
    if (g.task_class != TaskClass::kHeadline) continue;
    any_headline = true;
    out += GroupTable(g, run);
  }
  if (!any_headline) out += "<p>No task is in the headline figures.</p>\n";
  out += fmt::format(
      "<p>LLM use of the whole run: {} calls, {} input + {} output tokens, ${:.4f}; per task {} "
      "tokens, {}. Not credited to a task (e.g. failed calls): {} tokens, ${:.4f}.</p>\n",
      run.llm_calls, run.input_tokens, run.output_tokens, run.cost_usd,
      m.tokens_per_task ? fmt::format("{:.0f}", *m.tokens_per_task) : "—",
      m.cost_per_task_usd ? fmt::format("${:.4f}", *m.cost_per_task_usd) : "—",
      run.unattributed_input_tokens + run.unattributed_output_tokens, run.unattributed_cost_usd);
  if (run.unparsable_verdicts > 0) {
    out += fmt::format("<p class=\"badge bad\">{} stored verdicts could not be read; their "
                       "candidates count by their evaluation status only.</p>\n",
                       run.unparsable_verdicts);
  }

  // Charts.
  bool by_intensity = false;
  json charts = json::array({{{"id", "chart-fastp"}, {"config", FastPChart(m)}},
                             {{"id", "chart-distribution"}, {"config", DistributionChart(m)}},
                             {{"id", "chart-iterations"}, {"config", IterationChart(m)}},
                             {{"id", "chart-roofline"}, {"config", RooflineChart(m, by_intensity)}}});
  out += "<h2 id=\"charts\">Charts</h2>\n";
  if (chartjs.empty()) {
    out += "<p class=\"badge bad\">Chart.js was not found when this report was made (Debian "
           "package libjs-chart.js); the charts are missing. Install it and run kforge report "
           "again.</p>\n";
  }
  out += "<div class=charts>\n";
  for (const char* id : {"chart-fastp", "chart-distribution", "chart-iterations", "chart-roofline"}) {
    out += fmt::format("<div class=chart><div class=area><canvas id=\"{}\"></canvas></div></div>\n", id);
  }
  out += fmt::format(
      "</div>\n<p class=note>Roofline: the y axis is timing.sol_fraction of each task's best "
      "candidate; the x axis is {}.</p>\n",
      by_intensity ? "the task's arithmetic intensity (FLOP/byte, from its metadata)"
                   : "the speedup against eager, because no task states its arithmetic intensity");

  // Apart.
  out += "<h2 id=\"apart\">Reported apart</h2>\n";
  for (const GroupMetrics& g : m.groups) {
    if (g.task_class != TaskClass::kHeadline) out += GroupTable(g, run);
  }
  out += "<h3>Degenerate tasks</h3>\n";
  if (m.degenerate_tasks == 0) {
    out += "<p>None: no verdict flagged its task's reference as degenerate.</p>\n";
  } else {
    out += "<table><tr><th>task</th><th>flags</th><th>status</th><th>speedup vs eager</th></tr>\n";
    for (const TaskOutcome& t : m.tasks) {
      if (t.task_class != TaskClass::kDegenerate) continue;
      out += fmt::format("<tr><td><a href=\"{}\">{}</a></td><td>{}</td><td>{}</td><td class=n>{}</td></tr>\n",
                         TaskPagePath(t.task_index), H(t.name), H(t.degenerate_flags), StatusBadge(t),
                         Speedup(t.best_speedup[0]));
    }
    out += "</table>\n";
  }
  out += "<h3>Held for review</h3>\n";
  if (m.held_tasks == 0) {
    out += "<p>None: no candidate is held for review.</p>\n";
  } else {
    out += "<table><tr><th>task</th><th>candidate</th><th>sample · iteration</th><th>speedup vs "
           "eager</th><th>reason</th></tr>\n";
    for (const TaskOutcome& t : m.tasks) {
      for (const HeldCandidate& h : t.held) {
        out += fmt::format(
            "<tr><td><a href=\"{}\">{}</a></td><td><a href=\"{}#{}\">{}</a></td><td>{} · {}</td><td "
            "class=n>{}</td><td>{}</td></tr>\n",
            TaskPagePath(t.task_index), H(t.name), TaskPagePath(t.task_index), H(h.candidate_id),
            H(h.candidate_id), h.sample, h.iteration + 1, Speedup(h.speedup_vs_eager),
            h.reason.empty() ? "no reason stored" : H(h.reason));
      }
    }
    out += "</table>\n";
  }

  // Tasks.
  out += "<h2 id=\"tasks\">Tasks</h2>\n<table><tr><th>task</th><th>class</th><th>precision</th>"
         "<th>status</th><th>candidates</th><th>vs eager</th><th>vs compile</th><th>vs best</th>"
         "<th>SOL</th><th>tokens</th><th>cost</th></tr>\n";
  for (const TaskOutcome& t : m.tasks) {
    out += fmt::format(
        "<tr><td><a href=\"{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td class=n>{}</td><td "
        "class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td "
        "class=n>{}</td><td class=n>${:.4f}</td></tr>\n",
        TaskPagePath(t.task_index), H(t.name), TaskClassName(t.task_class),
        H(t.precision.Describe() + AchievedNote(t)), StatusBadge(t), t.candidates, Speedup(t.best_speedup[0]), Speedup(t.best_speedup[1]),
        Speedup(t.best_speedup[2]), Fixed(t.best_sol_fraction, 3, "not measured"),
        t.input_tokens + t.output_tokens, t.cost_usd);
  }
  out += "</table>\n</main>\n";

  out += "<script type=\"application/json\" id=\"kforge-data\">";
  out += JsonForScript(Dump(json{{"charts", charts}}));
  out += "</script>\n";
  if (!chartjs.empty()) {
    out += "<script>";
    out += chartjs;
    out += "\n</script>\n";
  }
  out += "<script>";
  out += kChartScript;
  out += "</script>\n</body></html>\n";
  return out;
}

Result<std::string> RenderTaskHtml(const RunData& run, const RunMetrics& m, std::size_t task_index,
                                   store::RunStore& store) {
  std::string out;
  KFORGE_RETURN_IF_ERROR(RenderTaskHtml(run, m, task_index, store, out));
  return out;
}

Status RenderTaskHtml(const RunData& run, const RunMetrics& m, std::size_t task_index,
                      store::RunStore& store, std::string& out) {
  const TaskData& task = run.tasks[task_index];
  const TaskOutcome& o = m.tasks[task_index];
  out.clear();
  out.reserve(16 * 1024 + task.candidates.size() * 8 * 1024);
  out += "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
         "'unsafe-inline'\">\n";
  out += fmt::format("<title>{} · KForge report</title>\n<style>{}</style></head>\n<body>\n", H(task.record.name),
                     kStyle);
  out += fmt::format(
      "<header><p><a href=\"../index.html\">← report of {}</a></p><h1>{}</h1>\n<p>{} · class {} · "
      "precision {} · origin {} · {} candidates, {} evaluated, {} correct</p></header>\n<main>\n",
      H(run.run.id), H(task.record.name), StatusBadge(o), TaskClassName(o.task_class),
      H(o.precision.Describe()), task.origin.empty() ? "not stated" : H(task.origin), o.candidates,
      o.evaluated, o.correct_candidates);
  out += "<table><tr><th>baseline</th><th>best speedup</th><th>candidate</th></tr>\n";
  for (Baseline b : kBaselines) {
    const std::string& id = o.best_candidate_id[Index(b)];
    out += fmt::format("<tr><td title=\"{}\">{}</td><td class=n>{}</td><td>{}</td></tr>\n",
                       H(BaselineDescription(b)), BaselineName(b), Speedup(o.best_speedup[Index(b)]),
                       id.empty() ? "—" : fmt::format("<a href=\"#{}\">{}</a>", H(id), H(id)));
  }
  out += fmt::format(
      "</table>\n<p>Speed-of-light fraction of the best candidate: {} · arithmetic intensity: {} · "
      "LLM use credited: {} input + {} output tokens, ${:.4f}</p>\n",
      Fixed(o.best_sol_fraction, 3, "not measured"),
      o.arithmetic_intensity ? fmt::format("{:.3g} FLOP/byte", *o.arithmetic_intensity) : "not stated",
      o.input_tokens, o.output_tokens, o.cost_usd);
  if (o.task_class == TaskClass::kDegenerate) {
    out += fmt::format("<p class=\"badge warn\">Degenerate task ({}): reported apart, not in the "
                       "headline figures.</p>\n",
                       H(o.degenerate_flags));
  }
  for (const HeldCandidate& h : o.held) {
    out += fmt::format("<p class=\"badge warn\">Held for review: <a href=\"#{}\">{}</a> ({}): {}</p>\n",
                       H(h.candidate_id), H(h.candidate_id), Speedup(h.speedup_vs_eager),
                       h.reason.empty() ? "no reason stored" : H(h.reason));
  }

  // Candidate table.
  out += "<h2>Candidates</h2>\n<table><tr><th>candidate</th><th>sample</th><th>iteration</th>"
         "<th>pass</th><th>status</th><th>candidate time</th><th>eager</th><th>compile</th>"
         "<th>vs eager</th><th>vs compile</th><th>vs best</th><th>SOL</th></tr>\n";
  for (const CandidateData& c : task.candidates) {
    const VerdictSummary& v = c.verdict;
    out += fmt::format(
        "<tr><td><a href=\"#{}\">{}</a>{}</td><td class=n>{}</td><td class=n>{}</td><td>{}</td><td>{}{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td class=n>{}</td><td class=n>{}</td><td "
        "class=n>{}</td><td class=n>{}</td></tr>\n",
        H(c.record.id), H(c.record.id), c.record.id == o.best_id ? " <b>best</b>" : "",
        c.record.sample, c.record.iteration + 1, store::ToString(c.record.pass_kind),
        c.evaluation ? H(store::ToString(c.evaluation->status)) : "not evaluated",
        v.held_for_review ? " <span class=\"badge warn\">held</span>" : "",
        Stats(v.candidate_time), Stats(v.eager_baseline), Stats(v.compile_baseline),
        Speedup(SpeedupOf(v, Baseline::kEager)), Speedup(SpeedupOf(v, Baseline::kCompile)),
        Speedup(SpeedupOf(v, Baseline::kBest)), Fixed(v.sol_fraction, 3, "—"));
  }
  out += "</table>\n";

  // History: each candidate with its verdict and what changed from the one before it.
  out += "<h2>History</h2>\n";
  std::unordered_map<std::string, std::size_t> by_id;
  for (std::size_t i = 0; i < task.candidates.size(); ++i) by_id.emplace(task.candidates[i].record.id, i);
  // Sources, read once each (a diff needs the one before too); nullopt when the artifact is
  // missing or damaged.
  std::vector<std::optional<std::string>> sources(task.candidates.size());
  std::vector<bool> read(task.candidates.size(), false);
  auto source = [&](std::size_t i) -> const std::optional<std::string>& {
    if (!read[i]) {
      read[i] = true;
      if (auto text = store.GetArtifact(task.candidates[i].record.source_hash)) sources[i] = std::move(*text);
    }
    return sources[i];
  };
  for (std::size_t i = 0; i < task.candidates.size(); ++i) {
    const CandidateData& c = task.candidates[i];
    const VerdictSummary& v = c.verdict;
    out += fmt::format("<h3 id=\"{}\">sample {} · iteration {} · {} · {}{}</h3>\n", H(c.record.id),
                       c.record.sample, c.record.iteration + 1, store::ToString(c.record.pass_kind),
                       c.evaluation ? H(store::ToString(c.evaluation->status)) : "not evaluated",
                       c.record.id == o.best_id ? " · best" : "");
    if (!v.message.empty()) {
      out += "<pre>";
      AppendEscapedHtml(out, v.message);
      out += "</pre>\n";
    }
    if (!v.diagnostics.empty()) {
      out += "<details><summary>diagnostics</summary><pre>";
      AppendEscapedHtml(out, v.diagnostics);
      out += "</pre></details>\n";
    }
    if (v.held_for_review) {
      out += fmt::format("<p class=\"badge warn\">held for review: {}</p>\n", H(v.review_reason));
    }
    // The candidate it was derived from: its parent, else the previous one of its sample.
    std::optional<std::size_t> before;
    if (c.record.parent_id) {
      if (auto it = by_id.find(*c.record.parent_id); it != by_id.end()) before = it->second;
    }
    if (!before && i > 0 && task.candidates[i - 1].record.sample == c.record.sample) before = i - 1;
    const auto& text = source(i);
    if (!text) {
      out += "<p class=\"badge bad\">source artifact missing from the store</p>\n";
    } else if (before && source(*before)) {
      const std::string diff = UnifiedDiff(*source(*before), *text, task.candidates[*before].record.id,
                                           c.record.id);
      bool truncated = false;
      if (diff.empty()) {
        out += fmt::format("<p class=note>same source as {}</p>\n", H(task.candidates[*before].record.id));
      } else {
        out += fmt::format("<details open><summary>diff from {}</summary><pre class=diff>",
                           H(task.candidates[*before].record.id));
        std::size_t start = 0;
        std::size_t lines = 0;
        while (start < diff.size() && lines < kMaxDiffLines) {
          std::size_t end = diff.find('\n', start);
          if (end == std::string::npos) end = diff.size();
          std::string_view line(diff.data() + start, end - start);
          const char* cls = line.starts_with("@@") || line.starts_with("---") || line.starts_with("+++")
                                ? "h"
                            : line.starts_with("+") ? "a"
                            : line.starts_with("-") ? "d"
                                                    : nullptr;
          if (cls != nullptr) {
            out += "<span class=";
            out += cls;
            out += '>';
            AppendEscapedHtml(out, line);
            out += "</span>";
          } else {
            AppendEscapedHtml(out, line);
            out += '\n';
          }
          start = end + 1;
          ++lines;
        }
        out += "</pre>";
        if (start < diff.size()) {
          truncated = true;
          const auto rest = std::count(diff.begin() + static_cast<std::ptrdiff_t>(start), diff.end(), '\n');
          out += fmt::format("<p class=note>Diff cut after {} lines ({} more not shown); the full "
                             "source is below.</p>",
                             kMaxDiffLines, rest);
        }
        out += "</details>\n";
      }
      if (c.record.id == o.best_id || truncated) {
        out += "<details><summary>full source</summary><pre>";
        AppendEscapedHtml(out, *text);
        out += "</pre></details>\n";
      }
    } else {
      out += c.record.id == o.best_id ? "<details open>" : "<details>";
      out += "<summary>source</summary><pre>";
      AppendEscapedHtml(out, *text);
      out += "</pre></details>\n";
    }
    // Profiles are looked up for the candidates that matter most: the best and the advised ones.
    if (c.evaluation && (c.record.id == o.best_id || !c.recommendations.empty())) {
      auto profiles = store.ListProfiles(c.evaluation->id);
      if (profiles) {
        for (const auto& p : *profiles) {
          auto summary = store.GetArtifact(p.summary_hash);
          if (summary && summary->empty()) {
            // A profile pass that failed: its raw text says why (synth::SynthesisSetup).
            auto why = store.GetArtifact(p.raw_hash);
            out += fmt::format("<p>profile pass failed: {}</p>\n",
                               why ? H(*why) : "reason missing");
            continue;
          }
          out += fmt::format("<details><summary>profile summary ({})</summary><pre>{}</pre></details>\n",
                             H(p.tool), summary ? H(*summary) : "summary artifact missing");
        }
      }
    }
    for (const std::string& r : c.recommendations) {
      auto j = json::parse(r, nullptr, false);
      out += fmt::format("<details><summary>recommendations about this candidate</summary><pre>{}</pre></details>\n",
                         H(j.is_discarded() ? r : j.dump(2, ' ', false, json::error_handler_t::replace)));
    }
  }
  out += "</main>\n</body></html>\n";
  return Ok();
}

}  // namespace kforge::report
