#include "report_command.h"
#include "exit_codes.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "kforge/core/files.h"
#include "kforge/report/compare.h"
#include "kforge/report/metrics.h"
#include "kforge/report/report_writer.h"
#include "kforge/report/run_data.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

constexpr int kExitUsage = 2;  // bad input, named in the message
constexpr int kExitInfra = 3;  // the store or the file system failed

int ExitFor(const Error& e) {
  return e.code == ErrorCode::kInvalidArgument || e.code == ErrorCode::kNotFound ? kExitUsage : kExitInfra;
}

struct ReportArgs {
  std::string run_dir;
  std::string out;
  std::string formats = "html,json,csv";
  std::string run_id;
  std::string chartjs;
};

struct Loaded {
  report::OpenedRun opened;
  report::RunData data;
  report::RunMetrics metrics;
};

Result<Loaded> Load(const std::string& run_dir, const std::string& run_id) {
  auto opened = report::OpenRunForReading(run_dir, run_id);
  if (!opened) return std::unexpected(opened.error());
  auto data = report::LoadRunData(*opened);
  if (!data) return std::unexpected(data.error());
  auto metrics = report::ComputeMetrics(*data);
  return Loaded{std::move(*opened), std::move(*data), std::move(metrics)};
}

void PrintHeadline(const report::RunMetrics& m) {
  for (const auto& g : m.groups) {
    if (g.task_class != report::TaskClass::kHeadline) continue;
    const auto& eager = g.baselines[0];
    fmt::print("  {}: {} tasks, correct {}/{}, fast_1 vs eager {}, geomean speedup vs eager {}\n",
               g.precision.Describe(), g.tasks, g.correct, g.tasks,
               eager.measured == 0 ? "not measured" : fmt::format("{:.1f}%", eager.fast_p[3].value_or(0) * 100),
               eager.geomean_speedup ? fmt::format("{:.2f}x (n={})", *eager.geomean_speedup, eager.measured)
                                     : std::string("not measured"));
  }
  if (m.degenerate_tasks > 0) fmt::print("  degenerate tasks (apart): {}\n", m.degenerate_tasks);
  if (m.held_tasks > 0) fmt::print("  tasks held for review (apart): {}\n", m.held_tasks);
}

int RunReport(const ReportArgs& args) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  report::ReportOptions options;
  if (auto parsed = report::ParseFormats(args.formats, options); !parsed) {
    fmt::print(stderr, "kforge report: {}\n", parsed.error().message);
    return kExitUsage;
  }
  auto loaded = Load(args.run_dir, args.run_id);
  if (!loaded) {
    fmt::print(stderr, "kforge report: {}\n", loaded.error().message);
    return ExitFor(loaded.error());
  }
  std::size_t candidates = 0;
  for (const auto& t : loaded->data.tasks) candidates += t.candidates.size();
  const double load_s = std::chrono::duration<double>(Clock::now() - start).count();
  fmt::print("run {} ({}): {} tasks, {} candidates, read in {:.2f} s\n", loaded->data.run.id,
             store::ToString(loaded->data.run.status), loaded->data.tasks.size(), candidates, load_s);
  std::fflush(stdout);
  options.out_dir = args.out.empty() ? loaded->opened.run_dir / "report" : fs::absolute(args.out);
  options.chartjs = args.chartjs;
  options.progress = [](std::string_view line) {
    fmt::print("  {}\n", line);
    std::fflush(stdout);
  };
  auto files = report::WriteReport(loaded->opened, loaded->data, loaded->metrics, options);
  if (!files) {
    fmt::print(stderr, "kforge report: {}\n", files.error().message);
    return ExitFor(files.error());
  }
  for (const auto& w : files->warnings) fmt::print(stderr, "kforge report: warning: {}\n", w);
  PrintHeadline(loaded->metrics);
  for (const auto& f : files->written) fmt::print("wrote {}\n", f.string());
  if (files->task_pages > 0) {
    fmt::print("wrote {} task pages under {}\n", files->task_pages, (options.out_dir / "tasks").string());
  }
  fmt::print("done in {:.2f} s\n", std::chrono::duration<double>(Clock::now() - start).count());
  return kExitOk;
}

