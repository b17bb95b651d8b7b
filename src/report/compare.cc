#include "kforge/report/compare.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "kforge/report/html_escape.h"

namespace kforge::report {
namespace {

using nlohmann::json;

constexpr std::size_t kEager = 0;

std::string Cell(const TaskOutcome* t) {
  if (t == nullptr) return "—";
  std::string s = t->status;
  if (t->task_class != TaskClass::kHeadline) s += fmt::format(" ({})", TaskClassName(t->task_class));
  return s;
}
std::string SpeedupText(const TaskOutcome* t) {
  if (t == nullptr || !t->best_speedup[kEager]) return "—";
  return fmt::format("{:.2f}x", *t->best_speedup[kEager]);
}
std::string Rate(const std::optional<double>& x) {
  return x ? fmt::format("{:.1f}%", *x * 100) : std::string("—");
}
std::string Delta(const std::optional<double>& a, const std::optional<double>& b, bool percent) {
  if (!a || !b) return "—";
  const double d = *b - *a;
  return percent ? fmt::format("{:+.1f} pp", d * 100) : fmt::format("{:+.3f}", d);
}
json Num(const std::optional<double>& x) {
  return x && std::isfinite(*x) ? json(std::stod(fmt::format("{:.6g}", *x))) : json(nullptr);
}

// Rows of the metric table: label, value in A, value in B, delta.
struct MetricRow {
  std::string label;
  std::optional<double> a, b;
  bool percent = true;
};

std::vector<MetricRow> MetricRows(const GroupComparison& g) {
  std::vector<MetricRow> rows;
  auto get = [](const GroupMetrics* m, auto f) -> std::optional<double> {
    return m == nullptr ? std::nullopt : f(*m);
  };
  rows.push_back({"tasks", get(g.a, [](const GroupMetrics& m) { return std::optional<double>(m.tasks); }),
                  get(g.b, [](const GroupMetrics& m) { return std::optional<double>(m.tasks); }), false});
  rows.push_back({"correctness rate", get(g.a, [](const GroupMetrics& m) { return m.correctness_rate; }),
                  get(g.b, [](const GroupMetrics& m) { return m.correctness_rate; }), true});
  for (Baseline base : kBaselines) {
    const auto bi = static_cast<std::size_t>(base);
    rows.push_back({fmt::format("geomean speedup vs {}", BaselineName(base)),
                    get(g.a, [&](const GroupMetrics& m) { return m.baselines[bi].geomean_speedup; }),
                    get(g.b, [&](const GroupMetrics& m) { return m.baselines[bi].geomean_speedup; }),
                    false});
    for (std::size_t k = 0; k < kFastPThresholds.size(); ++k) {
      rows.push_back({fmt::format("fast_{:g} vs {}", kFastPThresholds[k], BaselineName(base)),
                      get(g.a, [&](const GroupMetrics& m) {
                        return m.baselines[bi].measured > 0 ? m.baselines[bi].fast_p[k] : std::nullopt;
                      }),
                      get(g.b, [&](const GroupMetrics& m) {
                        return m.baselines[bi].measured > 0 ? m.baselines[bi].fast_p[k] : std::nullopt;
                      }),
                      true});
    }
  }
  rows.push_back({"median SOL fraction", get(g.a, [](const GroupMetrics& m) { return m.sol_fraction.median; }),
                  get(g.b, [](const GroupMetrics& m) { return m.sol_fraction.median; }), false});
  return rows;
}

std::string Value(const std::optional<double>& x, bool percent) {
  if (!x) return "not measured";
  return percent ? Rate(x) : fmt::format("{:.4g}", *x);
}

std::string RunLabel(const RunSide& s) {
  std::string label = s.data->run.id;
  if (!s.data->model.empty()) label += " (" + s.data->model + ")";
  return label;
}

}  // namespace

Comparison CompareRuns(RunSide a, RunSide b) {
  Comparison c{a, b, {}, {}};
  std::map<std::string, TaskComparison> tasks;
  for (const TaskOutcome& t : a.metrics->tasks) tasks[t.name].a = &t;
  for (const TaskOutcome& t : b.metrics->tasks) tasks[t.name].b = &t;
  for (auto& [name, tc] : tasks) {
    tc.name = name;
    if (tc.a && tc.b && tc.a->best_speedup[kEager] && tc.b->best_speedup[kEager]) {
      tc.speedup_ratio = *tc.b->best_speedup[kEager] / *tc.a->best_speedup[kEager];
    }
    c.tasks.push_back(tc);
  }
  std::map<PrecisionKey, GroupComparison> groups;
  for (const GroupMetrics& g : a.metrics->groups) {
    if (g.task_class == TaskClass::kHeadline) groups[g.precision].a = &g;
  }
  for (const GroupMetrics& g : b.metrics->groups) {
    if (g.task_class == TaskClass::kHeadline) groups[g.precision].b = &g;
  }
  for (auto& [key, gc] : groups) {
    gc.precision = key;
    c.groups.push_back(gc);
  }
  return c;
}

std::string RenderCompareText(const Comparison& c) {
  std::string out = fmt::format("A: {}\nB: {}\n", RunLabel(c.a), RunLabel(c.b));
  for (const GroupComparison& g : c.groups) {
    out += fmt::format("\nheadline figures, precision {}\n", g.precision.Describe());
    out += fmt::format("  {:<28} {:>14} {:>14} {:>12}\n", "figure", "A", "B", "B - A");
    for (const MetricRow& r : MetricRows(g)) {
      out += fmt::format("  {:<28} {:>14} {:>14} {:>12}\n", r.label, Value(r.a, r.percent),
                         Value(r.b, r.percent), Delta(r.a, r.b, r.percent));
    }
  }
  out += fmt::format("\n{:<40} {:>22} {:>22} {:>10} {:>10} {:>8}\n", "task", "status A", "status B",
                     "speedup A", "speedup B", "B / A");
  for (const TaskComparison& t : c.tasks) {
    out += fmt::format("{:<40} {:>22} {:>22} {:>10} {:>10} {:>8}\n", t.name, Cell(t.a), Cell(t.b),
                       SpeedupText(t.a), SpeedupText(t.b),
                       t.speedup_ratio ? fmt::format("{:.2f}", *t.speedup_ratio) : "—");
  }
  out += "(speedups: best correct candidate vs PyTorch eager, as stored in each verdict)\n";
  return out;
}

std::string RenderCompareHtml(const Comparison& c) {
  auto H = [](std::string_view s) { return EscapeHtml(s); };
  std::string out =
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<meta "
      "http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'unsafe-inline'\">\n<title>KForge comparison</title>\n<style>body{font:14px/1.45 "
      "system-ui,sans-serif;margin:20px;color:#1b1f24}table{border-collapse:collapse;margin:6px 0 "
      "14px;font-size:13px}th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left}th{"
      "background:#f6f8fa}td.n{text-align:right}.up{background:#dafbe1}.down{background:#ffebe9}"
      "</style></head><body>\n";
  out += fmt::format("<h1>KForge comparison</h1>\n<p>A: {}<br>B: {}</p>\n", H(RunLabel(c.a)), H(RunLabel(c.b)));
  out += "<p>Headline figures per precision group (degenerate and held-for-review tasks excluded, "
         "as in kforge report). Speedups are each task's best correct candidate as stored in its "
         "verdicts.</p>\n";
  for (const GroupComparison& g : c.groups) {
    out += fmt::format("<h2>precision {}</h2>\n<table><tr><th>figure</th><th>A</th><th>B</th><th>B − A</th></tr>\n",
                       H(g.precision.Describe()));
    for (const MetricRow& r : MetricRows(g)) {
      const char* cls = r.a && r.b ? (*r.b > *r.a ? " class=up" : *r.b < *r.a ? " class=down" : "") : "";
      out += fmt::format("<tr><td>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n{}>{}</td></tr>\n",
                         H(r.label), Value(r.a, r.percent), Value(r.b, r.percent), cls,
                         H(Delta(r.a, r.b, r.percent)));
    }
    out += "</table>\n";
  }
  out += "<h2>Tasks</h2>\n<table><tr><th>task</th><th>status A</th><th>status B</th><th>speedup A "
         "vs eager</th><th>speedup B vs eager</th><th>B / A</th></tr>\n";
  for (const TaskComparison& t : c.tasks) {
    const char* cls = t.speedup_ratio ? (*t.speedup_ratio > 1 ? " class=up" : *t.speedup_ratio < 1 ? " class=down" : "") : "";
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n{}>{}</td></tr>\n",
                       H(t.name), H(Cell(t.a)), H(Cell(t.b)), H(SpeedupText(t.a)), H(SpeedupText(t.b)), cls,
                       t.speedup_ratio ? fmt::format("{:.2f}", *t.speedup_ratio) : "—");
  }
  out += "</table>\n</body></html>\n";
  return out;
}

