// The report's outputs: report.json against a golden file, CSV, HTML escaping of everything a
// candidate or a model wrote, and the comparison of two runs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "kforge/core/files.h"
#include "kforge/report/compare.h"
#include "kforge/report/html_report.h"
#include "kforge/report/report_json.h"
#include "kforge/report/report_writer.h"
#include "scratch_dir.h"
#include "store_builder.h"

namespace kforge::report {
namespace {

using testing::ScratchDir;
using testing::StoreBuilder;
using testing::VerdictSpec;

const std::filesystem::path kGolden =
    std::filesystem::path(KFORGE_SOURCE_HOME) / "tests/report/golden/report.json";

VerdictSpec Timed(double speedup) {
  VerdictSpec v;
  v.candidate_median_s = 2e-3 / speedup;
  v.eager_median_s = 2e-3;
  v.speedup_vs_eager = speedup;
  return v;
}

// A small run with every kind of task the report distinguishes.
void FixedRun(const std::filesystem::path& dir, const std::string& run_id = "run-golden",
              const std::string& model = "model-a", double scale = 1.0) {
  StoreBuilder b(dir, run_id, model);
  auto gemm = b.Task("gemm_relu", "strict", R"({"flops": 2e9, "bytes": 1.2e7})");
  auto call0 = b.LlmCall(1200, 400, 0.012);
  auto c0 = b.Candidate(gemm, 0, 0, "int main() {\n  return 1;\n}\n", std::nullopt, call0);
  VerdictSpec failed;
  failed.status = "compile_error";
  failed.timed = false;
  failed.message = "did not compile";
  b.Evaluate(c0, failed);
  auto call1 = b.LlmCall(1500, 500, 0.015);
  auto c1 = b.Candidate(gemm, 0, 1, "int main() {\n  return 0;\n}\n", c0, call1);
  VerdictSpec ok = Timed(1.7 * scale);
  ok.new_timing_fields = true;
  ok.compile_median_s = 1.5e-3;
  ok.speedup_vs_compile = 1.2 * scale;
  ok.speedup_vs_best_baseline = 1.2 * scale;
  ok.sol_fraction = 0.35;
  auto e1 = b.Evaluate(c1, ok);
  b.Profile(e1, "dram 80%");
  b.Recommend(c1, R"({"recommendations":[{"title":"use shared memory"}]})");

  auto softmax = b.Task("softmax", "strict");
  b.Evaluate(b.Candidate(softmax, 0, 0, "a\n"), Timed(0.8));

  auto zeros = b.Task("all_zero_task", "strict");
  VerdictSpec degenerate = Timed(30);
  degenerate.degenerate = true;
  b.Evaluate(b.Candidate(zeros, 0, 0, "z\n"), degenerate);

  auto held = b.Task("too_fast", "strict");
  VerdictSpec h = Timed(25);
  h.new_timing_fields = true;
  h.held_for_review = true;
  h.review_reason = "speedup above 10x";
  b.Evaluate(b.Candidate(held, 0, 0, "h\n"), h);

  auto mixed = b.Task("bf16_matmul", "mixed");
  VerdictSpec m = Timed(2.5);
  m.policy = "mixed";
  m.atol = m.rtol = 1e-2;
  b.Evaluate(b.Candidate(mixed, 0, 0, "m\n"), m);

  b.Task("never_generated", "strict");
  b.LlmCall(10, 0, 0.001);  // not credited to a task
  b.Finish();
}

struct Built {
  OpenedRun opened;
  RunData data;
  RunMetrics metrics;
};

Built Build(const std::filesystem::path& dir) {
  auto opened = OpenRunForReading(dir, "");
  if (!opened) throw std::runtime_error(opened.error().message);
  auto data = LoadRunData(*opened);
  if (!data) throw std::runtime_error(data.error().message);
  auto metrics = ComputeMetrics(*data);
  return {std::move(*opened), std::move(*data), std::move(metrics)};
}

TEST(ReportJson, MatchesGoldenFile) {
  ScratchDir dir;
  FixedRun(dir.path());
  auto built = Build(dir.path());
  const std::string json = RenderReportJson(built.data, built.metrics);
  if (std::getenv("KFORGE_UPDATE_GOLDEN") != nullptr) {
    ASSERT_TRUE(WriteFile(kGolden, json).has_value());
  }
  auto golden = ReadFile(kGolden);
  ASSERT_TRUE(golden.has_value()) << golden.error().message
                                  << " (KFORGE_UPDATE_GOLDEN=1 writes it; review the diff)";
  EXPECT_EQ(json, *golden) << "report.json changed; if intended, rerun with KFORGE_UPDATE_GOLDEN=1 "
                              "and review the diff";
  // Independently of the golden text: the figures that matter.
  auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["counts"]["degenerate_tasks"], 1);
  EXPECT_EQ(j["counts"]["held_for_review_tasks"], 1);
  const auto& strict = j["groups"][1];  // groups sort by class, then policy: mixed, strict
  EXPECT_EQ(strict["precision"]["policy"], "strict");
  EXPECT_EQ(strict["tasks"], 3);  // gemm_relu, softmax, never_generated
  EXPECT_NEAR(strict["baselines"]["eager"]["fast_p"]["1"].get<double>(), 1.0 / 3, 1e-6);
  EXPECT_NEAR(strict["baselines"]["eager"]["fast_p"]["0"].get<double>(), 2.0 / 3, 1e-6);
  EXPECT_TRUE(strict["baselines"]["compile"]["geomean_speedup"].is_number());
  EXPECT_EQ(strict["baselines"]["compile"]["correct_without_speedup"], 1);  // softmax: v1 timing
}

TEST(ReportCsv, OneRowPerTaskAndCandidateWithFormulaGuard) {
  ScratchDir dir;
  {
    StoreBuilder b(dir.path());
    auto t = b.Task("=HYPERLINK(\"http://x\",\"y\")");
    VerdictSpec v;
    v.timed = false;
    b.Evaluate(b.Candidate(t, 0, 0, "x"), v);
    b.Finish();
  }
  auto built = Build(dir.path());
  const std::string tasks = RenderTasksCsv(built.data, built.metrics);
  EXPECT_NE(tasks.find("\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\""), std::string::npos) << tasks;
  EXPECT_EQ(std::count(tasks.begin(), tasks.end(), '\n'), 2);
  const std::string candidates = RenderCandidatesCsv(built.data);
  EXPECT_EQ(std::count(candidates.begin(), candidates.end(), '\n'), 2);
}

// A run whose tasks are all apart (here: held for review, as the demo's kernels were) still draws
// its charts: the apart tasks come in series of their own, named so. Before, all four charts of
// the demo's report were empty.
TEST(ReportHtml, ChartsShowTasksReportedApart) {
  ScratchDir dir;
  {
    StoreBuilder b(dir.path());
    auto t = b.Task("held_only");
    b.Evaluate(b.Candidate(t, 0, 0, "a\n"), Timed(1.5));
    VerdictSpec h = Timed(4.98);
    h.new_timing_fields = true;
    h.held_for_review = true;
    h.review_reason = "speedup above 10x vs the fastest baseline";
    b.Evaluate(b.Candidate(t, 0, 1, "b\n"), h);
    b.Finish();
  }
  auto built = Build(dir.path());
  ASSERT_EQ(built.metrics.headline_tasks, 0);
  const std::string index = RenderIndexHtml(built.data, built.metrics, "/* chart.js */");
  EXPECT_NE(index.find("correct tasks by best speedup vs eager (held for review, apart)"),
            std::string::npos);
  EXPECT_NE(index.find("vs eager (held for review, apart)"), std::string::npos);  // fast_p
  EXPECT_NE(index.find("share of tasks correct (held for review, apart)"), std::string::npos);
  EXPECT_EQ(index.find("no correct task in this run"), std::string::npos);
}

// Iterations are numbered from 1 in the report's files, as the terminal counts them; the store
// keeps them from 0.
TEST(ReportCsv, IterationsAreNumberedFromOne) {
  ScratchDir dir;
  {
    StoreBuilder b(dir.path());
    auto t = b.Task("t");
    b.Evaluate(b.Candidate(t, 0, 0, "x"), Timed(1.2));
    b.Finish();
  }
  auto built = Build(dir.path());
  const std::string candidates = RenderCandidatesCsv(built.data);
  const std::string row = candidates.substr(candidates.find('\n') + 1);
  // task,candidate,parent,sample,iteration,...
  std::vector<std::string> cells;
  std::stringstream in(row.substr(0, row.find('\n')));
  for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
  ASSERT_GT(cells.size(), 4u) << row;
  EXPECT_EQ(cells[3], "0");  // sample
  EXPECT_EQ(cells[4], "1");  // the first iteration
  auto j = nlohmann::json::parse(RenderReportJson(built.data, built.metrics));
  EXPECT_EQ(j["report_version"], 2);
  EXPECT_EQ(j["counts"]["max_iteration"], 1);
  EXPECT_EQ(j["groups"][0]["iterations"][0]["iteration"], 1);
}

// Everything a candidate or a model wrote, with markup in it.
constexpr const char* kEvil = "</pre><script>alert(1)</script><img src=x onerror=alert(2)>";

TEST(ReportHtml, TextFromTheRunCannotInjectMarkup) {
  ScratchDir dir;
  {
    StoreBuilder b(dir.path(), "run-<b>evil</b>", "<script>model()</script>");
    auto t = b.Task(std::string("task") + kEvil, std::string("strict") + kEvil);
    VerdictSpec v = Timed(2.0);
    v.policy = std::string("strict</script><script>alert(3)</script>");
    v.message = std::string("message ") + kEvil;
    v.diagnostics = std::string("diagnostics ") + kEvil;
    v.new_timing_fields = true;
    v.held_for_review = true;
    v.review_reason = std::string("reason ") + kEvil;
    auto c0 = b.Candidate(t, 0, 0, std::string("source ") + kEvil + "\n");
    auto e0 = b.Evaluate(c0, v);
    b.Profile(e0, std::string("profile ") + kEvil);
    b.Recommend(c0, nlohmann::json{{"advice", kEvil}}.dump());
    auto c1 = b.Candidate(t, 0, 1, std::string("source ") + kEvil + "\nmore " + kEvil + "\n", c0);
    VerdictSpec best = Timed(1.5);
    best.policy = v.policy;
    b.Evaluate(c1, best);
    b.Finish();
  }
  auto built = Build(dir.path());
  const std::string index = RenderIndexHtml(built.data, built.metrics, "/* chart.js */");
  auto page = RenderTaskHtml(built.data, built.metrics, 0, *built.opened.store);
  ASSERT_TRUE(page.has_value());
  for (const std::string* html : {&index, static_cast<const std::string*>(&*page)}) {
    EXPECT_EQ(html->find("<script>alert"), std::string::npos);
    EXPECT_EQ(html->find("<img"), std::string::npos);
    EXPECT_EQ(html->find("<b>evil"), std::string::npos);
    EXPECT_EQ(html->find("<script>model"), std::string::npos);
    EXPECT_EQ(html->find("</script><script>alert(3)"), std::string::npos);
  }
  // The text is there, escaped: the diff and the messages are shown, not dropped.
  EXPECT_NE(page->find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(page->find("+more &lt;/pre&gt;"), std::string::npos);
  EXPECT_NE(page->find("profile &lt;/pre&gt;"), std::string::npos);
  EXPECT_NE(page->find("reason &lt;/pre&gt;"), std::string::npos);
  // Every <script> element of the index is one of the report's own three.
  std::size_t scripts = 0;
  for (std::size_t at = index.find("<script"); at != std::string::npos; at = index.find("<script", at + 1)) {
    ++scripts;
  }
  EXPECT_EQ(scripts, 3u);
  EXPECT_EQ(page->find("<script"), std::string::npos);
}

// A candidate rewritten from scratch: its diff (every line deleted and inserted) is cut at 2,000
// lines with a note, and its full source is shown instead; an ordinary diff is not cut.
TEST(ReportHtml, AVeryLongDiffIsCutAndTheFullSourceShown) {
  ScratchDir dir;
  {
    StoreBuilder b(dir.path());
    auto t = b.Task("rewrite");
    std::string old_source, new_source;
    for (int i = 0; i < 3000; ++i) {
      old_source += fmt::format("old line {}\n", i);
      new_source += fmt::format("new line {}\n", i);
    }
    auto c0 = b.Candidate(t, 0, 0, old_source);
    b.Evaluate(c0, Timed(1.0));
    auto c1 = b.Candidate(t, 0, 1, new_source, c0);
    b.Evaluate(c1, Timed(0.5));  // not the best: its full source is shown only because of the cut
    auto c2 = b.Candidate(t, 0, 2, new_source + "one more line\n", c1);
    b.Evaluate(c2, Timed(0.4));
    b.Finish();
  }
  auto built = Build(dir.path());
  auto page = RenderTaskHtml(built.data, built.metrics, 0, *built.opened.store);
  ASSERT_TRUE(page.has_value()) << page.error().message;
  // The cut diff: 2,000 lines of its 6,003 (3 header lines, 3,000 deletions, 3,000 insertions).
  EXPECT_NE(page->find("Diff cut after 2000 lines (4003 more not shown); the full source is below."),
            std::string::npos);
  EXPECT_EQ(page->find("Diff cut after", page->find("Diff cut after") + 1), std::string::npos)
      << "only the rewrite's diff is cut";
  EXPECT_NE(page->find("<span class=d>-old line 1996</span>"), std::string::npos);
  EXPECT_EQ(page->find("<span class=d>-old line 1997</span>"), std::string::npos);
  EXPECT_EQ(page->find("<span class=a>+new line 0</span>"), std::string::npos);
  // The full source of the rewrite follows the cut diff (new line 2999 appears in it, and in the
  // next candidate's diff context).
  const auto cut = page->find("Diff cut after");
  const auto full = page->find("<summary>full source</summary><pre>new line 0\n", cut);
  ASSERT_NE(full, std::string::npos);
  EXPECT_NE(page->find("new line 2999\n</pre>", full), std::string::npos);
  // The next, one-line change is an ordinary diff.
  EXPECT_NE(page->find("<span class=a>+one more line</span>"), std::string::npos);
}

TEST(ReportWriter, WritesTheChosenFormatsAndTaskPages) {
  ScratchDir dir;
  FixedRun(dir.path() / "run");
  auto built = Build(dir.path() / "run");
  ReportOptions options;
  ASSERT_TRUE(ParseFormats("json,html", options).has_value());
  EXPECT_FALSE(ParseFormats("html,pdf", options).has_value());
  ASSERT_TRUE(ParseFormats("json,html", options).has_value());
  options.out_dir = dir.path() / "out";
  options.chartjs = dir.path() / "no-chart.js";  // absent: a warning, a page without charts
  auto files = WriteReport(built.opened, built.data, built.metrics, options);
  ASSERT_TRUE(files.has_value()) << files.error().message;
  EXPECT_TRUE(std::filesystem::exists(options.out_dir / "report.json"));
  EXPECT_TRUE(std::filesystem::exists(options.out_dir / "index.html"));
  EXPECT_FALSE(std::filesystem::exists(options.out_dir / "tasks.csv"));
  EXPECT_EQ(files->task_pages, built.data.tasks.size());
  for (std::size_t i = 0; i < built.data.tasks.size(); ++i) {
    EXPECT_TRUE(std::filesystem::exists(options.out_dir / TaskPagePath(i)));
  }
  ASSERT_EQ(files->warnings.size(), 1u);
  EXPECT_NE(files->warnings[0].find("libjs-chart.js"), std::string::npos);
  auto index = ReadFile(options.out_dir / "index.html");
  EXPECT_NE(index->find("Chart.js was not found"), std::string::npos);
}

TEST(ReportCompare, SideBySideWithDeltas) {
  ScratchDir dir;
  FixedRun(dir.path() / "a", "run-a", "model-a", 1.0);
  FixedRun(dir.path() / "b", "run-b", "model-b", 2.0);
  auto a = Build(dir.path() / "a");
  auto b = Build(dir.path() / "b");
  const auto c = CompareRuns({&a.data, &a.metrics}, {&b.data, &b.metrics});
  ASSERT_EQ(c.tasks.size(), 6u);
  const TaskComparison* gemm = nullptr;
  for (const auto& t : c.tasks) {
    if (t.name == "gemm_relu") gemm = &t;
  }
  ASSERT_NE(gemm, nullptr);
  EXPECT_NEAR(*gemm->speedup_ratio, 2.0, 1e-9);
  const std::string text = RenderCompareText(c);
  EXPECT_NE(text.find("model-b"), std::string::npos);
  EXPECT_NE(text.find("geomean speedup vs eager"), std::string::npos);
  auto j = nlohmann::json::parse(RenderCompareJson(c));
  EXPECT_EQ(j["b"]["model"], "model-b");
  bool found = false;
  for (const auto& g : j["groups"]) {
    if (g["precision"].get<std::string>().starts_with("strict")) {
      for (const auto& f : g["figures"]) {
        if (f["figure"] == "geomean speedup vs compile") {
          EXPECT_NEAR(f["delta"].get<double>(), 1.2, 1e-6);  // 2.4 - 1.2
          found = true;
        }
      }
    }
  }
  EXPECT_TRUE(found);
  const std::string html = RenderCompareHtml(c);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

}  // namespace
}  // namespace kforge::report
