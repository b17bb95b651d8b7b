// The machine-readable forms of a report: report.json (figures, per-task outcomes, the apart
// lists) and two CSV tables (one row per task, one row per candidate). docs/report.md documents
// the fields; `report_version` changes when a field changes meaning.
#ifndef KFORGE_REPORT_REPORT_JSON_H_
#define KFORGE_REPORT_REPORT_JSON_H_

#include <string>

#include "kforge/report/metrics.h"
#include "kforge/report/run_data.h"

namespace kforge::report {

// 2: iterations are numbered from 1 (1: as stored, from 0); a best candidate by store/ranking.h.
inline constexpr int kReportVersion = 2;

// report.json: deterministic for a given store (no generation time, sorted keys, numbers rounded
// to 6 significant digits), so that it can be compared and golden-tested.
std::string RenderReportJson(const RunData& run, const RunMetrics& metrics);

// tasks.csv: one row per task. Text cells that a spreadsheet would run as a formula (starting
// with = + - @) are prefixed with a quote character.
std::string RenderTasksCsv(const RunData& run, const RunMetrics& metrics);

// candidates.csv: one row per candidate, with its latest evaluation's figures.
std::string RenderCandidatesCsv(const RunData& run);

}  // namespace kforge::report

#endif  // KFORGE_REPORT_REPORT_JSON_H_
