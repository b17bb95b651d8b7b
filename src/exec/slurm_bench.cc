#include "kforge/exec/slurm_bench.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "kforge/core/files.h"
#include "kforge/exec/store_merge.h"

namespace kforge::exec {

namespace fs = std::filesystem;

fs::path SlurmElementDir(const fs::path& run_dir, int index) {
  return run_dir / "slurm" / "tasks" / std::to_string(index);
}

Result<SlurmBenchOutcome> RunSlurmBench(const SlurmBenchRequest& request, store::RunStore& store,
                                        const std::function<void(std::string_view)>& say,
                                        const std::function<void(std::string_view)>& warn,
                                        std::stop_token stop) {
  const fs::path work = request.run_dir / "slurm";
  KFORGE_RETURN_IF_ERROR(MakeDirs(work));
  nlohmann::json config = nlohmann::json::parse(request.config_json, nullptr, false);
  if (!config.is_object()) return InvalidArgument("the bench's configuration is not a JSON object");
  config["run_id"] = request.run_id;
  KFORGE_RETURN_IF_ERROR(WriteFile(work / "bench.json", config.dump(2)));

  SlurmOptions options = request.options;
  options.work_dir = work;
  options.element_argv = request.element_argv;
  SlurmExecutor executor(options);

  const std::size_t n = request.task_names.size();
  SlurmBenchOutcome outcome;
  int merge_errors = 0;
  auto merge = [&](int i) {
    const fs::path dir = executor.ElementDir(i);
    if (!fs::exists(dir / "run.sqlite")) return;
    auto from = store::RunStore::Open(dir);
    if (!from) {
      ++merge_errors;
      warn(fmt::format("element {}: {}", i, from.error().message));
      return;
    }
    auto counts = MergeRun(**from, store, request.run_id);
    if (!counts) {
      ++merge_errors;
      warn(fmt::format("merging element {}: {}", i, counts.error().message));
    }
  };
  std::vector<int> indices;
  for (std::size_t i = 0; i < n; ++i) {
    auto marker = ReadFile(executor.MarkerPath(static_cast<int>(i)));
    if (marker && marker->find("\"done\"") != std::string::npos) {
      merge(static_cast<int>(i));  // finished in an earlier part of this run
      continue;
    }
    indices.push_back(static_cast<int>(i));
  }
  say(fmt::format("slurm: {} element(s) to run ({} GPU(s) each), {} already done", indices.size(),
                  options.gpus_per_element, n - indices.size()));
  int finished = 0;
  auto results = executor.Run(
      indices,
      [&](int i, ElementEnd end) {
        merge(i);
        ++finished;
        if (end != ElementEnd::kDone) outcome.interrupted = true;
        say(fmt::format("[{}] element {}: {} · {}/{} elements ended",
                        request.task_names[static_cast<std::size_t>(i)], i,
                        end == ElementEnd::kDone          ? "done"
                        : end == ElementEnd::kInterrupted ? "interrupted"
                                                          : "lost",
                        finished, indices.size()));
      },
      stop);
  if (!results) return std::unexpected(results.error());
  outcome.elements_run = results->size();
  if (results->size() != indices.size() || merge_errors > 0) outcome.interrupted = true;
  return outcome;
}

Result<SlurmBenchElementConfig> ReadSlurmBenchConfig(const fs::path& run_dir) {
  const fs::path file = run_dir / "slurm" / "bench.json";
  auto text = ReadFile(file);
  if (!text) return std::unexpected(text.error());
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object()) return ParseError(fmt::format("{}: not a JSON object", file.string()));
  SlurmBenchElementConfig out;
  out.run_id = j.value("run_id", "");
  j.erase("run_id");
  out.config_json = j.dump();
  return out;
}

Status WriteSlurmElementMarker(const fs::path& element_dir, bool done, const std::string& task_name,
                               int correct) {
  const nlohmann::json marker = {
      {"status", done ? "done" : "interrupted"}, {"task", task_name}, {"correct", correct}};
  return WriteFile(element_dir / "exit.json", marker.dump());
}

}  // namespace kforge::exec
