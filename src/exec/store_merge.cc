#include "kforge/exec/store_merge.h"

#include <fmt/format.h>

#include <filesystem>

#include "kforge/core/files.h"

namespace kforge::exec {
namespace {

namespace fs = std::filesystem;

// Adds `record` to `into` unless a row with its id exists; true when added.
template <typename Record, typename Get, typename Add>
Result<bool> AddIfAbsent(const Record& record, Get get, Add add) {
  auto existing = get(record.id);
  if (existing) return false;
  if (existing.error().code != ErrorCode::kNotFound) return std::unexpected(existing.error());
  auto added = add(record);
  if (!added) return std::unexpected(added.error());
  return true;
}

}  // namespace

Result<MergeCounts> MergeRun(store::RunStore& from, store::RunStore& into,
                             const std::string& run_id) {
  MergeCounts counts;
  // Artifacts first: rows name them.
  const fs::path artifacts = from.run_dir() / "artifacts";
  std::error_code ec;
  if (fs::exists(artifacts, ec)) {
    for (const auto& entry : fs::recursive_directory_iterator(artifacts, ec)) {
      if (!entry.is_regular_file()) continue;
      const std::string hash = entry.path().filename().string();
      if (fs::exists(into.ArtifactPath(hash), ec)) continue;
      auto bytes = ReadFile(entry.path());
      if (!bytes) return std::unexpected(bytes.error());
      auto put = into.PutArtifact(*bytes);
      if (!put) return std::unexpected(put.error());
      ++counts.artifacts;
    }
  }
  auto tasks = from.ListTasks(run_id);
  if (!tasks) return std::unexpected(tasks.error());
  for (const auto& t : *tasks) {
    auto same_name = into.FindTask(run_id, t.name);
    if (!same_name) return std::unexpected(same_name.error());
    if (same_name->has_value()) {
      if ((*same_name)->id != t.id) {
        return InvalidArgument(fmt::format(
            "cannot merge {}: task {} is already in {} under another id ({} vs {})",
            from.run_dir().string(), t.name, into.run_dir().string(), (*same_name)->id, t.id));
      }
      continue;
    }
    auto added = into.AddTask(t);
    if (!added) return std::unexpected(added.error());
    ++counts.tasks;
  }
  auto calls = from.ListLlmCalls(run_id);
  if (!calls) return std::unexpected(calls.error());
  for (const auto& c : *calls) {
    auto added = AddIfAbsent(
        c, [&](const std::string& id) { return into.GetLlmCall(id); },
        [&](const store::LlmCallRecord& r) { return into.AddLlmCall(r); });
    if (!added) return std::unexpected(added.error());
    counts.llm_calls += *added ? 1 : 0;
  }
  auto candidates = from.ListCandidates(run_id);
  if (!candidates) return std::unexpected(candidates.error());
  for (const auto& c : *candidates) {  // oldest first: parents before children
    auto added = AddIfAbsent(
        c, [&](const std::string& id) { return into.GetCandidate(id); },
        [&](const store::CandidateRecord& r) { return into.AddCandidate(r); });
    if (!added) return std::unexpected(added.error());
    counts.candidates += *added ? 1 : 0;
  }
  auto evaluations = from.ListEvaluations(run_id);
  if (!evaluations) return std::unexpected(evaluations.error());
  for (const auto& e : *evaluations) {
    auto added = AddIfAbsent(
        e, [&](const std::string& id) { return into.GetEvaluation(id); },
        [&](const store::EvaluationRecord& r) { return into.AddEvaluation(r); });
    if (!added) return std::unexpected(added.error());
    counts.evaluations += *added ? 1 : 0;
    auto profiles = from.ListProfiles(e.id);
    if (!profiles) return std::unexpected(profiles.error());
    for (const auto& p : *profiles) {
      auto padded = AddIfAbsent(
          p, [&](const std::string& id) { return into.GetProfile(id); },
          [&](const store::ProfileRecord& r) { return into.AddProfile(r); });
      if (!padded) return std::unexpected(padded.error());
    }
  }
  auto recommendations = from.ListRecommendations(run_id);
  if (!recommendations) return std::unexpected(recommendations.error());
  for (const auto& r : *recommendations) {
    auto added = AddIfAbsent(
        r, [&](const std::string& id) { return into.GetRecommendation(id); },
        [&](const store::RecommendationRecord& rec) { return into.AddRecommendation(rec); });
    if (!added) return std::unexpected(added.error());
    counts.recommendations += *added ? 1 : 0;
  }
  return counts;
}

}  // namespace kforge::exec
