// Scale of `kforge bench`'s orchestration with the synthetic backend
// (tests/exec/synthetic_backend.h):
//   exec_scale_bench [TASKS] [ITERATIONS] [DEVICES] [JOBS]
// Default: 1000 tasks × 10 iterations = 10,000 candidates on 4 simulated devices, 16 tasks at once.
// Prints CPU time per candidate and the peak RSS (the bounds: ≤ 10 ms and ≤ 200 MB).
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "kforge/core/log.h"
#include "synthetic_backend.h"

int main(int argc, char** argv) {
  kforge::InitLogging();  // as kforge does: warnings only unless KFORGE_LOG says otherwise
  namespace fs = std::filesystem;
  const int tasks = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 10;
  const int devices = argc > 3 ? std::atoi(argv[3]) : 4;
  const int jobs = argc > 4 ? std::atoi(argv[4]) : 16;
  const fs::path dir = fs::temp_directory_path() / fmt::format("kforge-scale-{}", ::getpid());
  std::FILE* sink = std::fopen("/dev/null", "w");
  auto r = kforge::exec::testing::RunSyntheticBench(dir, tasks, iterations, devices, jobs, sink,
                                                    fs::path(KFORGE_SOURCE_HOME) / "templates");
  std::fclose(sink);
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (!r) {
    fmt::print(stderr, "exec_scale_bench: {}\n", r.error().message);
    return 1;
  }
  fmt::print(
      "tasks {} · candidates {} · wall {:.2f} s · CPU {:.2f} s · {:.3f} ms CPU per candidate · "
      "peak RSS {} MiB · devices busy at once (peak) {}\n",
      r->tasks, r->candidates, r->wall_s, r->cpu_s, 1000 * r->cpu_s / std::max(1, r->candidates),
      r->peak_rss_mib, r->peak_busy_devices);
  return 0;
}
