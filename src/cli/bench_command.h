// `kforge bench SUITE`: many tasks synthesized at once into one run (src/exec), locally or as a
// Slurm job array; `kforge bench-task` is one Slurm array element.
#ifndef KFORGE_CLI_BENCH_COMMAND_H_
#define KFORGE_CLI_BENCH_COMMAND_H_

#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>

#include "kforge/app/run_config.h"

namespace kforge {

void AddBenchCommand(CLI::App& app);

// `kforge resume RUN_DIR` of a bench run: its stored configuration (budgets as the resume asked)
// again on the same run.
int ResumeBench(const app::RunConfig& config, const std::filesystem::path& run_dir,
                const std::string& run_id, const std::string& command_line);

}  // namespace kforge

#endif  // KFORGE_CLI_BENCH_COMMAND_H_