std::string RenderCompareJson(const Comparison& c) {
  json j;
  j["compare_version"] = 1;
  j["a"] = {{"run", c.a.data->run.id}, {"model", c.a.data->model}};
  j["b"] = {{"run", c.b.data->run.id}, {"model", c.b.data->model}};
  json groups = json::array();
  for (const GroupComparison& g : c.groups) {
    json rows = json::array();
    for (const MetricRow& r : MetricRows(g)) {
      rows.push_back({{"figure", r.label}, {"a", Num(r.a)}, {"b", Num(r.b)},
                      {"delta", r.a && r.b ? Num(*r.b - *r.a) : json(nullptr)}});
    }
    groups.push_back({{"precision", g.precision.Describe()}, {"figures", rows}});
  }
  j["groups"] = groups;
  json tasks = json::array();
  for (const TaskComparison& t : c.tasks) {
    tasks.push_back({{"task", t.name},
                     {"status_a", t.a ? json(t.a->status) : json(nullptr)},
                     {"status_b", t.b ? json(t.b->status) : json(nullptr)},
                     {"speedup_vs_eager_a", t.a ? Num(t.a->best_speedup[kEager]) : json(nullptr)},
                     {"speedup_vs_eager_b", t.b ? Num(t.b->best_speedup[kEager]) : json(nullptr)},
                     {"ratio_b_over_a", Num(t.speedup_ratio)}});
  }
  j["tasks"] = tasks;
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace kforge::report
