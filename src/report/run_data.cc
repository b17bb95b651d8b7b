#include "kforge/report/run_data.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <future>
#include <nlohmann/json.hpp>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "kforge/core/thread_pool.h"

namespace kforge::report {
namespace fs = std::filesystem;

Result<OpenedRun> OpenRunForReading(const fs::path& path, const std::string& run_id) {
  std::error_code ec;
  fs::path run_dir = fs::absolute(path, ec);
  if (ec) return InvalidArgument(fmt::format("{}: {}", path.string(), ec.message()));
  if (run_dir.filename() == "run.sqlite" && fs::is_regular_file(run_dir, ec)) {
    run_dir = run_dir.parent_path();
  }
  if (!fs::is_directory(run_dir, ec)) {
    return InvalidArgument(fmt::format(
        "{} is not a run directory (no such directory); give the folder a `kforge run` or "
        "`kforge bench` printed, e.g. kforge-runs/run-20260101-120000-ab12",
        run_dir.string()));
  }
  if (!fs::is_regular_file(run_dir / "run.sqlite", ec)) {
    return InvalidArgument(fmt::format(
        "{} is not a run directory (no run.sqlite in it); give the folder a `kforge run` or "
        "`kforge bench` printed",
        run_dir.string()));
  }
  store::RunStore::Options options;
  options.mmap_size = std::int64_t{1} << 32;  // a read-only scan: map the database, not copy it
  auto store = store::RunStore::Open(run_dir, options);
  if (!store) return std::unexpected(store.error());
  auto runs = (*store)->ListRuns();  // newest first
  if (!runs) return std::unexpected(runs.error());
  if (runs->empty()) {
    return InvalidArgument(fmt::format("{} holds no run yet (its store is empty)", run_dir.string()));
  }
  OpenedRun opened;
  opened.run_dir = run_dir;
  if (run_id.empty()) {
    opened.run = runs->front();
  } else {
    auto it = std::find_if(runs->begin(), runs->end(),
                           [&](const store::RunRecord& r) { return r.id == run_id; });
    if (it == runs->end()) {
      std::vector<std::string> ids;
      for (const auto& r : *runs) ids.push_back(r.id);
      return NotFound(fmt::format("{} has no run '{}'; its runs: {}", run_dir.string(), run_id,
                                  fmt::join(ids, ", ")));
    }
    opened.run = *it;
  }
  opened.store = std::move(*store);
  return opened;
}

namespace {

// Reads `origin`, `policy` and the arithmetic intensity from a task's metadata_json.
void ReadTaskMetadata(TaskData& task) {
  auto j = nlohmann::json::parse(task.record.metadata_json, nullptr, false);
  if (!j.is_object()) return;
  if (auto it = j.find("origin"); it != j.end() && it->is_string()) task.origin = *it;
  if (auto it = j.find("policy"); it != j.end() && it->is_string()) task.policy = *it;
  auto number = [&](const char* key) -> std::optional<double> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  auto flops = number("flops");
  auto bytes = number("bytes");
  if (!bytes) bytes = number("min_bytes");
  if (flops && bytes && *flops >= 0 && *bytes > 0) task.arithmetic_intensity = *flops / *bytes;
}

}  // namespace

Result<RunData> LoadRunData(const OpenedRun& opened, unsigned threads) {
  store::RunStore& store = *opened.store;
  const std::string& run_id = opened.run.id;
  RunData data;
  data.run_dir = opened.run_dir;
  data.run = opened.run;
  {
    auto config = nlohmann::json::parse(opened.run.config_json, nullptr, false);
    if (config.is_object()) {
      if (auto it = config.find("model"); it != config.end() && it->is_string()) data.model = *it;
      if (auto it = config.find("target"); it != config.end() && it->is_string()) {
        data.target = *it;
      }
    }
  }

  auto tasks = store.ListTasks(run_id);
  if (!tasks) return std::unexpected(tasks.error());
  std::unordered_map<std::string, std::size_t> task_index;
  std::sort(tasks->begin(), tasks->end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  data.tasks.reserve(tasks->size());
  for (auto& t : *tasks) {
    task_index.emplace(t.id, data.tasks.size());
    TaskData task;
    task.record = std::move(t);
    ReadTaskMetadata(task);
    data.tasks.push_back(std::move(task));
  }

  auto candidates = store.ListCandidates(run_id);
  if (!candidates) return std::unexpected(candidates.error());
  // Where each candidate lives: (task index, position in its task).
  // Keys point into the candidate records, which stay where they are from here on.
  std::unordered_map<std::string_view, std::pair<std::size_t, std::size_t>> where;
  where.reserve(candidates->size());
  for (auto& c : *candidates) {
    auto it = task_index.find(c.task_id);
    if (it == task_index.end()) continue;  // foreign keys make this impossible
    auto& list = data.tasks[it->second].candidates;
    CandidateData cd;
    cd.record = std::move(c);
    list.push_back(std::move(cd));
  }
  for (std::size_t t = 0; t < data.tasks.size(); ++t) {
    auto& list = data.tasks[t].candidates;
    std::stable_sort(list.begin(), list.end(), [](const CandidateData& a, const CandidateData& b) {
      if (a.record.sample != b.record.sample) return a.record.sample < b.record.sample;
      return a.record.iteration < b.record.iteration;
    });
    for (std::size_t i = 0; i < list.size(); ++i) where.emplace(list[i].record.id, std::pair{t, i});
  }

  // Evaluations, streamed in no particular order (sorting them would sort every verdict): the
  // latest one of a candidate (created_at, then id) is its outcome. Verdicts are parsed on a pool
  // while the store is read, batch by batch, and the parse of each candidate's latest evaluation
  // is kept.
  {
    struct Parse {
      CandidateData* candidate;
      std::string evaluation_id;
      std::string verdict_json;  // cleared once parsed
      Result<VerdictSummary> verdict = VerdictSummary{};
    };
    using Batch = std::vector<Parse>;
    constexpr std::size_t kBatch = 512;
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    ThreadPool pool(std::max(1u, threads > 1 ? threads - 1 : 1u));
    std::vector<std::unique_ptr<Batch>> batches;
    std::vector<std::future<void>> parsed;
    auto batch = std::make_unique<Batch>();
    auto submit = [&] {
      Batch* b = batch.get();
      batches.push_back(std::move(batch));
      parsed.push_back(pool.Submit([b] {
        for (Parse& p : *b) {
          p.verdict = ParseVerdictSummary(p.verdict_json, p.evaluation_id);
          p.verdict_json = std::string();
        }
      }));
      batch = std::make_unique<Batch>();
      batch->reserve(kBatch);
    };
    batch->reserve(kBatch);
    Status scanned = store.ForEachEvaluation(run_id, [&](store::EvaluationRecord& e) -> Status {
      auto it = where.find(e.candidate_id);
      if (it == where.end()) return Ok();
      CandidateData& cd = data.tasks[it->second.first].candidates[it->second.second];
      ++cd.evaluations;
      if (cd.evaluation && std::tie(cd.evaluation->created_at, cd.evaluation->id) >
                               std::tie(e.created_at, e.id)) {
        return Ok();  // an older evaluation of a candidate evaluated again
      }
      batch->push_back(Parse{&cd, e.id, std::move(e.verdict_json)});
      e.verdict_json.clear();  // parsed into `verdict`
      cd.evaluation = std::move(e);
      if (batch->size() == kBatch) submit();
      return Ok();
    });
    if (!batch->empty()) submit();
    for (auto& f : parsed) f.get();
    if (!scanned) return std::unexpected(scanned.error());
    // In submission order, so that of two parses of one candidate the later (its latest
    // evaluation) is the one kept.
    for (const auto& b : batches) {
      for (Parse& p : *b) {
        CandidateData& c = *p.candidate;
        if (c.evaluation->id != p.evaluation_id) continue;
        if (p.verdict) {
          c.verdict = std::move(*p.verdict);
        } else {
          ++data.unparsable_verdicts;
          c.verdict = VerdictSummary{};
          c.verdict.message = p.verdict.error().message;
        }
        c.verdict.status = std::string(store::ToString(c.evaluation->status));
      }
    }
  }

  // LLM usage, credited to the task whose candidate a call produced or advised on.
  auto recommendations = store.ListRecommendations(run_id);
  if (!recommendations) return std::unexpected(recommendations.error());
  // Keys point into the candidate and recommendation records.
  std::unordered_map<std::string_view, std::size_t> call_task;
  call_task.reserve(where.size() + recommendations->size());
  for (std::size_t t = 0; t < data.tasks.size(); ++t) {
    for (const auto& c : data.tasks[t].candidates) {
      if (c.record.llm_call_id) call_task.emplace(*c.record.llm_call_id, t);
    }
  }
  for (const auto& r : *recommendations) {
    auto it = where.find(r.candidate_id);
    if (it == where.end()) continue;
    data.tasks[it->second.first].candidates[it->second.second].recommendations.push_back(
        r.recommendation_json);
    if (r.llm_call_id) call_task.emplace(*r.llm_call_id, it->second.first);
  }
  auto calls = store.ListLlmCalls(run_id);
  if (!calls) return std::unexpected(calls.error());
  for (const auto& call : *calls) {
    ++data.llm_calls;
    data.input_tokens += call.input_tokens;
    data.output_tokens += call.output_tokens;
    data.cost_usd += call.cost_usd;
    auto it = call_task.find(call.id);
    if (it == call_task.end()) {
      data.unattributed_input_tokens += call.input_tokens;
      data.unattributed_output_tokens += call.output_tokens;
      data.unattributed_cost_usd += call.cost_usd;
      continue;
    }
    TaskData& task = data.tasks[it->second];
    task.input_tokens += call.input_tokens;
    task.output_tokens += call.output_tokens;
    task.cost_usd += call.cost_usd;
  }
  return data;
}

}  // namespace kforge::report
