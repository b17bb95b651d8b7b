// The HTML report: index.html (summary tables, four charts, the tasks reported apart, the task
// table) and one page per task (candidate history with diffs, verdicts, timings, profile
// summaries, recommendations). Pages load nothing from the network: styles are inline and
// Chart.js, when given, is inlined into index.html. Every text from the run is escaped
// (html_escape.h); chart data travels as JSON inside <script type="application/json">.
//
// After Chart.js has drawn a chart whose canvas has painted pixels, the page's inline script
// raises the <body> attribute data-charts-rendered (to 4 when all four charts drew), which a
// headless browser test reads; data-charts-error says why when Chart.js is missing.
#ifndef KFORGE_REPORT_HTML_REPORT_H_
#define KFORGE_REPORT_HTML_REPORT_H_

#include <string>
#include <string_view>

#include "kforge/core/error.h"
#include "kforge/report/metrics.h"
#include "kforge/report/run_data.h"
#include "kforge/store/run_store.h"

namespace kforge::report {

inline constexpr int kIndexCharts = 4;

// File name of task `task_index`'s page, relative to the report folder: tasks/task-0001.html.
std::string TaskPagePath(std::size_t task_index);

// index.html. `chartjs` is the text of Chart.js (UMD build) to inline; empty gives a page whose
// chart areas say that Chart.js was missing when the report was made.
std::string RenderIndexHtml(const RunData& run, const RunMetrics& metrics, std::string_view chartjs);

// The page of task `task_index`; reads candidate sources, profile summaries and recommendations
// from `store`. A missing artifact is shown as such on the page, not an error.
Result<std::string> RenderTaskHtml(const RunData& run, const RunMetrics& metrics,
                                   std::size_t task_index, store::RunStore& store);
// The same into `out` (cleared first), so that a writer of many pages reuses one buffer.
Status RenderTaskHtml(const RunData& run, const RunMetrics& metrics, std::size_t task_index,
                      store::RunStore& store, std::string& out);

}  // namespace kforge::report

#endif  // KFORGE_REPORT_HTML_REPORT_H_
