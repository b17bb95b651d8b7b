#include "kforge/report/report_writer.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <future>
#include <thread>

#include "kforge/core/files.h"
#include "kforge/core/thread_pool.h"
#include "kforge/report/html_report.h"
#include "kforge/report/report_json.h"

namespace kforge::report {
namespace fs = std::filesystem;

Status ParseFormats(std::string_view formats, ReportOptions& options) {
  options.html = options.json = options.csv = false;
  std::size_t start = 0;
  bool any = false;
  while (start <= formats.size()) {
    std::size_t end = formats.find(',', start);
    if (end == std::string_view::npos) end = formats.size();
    const std::string_view word = formats.substr(start, end - start);
    if (word == "html") {
      options.html = true;
    } else if (word == "json") {
      options.json = true;
    } else if (word == "csv") {
      options.csv = true;
    } else {
      return InvalidArgument(fmt::format(
          "--format: unknown format '{}'; give a comma-separated list of html, json, csv", word));
    }
    any = true;
    start = end + 1;
  }
  if (!any) return InvalidArgument("--format: give at least one of html, json, csv");
  return Ok();
}

Result<std::string> LoadChartJs(const fs::path& explicit_path) {
  std::vector<fs::path> candidates;
  if (!explicit_path.empty()) {
    candidates.push_back(explicit_path);
  } else {
    if (const char* env = std::getenv("KFORGE_CHARTJS"); env != nullptr && *env != '\0') {
      candidates.emplace_back(env);
    }
    candidates.emplace_back("/usr/share/javascript/chart.js/chart.min.js");
    candidates.emplace_back("/usr/share/javascript/chart.js/chart.js");
  }
  std::string tried;
  for (const auto& p : candidates) {
    auto text = ReadFile(p);
    if (text && !text->empty()) {
      // Inlined into a <script> element: a "</script" inside would end it early.
      if (text->find("</script") != std::string::npos) {
        return InvalidArgument(fmt::format("{} contains \"</script\" and cannot be inlined", p.string()));
      }
      return std::move(*text);
    }
    tried += fmt::format("{}{}", tried.empty() ? "" : ", ", p.string());
  }
  return NotFound(fmt::format(
      "Chart.js not found (tried {}); install Debian's libjs-chart.js (apt-get install "
      "libjs-chart.js) or set KFORGE_CHARTJS to a chart.min.js",
      tried));
}

Result<ReportFiles> WriteReport(const OpenedRun& opened, const RunData& run, const RunMetrics& metrics,
                                const ReportOptions& options) {
  ReportFiles files;
  KFORGE_RETURN_IF_ERROR(MakeDirs(options.out_dir));
  auto write = [&](const std::string& name, const std::string& text) -> Status {
    const fs::path path = options.out_dir / name;
    KFORGE_RETURN_IF_ERROR(WriteFile(path, text));
    files.written.push_back(path);
    return Ok();
  };
  if (options.json) KFORGE_RETURN_IF_ERROR(write("report.json", RenderReportJson(run, metrics)));
  if (options.csv) {
    KFORGE_RETURN_IF_ERROR(write("tasks.csv", RenderTasksCsv(run, metrics)));
    KFORGE_RETURN_IF_ERROR(write("candidates.csv", RenderCandidatesCsv(run)));
  }
  if (!options.html) return files;

  std::string chartjs;
  if (auto loaded = LoadChartJs(options.chartjs); loaded) {
    chartjs = std::move(*loaded);
  } else {
    files.warnings.push_back(loaded.error().message + "; the HTML report has no charts");
  }
  KFORGE_RETURN_IF_ERROR(MakeDirs(options.out_dir / "tasks"));
  // Task pages in parallel: each reads its candidates' sources and writes its own file.
  const std::size_t n = run.tasks.size();
  unsigned threads = options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, std::max<std::size_t>(n, 1)));
  std::atomic<std::size_t> next{0}, done{0};
  std::vector<Error> errors(threads);
  std::vector<bool> failed(threads, false);
  auto worker = [&](unsigned w) {
    std::string page;  // one buffer per worker, reused from page to page
    for (std::size_t i = next++; i < n; i = next++) {
      Status written = RenderTaskHtml(run, metrics, i, *opened.store, page);
      if (written) written = WriteFile(options.out_dir / TaskPagePath(i), page);
      if (!written) {
        errors[w] = written.error();
        failed[w] = true;
        next = n;
        return;
      }
      const std::size_t d = ++done;
      if (options.progress && n >= 200 && d % (n / 10) == 0) {
        options.progress(fmt::format("task pages: {}/{}", d, n));
      }
    }
  };
  if (threads <= 1) {
    worker(0);
  } else {
    ThreadPool pool(threads);
    std::vector<std::future<void>> futures;
    for (unsigned w = 0; w < threads; ++w) futures.push_back(pool.Submit([&, w] { worker(w); }));
    for (auto& f : futures) f.get();
  }
  for (unsigned w = 0; w < threads; ++w) {
    if (failed[w]) return std::unexpected(errors[w]);
  }
  files.task_pages = n;
  KFORGE_RETURN_IF_ERROR(write("index.html", RenderIndexHtml(run, metrics, chartjs)));
  return files;
}

}  // namespace kforge::report
