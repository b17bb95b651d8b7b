// The synthetic backend of the scale measurement: a provider that answers at once and an
// evaluation that returns a canned verdict without any process, behind the loop's real seams
// (llm::Provider, synth::EvaluateFn on DeviceSlots). What remains is KForge's orchestration:
// prompt rendering, answer parsing, store writes, scheduling, placement and progress.
#ifndef KFORGE_TESTS_EXEC_SYNTHETIC_BACKEND_H_
#define KFORGE_TESTS_EXEC_SYNTHETIC_BACKEND_H_

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>

#include "kforge/exec/bench_progress.h"
#include "kforge/exec/bench_runner.h"
#include "kforge/exec/device_slots.h"
#include "kforge/exec/placement.h"
#include "kforge/llm/provider.h"
#include "kforge/store/run_store.h"
#include "kforge/target/backend.h"

namespace kforge::exec::testing {

// Answers every generation prompt with a distinct cpu/cpp candidate, and analysis prompts with one
// recommendation; never waits.
class InstantProvider : public llm::Provider {
 public:
  Result<llm::Response> Complete(const llm::Request& request, const llm::CallOptions&) override {
    const std::string prompt = request.messages.empty() ? "" : request.messages.back().Text();
    llm::Response r;
    r.finish_reason = "stop";
    r.model = "instant";
    r.usage.input_tokens = 1000;
    r.usage.output_tokens = 300;
    if (prompt.find("recommendations") != std::string::npos &&
        prompt.find("\"bottleneck\"") != std::string::npos) {
      r.text =
          "```json\n{\"recommendations\": [{\"bottleneck\": \"memory\", \"evidence\": \"one load "
          "per element\", \"changes\": [\"vector loads\"], \"expected_gain\": \"1.2x\"}]}\n```\n";
      return r;
    }
    const long n = counter_.fetch_add(1);
    r.text = "```cpp\n#include \"kforge_kernel.h\"\n// candidate " + std::to_string(n) +
             "\nextern \"C\" int kforge_forward(void) { return 0; }\n```\n";
    return r;
  }
  llm::ProviderInfo Info() const override { return {"instant", "instant", "instant", "memory"}; }

 private:
  std::atomic<long> counter_{0};
};

// Canned verdicts: every third candidate of a task is correct (so optimization passes and the
// analysis agent run too), the others mismatch. No process is started.
inline Verdict CannedVerdict(const Task& task, const Backend& backend,
                             const std::filesystem::path& candidate) {
  Verdict v;
  v.task_name = task.name;
  v.target = backend.target().ToString();
  v.candidate = candidate.string();
  const auto h = std::hash<std::string>{}(candidate.string());
  v.status = h % 3 == 0 ? EvalStatus::kCorrect : EvalStatus::kMismatch;
  if (v.status == EvalStatus::kMismatch) v.message = "output 0 differs at 3 of 100 elements";
  v.total_seconds = 0;
  return v;
}

struct ScaleResult {
  int tasks = 0;
  int candidates = 0;
  double wall_s = 0;
  double cpu_s = 0;  // user + system of this process
  long peak_rss_mib = 0;
  int peak_busy_devices = 0;
};

inline double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Runs a synthetic bench of `tasks` × `iterations` candidates into a store under `dir`, on
// `devices` simulated devices, with the plain progress written to `progress_out` (may be null).
inline Result<ScaleResult> RunSyntheticBench(const std::filesystem::path& dir, int tasks,
                                             int iterations, int devices, int jobs,
                                             std::FILE* progress_out,
                                             const std::filesystem::path& templates) {
  auto store = store::RunStore::Open(dir);
  if (!store) return std::unexpected(store.error());
  store::RunRecord run;
  run.id = "run-synthetic";
  run.kind = store::RunKind::kBench;
  if (auto added = (*store)->AddRun(run); !added) return std::unexpected(added.error());
  auto target = Target::Parse("cpu/cpp");
  if (!target) return std::unexpected(target.error());
  auto backend = NewBackend(*target);
  DeviceSlots slots(SimulatedDevices(devices));
  BenchSetup setup;
  setup.store = store->get();
  setup.run_id = run.id;
  for (int i = 0; i < tasks; ++i) {
    Task t;
    t.id = "t" + std::to_string(i);
    t.name = "synthetic_" + std::to_string(i);
    t.origin = "synthetic";
    t.source =
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x + " +
        std::to_string(i) + "\ndef get_inputs():\n    return [torch.rand(8)]\ndef "
                            "get_init_inputs():\n    return []\n";
    setup.tasks.push_back(std::move(t));
  }
  setup.backend = backend.get();
  setup.evaluate = PlaceOnDevices(slots, [](const Device&, const Task& task, const Backend& b,
                                            const std::filesystem::path& c, std::stop_token) {
    return CannedVerdict(task, b, c);
  });
  setup.generation_provider = std::make_shared<InstantProvider>();
  setup.budget = std::make_shared<llm::Budget>(llm::BudgetLimits{});
  setup.renderer = PromptRenderer(templates);
  setup.options.iterations = iterations;
  setup.jobs = jobs;
  std::vector<std::string> names;
  for (const auto& t : setup.tasks) names.push_back(t.name);
  std::unique_ptr<BenchProgress> progress;
  if (progress_out != nullptr) {
    progress = std::make_unique<BenchProgress>(progress_out, false, names, iterations,
                                               setup.budget);
    setup.observer = progress.get();
  }
  const double cpu0 = ProcessCpuSeconds();
  const auto wall0 = std::chrono::steady_clock::now();
  auto result = RunBench(std::move(setup));
  if (!result) return std::unexpected(result.error());
  ScaleResult out;
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  out.cpu_s = ProcessCpuSeconds() - cpu0;
  out.tasks = tasks;
  auto candidates = (*store)->ListCandidates(run.id);
  if (!candidates) return std::unexpected(candidates.error());
  out.candidates = static_cast<int>(candidates->size());
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  out.peak_rss_mib = ru.ru_maxrss / 1024;
  out.peak_busy_devices = slots.PeakBusy();
  return out;
}

}  // namespace kforge::exec::testing

#endif  // KFORGE_TESTS_EXEC_SYNTHETIC_BACKEND_H_