struct CompareArgs {
  std::string run_a, run_b;
  std::string run_id_a, run_id_b;
  std::string out;
};

int RunCompare(const CompareArgs& args) {
  auto a = Load(args.run_a, args.run_id_a);
  if (!a) {
    fmt::print(stderr, "kforge compare: run A: {}\n", a.error().message);
    return ExitFor(a.error());
  }
  auto b = Load(args.run_b, args.run_id_b);
  if (!b) {
    fmt::print(stderr, "kforge compare: run B: {}\n", b.error().message);
    return ExitFor(b.error());
  }
  const auto comparison = report::CompareRuns({&a->data, &a->metrics}, {&b->data, &b->metrics});
  fmt::print("{}", report::RenderCompareText(comparison));
  if (!args.out.empty()) {
    const fs::path out = fs::absolute(args.out);
    const bool json = out.extension() == ".json";
    if (out.has_parent_path()) {
      if (auto made = MakeDirs(out.parent_path()); !made) {
        fmt::print(stderr, "kforge compare: {}\n", made.error().message);
        return kExitInfra;
      }
    }
    auto written = WriteFile(out, json ? report::RenderCompareJson(comparison)
                                       : report::RenderCompareHtml(comparison));
    if (!written) {
      fmt::print(stderr, "kforge compare: {}\n", written.error().message);
      return kExitInfra;
    }
    fmt::print("wrote {}\n", out.string());
  }
  return kExitOk;
}

}  // namespace

void AddReportCommand(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand(
      "report",
      "Write a run's report: index.html (summary per precision group, fast_p curve, speedup "
      "distribution, speedup by iteration, roofline scatter; works offline, Chart.js inlined) "
      "with one page per task (candidate history with diffs, verdicts, timings, profile "
      "summaries, recommendations), report.json, tasks.csv and candidates.csv. docs/report.md "
      "defines every figure. Reads the run store only.");
  cmd->footer(ExitCodesFooter("report"));
  cmd->add_option("run_dir", args->run_dir, "The run directory (a `kforge run` or `kforge bench` folder)")
      ->required();
  cmd->add_option("-o,--out", args->out, "Folder to write the report into; default: RUN_DIR/report");
  cmd->add_option("--format", args->formats, "Comma-separated formats: html, json, csv")
      ->default_val("html,json,csv");
  cmd->add_option("--run", args->run_id, "Run id inside the store; default: its newest run");
  cmd->add_option("--chartjs", args->chartjs,
                  "Chart.js file to inline; default: $KFORGE_CHARTJS, else "
                  "/usr/share/javascript/chart.js/chart.min.js (Debian libjs-chart.js)");
  cmd->callback([args] {
    int code = RunReport(*args);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

void AddCompareCommand(CLI::App& app) {
  auto args = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand(
      "compare",
      "Put two runs side by side (e.g. two models on one suite): the headline figures of each "
      "precision group with their deltas (B - A), and per task the status and best speedup vs "
      "eager in each run. Prints a table; --out also writes it as HTML (or JSON for a .json "
      "file).");
  cmd->footer(ExitCodesFooter("compare"));
  cmd->add_option("run_a", args->run_a, "Run directory A")->required();
  cmd->add_option("run_b", args->run_b, "Run directory B")->required();
  cmd->add_option("-o,--out", args->out, "Write the comparison to this file (.html or .json)");
  cmd->add_option("--run-a", args->run_id_a, "Run id inside A's store; default: its newest run");
  cmd->add_option("--run-b", args->run_id_b, "Run id inside B's store; default: its newest run");
  cmd->callback([args] {
    int code = RunCompare(*args);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace kforge
