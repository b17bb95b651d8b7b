// `kforge bench SUITE`: many tasks synthesized at once into one run (src/exec), locally or as a
// Slurm job array; `kforge bench-task` is one Slurm array element.
#ifndef KFORGE_CLI_BENCH_COMMAND_H_
#define KFORGE_CLI_BENCH_COMMAND_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>

#include "kforge/store/records.h"

namespace kforge {

void AddBenchCommand(CLI::App& app);

// Budgets a resume may raise over the stored configuration; unset = as stored.
struct BenchResumeOverrides {
  std::optional<std::int64_t> max_tokens;
  std::optional<double> max_cost;
  std::optional<int> max_time_s;
};

// `kforge resume RUN_DIR` of a bench run: the stored configuration again on the same run.
int ResumeBench(const std::filesystem::path& run_dir, const store::RunRecord& run,
                const BenchResumeOverrides& overrides);

}  // namespace kforge

#endif  // KFORGE_CLI_BENCH_COMMAND_H_
