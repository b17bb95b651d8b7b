// `kforge report RUN_DIR`: a run's figures as HTML, JSON and CSV; `kforge compare RUN_A RUN_B`:
// two runs side by side. Both only read the run store.
#ifndef KFORGE_SRC_CLI_REPORT_COMMAND_H_
#define KFORGE_SRC_CLI_REPORT_COMMAND_H_

#include <CLI/CLI.hpp>

namespace kforge {

void AddReportCommand(CLI::App& app);
void AddCompareCommand(CLI::App& app);

}  // namespace kforge

#endif  // KFORGE_SRC_CLI_REPORT_COMMAND_H_
