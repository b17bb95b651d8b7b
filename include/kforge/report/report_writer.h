// `kforge report`: a run's figures written as HTML (index.html + tasks/*.html), JSON
// (report.json) and CSV (tasks.csv, candidates.csv) into one folder.
#ifndef KFORGE_REPORT_REPORT_WRITER_H_
#define KFORGE_REPORT_REPORT_WRITER_H_

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/report/metrics.h"
#include "kforge/report/run_data.h"

namespace kforge::report {

struct ReportOptions {
  std::filesystem::path out_dir;  // created if needed
  bool html = true;
  bool json = true;
  bool csv = true;
  // Chart.js (UMD build) to inline into index.html. Empty: $KFORGE_CHARTJS, else Debian's
  // /usr/share/javascript/chart.js/chart.min.js. When none can be read the report is written
  // without charts and ReportFiles::warnings says so.
  std::filesystem::path chartjs;
  unsigned threads = 0;  // task pages rendered in parallel; 0: one per core
  // Called with one line of progress now and then (long runs); may be empty.
  std::function<void(std::string_view)> progress;
};

struct ReportFiles {
  std::vector<std::filesystem::path> written;  // the main files (task pages counted, not listed)
  std::size_t task_pages = 0;
  std::vector<std::string> warnings;
};

// Parses "html,json,csv" (any subset, any order) into `options`; kInvalidArgument naming the
// unknown word otherwise.
Status ParseFormats(std::string_view formats, ReportOptions& options);

// The Chart.js text to inline (see ReportOptions::chartjs); kNotFound naming the paths tried and
// the package to install.
Result<std::string> LoadChartJs(const std::filesystem::path& explicit_path);

// Writes the report of `opened` (whose data and metrics are `run` and `metrics`).
Result<ReportFiles> WriteReport(const OpenedRun& opened, const RunData& run, const RunMetrics& metrics,
                                const ReportOptions& options);

}  // namespace kforge::report

#endif  // KFORGE_REPORT_REPORT_WRITER_H_
