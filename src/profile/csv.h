// A small RFC-4180 CSV reader for profiler exports. Internal to src/profile.
#ifndef KFORGE_SRC_PROFILE_CSV_H_
#define KFORGE_SRC_PROFILE_CSV_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::profile {

using CsvRow = std::vector<std::string>;

// Rows of `text`: quoted fields may hold commas, doubled quotes and newlines; CR LF and LF both end
// rows; blank lines are skipped. Fields are trimmed of surrounding spaces when unquoted.
std::vector<CsvRow> ReadCsv(std::string_view text);

// The index of the column named `name` (exact, after trimming), if any.
std::optional<std::size_t> ColumnOf(const CsvRow& header, std::string_view name);

// A number written by a tool: "1,234.5", "85.2", "n/a" (nullopt), "" (nullopt).
std::optional<double> ParseNumber(std::string_view text);

}  // namespace kforge::profile

#endif  // KFORGE_SRC_PROFILE_CSV_H_
