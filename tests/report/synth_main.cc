// kforge_report_synth RUN_DIR [TASKS [SAMPLES [ITERATIONS]]]: fills RUN_DIR with a synthetic run
// (default 1,000 tasks × 2 samples × 50 iterations = 100,000 candidates) for timing
// `kforge report` (bench/report_scale.sh).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>

#include "store_builder.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: kforge_report_synth RUN_DIR [TASKS [SAMPLES [ITERATIONS]]]\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  if (std::filesystem::exists(dir / "run.sqlite")) {
    fmt::print(stderr, "{} already holds a run store; give a new folder\n", dir.string());
    return 2;
  }
  kforge::report::testing::SyntheticOptions options;
  options.tasks = argc > 2 ? std::atoi(argv[2]) : 1000;
  options.samples = argc > 3 ? std::atoi(argv[3]) : 2;
  options.iterations = argc > 4 ? std::atoi(argv[4]) : 50;
  options.progress = [](std::int64_t written, std::int64_t total) {
    if (written % 10000 == 0) {
      fmt::print("{} / {} candidates\n", written, total);
      std::fflush(stdout);
    }
  };
  const auto start = std::chrono::steady_clock::now();
  try {
    kforge::report::testing::StoreBuilder builder(dir, "bench-synthetic", "synthetic-model");
    kforge::report::testing::FillSyntheticRun(builder, options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "kforge_report_synth: {}\n", e.what());
    return 3;
  }
  fmt::print("wrote {} candidates to {} in {:.1f} s\n",
             static_cast<long>(options.tasks) * options.samples * options.iterations, dir.string(),
             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}
