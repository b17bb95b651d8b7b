// `kforge compare RUN_A RUN_B`: two runs side by side (e.g. two models on one suite): per task the
// status and best speedup in each, and the deltas of the headline figures of every precision
// group both runs have. Tasks are matched by name; a task in one run only is listed as such.
#ifndef KFORGE_REPORT_COMPARE_H_
#define KFORGE_REPORT_COMPARE_H_

#include <optional>
#include <string>
#include <vector>

#include "kforge/report/metrics.h"
#include "kforge/report/run_data.h"

namespace kforge::report {

struct RunSide {
  const RunData* data = nullptr;
  const RunMetrics* metrics = nullptr;
};

struct TaskComparison {
  std::string name;
  const TaskOutcome* a = nullptr;  // null when the task is not in run A
  const TaskOutcome* b = nullptr;
  // B's best speedup vs eager / A's, when both are measured.
  std::optional<double> speedup_ratio;
};

struct GroupComparison {
  PrecisionKey precision;
  const GroupMetrics* a = nullptr;  // null when run A has no headline tasks under this precision
  const GroupMetrics* b = nullptr;
};

struct Comparison {
  RunSide a, b;
  std::vector<TaskComparison> tasks;    // by name
  std::vector<GroupComparison> groups;  // headline groups of either run
};

Comparison CompareRuns(RunSide a, RunSide b);

// A plain-text table for the terminal.
std::string RenderCompareText(const Comparison& c);
// A self-contained HTML page (no scripts), every run text escaped.
std::string RenderCompareHtml(const Comparison& c);
// The same as JSON (compare_version 1).
std::string RenderCompareJson(const Comparison& c);

}  // namespace kforge::report

#endif  // KFORGE_REPORT_COMPARE_H_
