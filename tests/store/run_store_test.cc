#include "kforge/store/run_store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kforge/core/hash.h"
#include "scratch_dir.h"

namespace kforge::store {
namespace {

namespace fs = std::filesystem;

// Unwraps a Result in a test, failing with its message.
#define ASSERT_OK_AND_ASSIGN(lhs, expr)                                     \
  auto lhs##_result = (expr);                                               \
  ASSERT_TRUE(lhs##_result.has_value()) << lhs##_result.error().ToString(); \
  auto lhs = std::move(*lhs##_result)

class RunStoreTest : public testing::Test {
 protected:
  void SetUp() override {
    auto store = RunStore::Open(dir_.path());
    ASSERT_TRUE(store.has_value()) << store.error().ToString();
    store_ = std::move(*store);
  }

  // A run with one task and one candidate, the minimum that evaluations hang from.
  void AddRunTaskCandidate() {
    RunRecord run;
    run.kind = RunKind::kEval;
    run.command_line = "kforge eval --target cpu/cpp relu";
    auto added_run = store_->AddRun(run);
    ASSERT_TRUE(added_run.has_value()) << added_run.error().ToString();
    run_ = *added_run;
    TaskRecord task;
    task.run_id = run_.id;
    task.name = "relu";
    task.source_hash = store_->PutArtifact("class Model: ...").value();
    auto added_task = store_->AddTask(task);
    ASSERT_TRUE(added_task.has_value()) << added_task.error().ToString();
    task_ = *added_task;
    CandidateRecord candidate;
    candidate.run_id = run_.id;
    candidate.task_id = task_.id;
    candidate.pass_kind = PassKind::kGiven;
    candidate.target = "cpu/cpp";
    candidate.source_hash = store_->PutArtifact("void relu() {}").value();
    auto added_candidate = store_->AddCandidate(candidate);
    ASSERT_TRUE(added_candidate.has_value()) << added_candidate.error().ToString();
    candidate_ = *added_candidate;
  }

  ScratchDir dir_;
  std::unique_ptr<RunStore> store_;
  RunRecord run_;
  TaskRecord task_;
  CandidateRecord candidate_;
};

TEST_F(RunStoreTest, OpenCreatesDatabaseInWalModeAndArtifactFolder) {
  EXPECT_TRUE(fs::exists(dir_.path() / "run.sqlite"));
  EXPECT_TRUE(fs::is_directory(dir_.path() / "artifacts"));
  EXPECT_EQ(store_->run_dir(), dir_.path());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_.path() / "run.sqlite").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "wal");
  sqlite3_finalize(stmt);
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT MAX(version) FROM schema_version", -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), RunStore::SchemaVersion());
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST_F(RunStoreTest, RunRoundTripAndFinish) {
  RunRecord run;
  run.kind = RunKind::kBench;
  run.command_line = "kforge bench --suite ci-cpu";
  run.config_json = R"({"samples": 4, "target": "cpu/opencl"})";
  ASSERT_OK_AND_ASSIGN(added, store_->AddRun(run));
  EXPECT_TRUE(std::regex_match(added.id, std::regex(R"(bench-\d{8}-\d{6}-[0-9a-f]{6})")))
      << added.id;
  EXPECT_NE(added.created_at, Timestamp{});
  EXPECT_EQ(added.status, RunStatus::kRunning);
  EXPECT_FALSE(added.finished_at.has_value());
  ASSERT_OK_AND_ASSIGN(got, store_->GetRun(added.id));
  EXPECT_EQ(got, added);

  Timestamp end = added.created_at + std::chrono::seconds(90);
  ASSERT_TRUE(store_->FinishRun(added.id, RunStatus::kInterrupted, end).has_value());
  ASSERT_OK_AND_ASSIGN(finished, store_->GetRun(added.id));
  EXPECT_EQ(finished.status, RunStatus::kInterrupted);
  EXPECT_EQ(finished.finished_at, end);

  auto missing = store_->FinishRun("no-such-run", RunStatus::kFinished);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST_F(RunStoreTest, ListRunsNewestFirst) {
  RunRecord older;
  older.kind = RunKind::kRun;
  older.created_at = Now() - std::chrono::hours(1);
  RunRecord newer;
  newer.kind = RunKind::kEval;
  ASSERT_OK_AND_ASSIGN(a, store_->AddRun(older));
  ASSERT_OK_AND_ASSIGN(b, store_->AddRun(newer));
  ASSERT_OK_AND_ASSIGN(runs, store_->ListRuns());
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0], b);
  EXPECT_EQ(runs[1], a);
}

TEST_F(RunStoreTest, TaskRoundTripAndFindByName) {
  AddRunTaskCandidate();
  ASSERT_OK_AND_ASSIGN(got, store_->GetTask(task_.id));
  EXPECT_EQ(got, task_);
  EXPECT_TRUE(task_.id.starts_with("task-"));
  TaskRecord other;
  other.run_id = run_.id;
  other.name = "softmax";
  other.source_hash = store_->PutArtifact("softmax").value();
  other.metadata_json = R"({"precision": "strict", "flops": 1024})";
  ASSERT_OK_AND_ASSIGN(added, store_->AddTask(other));
  ASSERT_OK_AND_ASSIGN(found, store_->FindTask(run_.id, "softmax"));
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(*found, added);
  ASSERT_OK_AND_ASSIGN(absent, store_->FindTask(run_.id, "matmul"));
  EXPECT_FALSE(absent.has_value());
  ASSERT_OK_AND_ASSIGN(tasks, store_->ListTasks(run_.id));
  EXPECT_EQ(tasks.size(), 2u);

  // Task names are unique within a run.
  auto duplicate = store_->AddTask(other);  // a fresh id, the same name
  ASSERT_FALSE(duplicate.has_value());
  EXPECT_EQ(duplicate.error().code, ErrorCode::kInvalidArgument);
}

TEST_F(RunStoreTest, CandidateRoundTripWithParentAndLlmCall) {
  AddRunTaskCandidate();
  ASSERT_OK_AND_ASSIGN(got, store_->GetCandidate(candidate_.id));
  EXPECT_EQ(got, candidate_);
  EXPECT_FALSE(got.parent_id.has_value());
  EXPECT_TRUE(candidate_.id.starts_with("cand-"));

  LlmCallRecord call;
  call.run_id = run_.id;
  call.agent = "generation";
  call.model_id = "replay";
  call.prompt_hash = store_->PutArtifact("prompt").value();
  call.response_hash = store_->PutArtifact("response").value();
  call.request_fingerprint = "fp";
  ASSERT_OK_AND_ASSIGN(added_call, store_->AddLlmCall(call));

  CandidateRecord child;
  child.run_id = run_.id;
  child.task_id = task_.id;
  child.parent_id = candidate_.id;
  child.llm_call_id = added_call.id;
  child.sample = 3;
  child.iteration = 2;
  child.pass_kind = PassKind::kOptimization;
  child.target = "nvidia-h200/cuda";
  child.source_hash = store_->PutArtifact("__global__ void relu() {}").value();
  ASSERT_OK_AND_ASSIGN(added, store_->AddCandidate(child));
  ASSERT_OK_AND_ASSIGN(got_child, store_->GetCandidate(added.id));
  EXPECT_EQ(got_child, added);
  EXPECT_EQ(got_child.parent_id, candidate_.id);
  EXPECT_EQ(got_child.sample, 3);
  EXPECT_EQ(got_child.iteration, 2);
  EXPECT_EQ(got_child.pass_kind, PassKind::kOptimization);
  EXPECT_EQ(store_->GetArtifact(got_child.source_hash).value(), "__global__ void relu() {}");
  ASSERT_OK_AND_ASSIGN(candidates, store_->ListCandidates(run_.id));
  ASSERT_EQ(candidates.size(), 2u);
}

TEST_F(RunStoreTest, EvaluationRoundTripFindAndJoinedRows) {
  AddRunTaskCandidate();
  EvaluationRecord first;
  first.run_id = run_.id;
  first.candidate_id = candidate_.id;
  first.target = "cpu/cpp";
  first.device = "cpu";
  first.status = EvaluationStatus::kMismatch;
  first.verdict_json = R"({"max_abs_error": 0.5})";
  first.wall_s = 1.25;
  first.created_at = Now() - std::chrono::seconds(10);
  ASSERT_OK_AND_ASSIGN(a, store_->AddEvaluation(first));
  EXPECT_TRUE(a.id.starts_with("evl-"));
  ASSERT_OK_AND_ASSIGN(got, store_->GetEvaluation(a.id));
  EXPECT_EQ(got, a);

  EvaluationRecord second = first;
  second.created_at = {};
  second.status = EvaluationStatus::kCorrect;
  second.verdict_json = R"({"median_ms": 0.01})";
  ASSERT_OK_AND_ASSIGN(b, store_->AddEvaluation(second));

  ASSERT_OK_AND_ASSIGN(latest, store_->FindEvaluation(candidate_.id));
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(*latest, b);
  ASSERT_OK_AND_ASSIGN(none, store_->FindEvaluation("cand-unknown"));
  EXPECT_FALSE(none.has_value());

  ASSERT_OK_AND_ASSIGN(evaluations, store_->ListEvaluations(run_.id));
  ASSERT_EQ(evaluations.size(), 2u);
  EXPECT_EQ(evaluations[0], a);
  EXPECT_EQ(evaluations[1], b);

  ASSERT_OK_AND_ASSIGN(rows, store_->ListEvaluationRows(run_.id));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].evaluation, a);
  EXPECT_EQ(rows[1].evaluation, b);
  EXPECT_EQ(rows[1].candidate, candidate_);
  EXPECT_EQ(rows[1].task_name, "relu");
}

TEST_F(RunStoreTest, LlmCallRoundTripAndFindByFingerprint) {
  AddRunTaskCandidate();
  LlmCallRecord call;
  call.run_id = run_.id;
  call.agent = "generation";
  call.model_id = "openai/gpt-x";
  call.prompt_hash = store_->PutArtifact("system: ...\nuser: write relu").value();
  call.input_tokens = 1200;
  call.output_tokens = 345;
  call.cost_usd = 0.0123;
  call.latency_s = 4.5;
  call.status = LlmCallStatus::kError;
  call.request_fingerprint = "f00d";
  call.created_at = Now() - std::chrono::seconds(5);
  ASSERT_OK_AND_ASSIGN(failed, store_->AddLlmCall(call));
  EXPECT_FALSE(failed.response_hash.has_value());
  ASSERT_OK_AND_ASSIGN(got, store_->GetLlmCall(failed.id));
  EXPECT_EQ(got, failed);

  // Only a call that finished counts for resume.
  ASSERT_OK_AND_ASSIGN(nothing_yet, store_->FindLlmCall(run_.id, "f00d"));
  EXPECT_FALSE(nothing_yet.has_value());

  call.created_at = {};
  call.status = LlmCallStatus::kOk;
  call.response_hash = store_->PutArtifact("```cpp\nvoid relu() {}\n```").value();
  ASSERT_OK_AND_ASSIGN(ok, store_->AddLlmCall(call));
  ASSERT_OK_AND_ASSIGN(found, store_->FindLlmCall(run_.id, "f00d"));
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(*found, ok);
  ASSERT_OK_AND_ASSIGN(other_run, store_->FindLlmCall("eval-other", "f00d"));
  EXPECT_FALSE(other_run.has_value());
  ASSERT_OK_AND_ASSIGN(calls, store_->ListLlmCalls(run_.id));
  EXPECT_EQ(calls.size(), 2u);
}

TEST_F(RunStoreTest, ProfileAndRecommendationRoundTrips) {
  AddRunTaskCandidate();
  EvaluationRecord evaluation;
  evaluation.run_id = run_.id;
  evaluation.candidate_id = candidate_.id;
  evaluation.status = EvaluationStatus::kCorrect;
  ASSERT_OK_AND_ASSIGN(e, store_->AddEvaluation(evaluation));

  ProfileRecord profile;
  profile.evaluation_id = e.id;
  profile.tool = "ncu";
  profile.raw_hash = store_->PutArtifact("raw ncu report").value();
  profile.summary_hash = store_->PutArtifact("dram 80%").value();
  ASSERT_OK_AND_ASSIGN(p, store_->AddProfile(profile));
  ASSERT_OK_AND_ASSIGN(got_profile, store_->GetProfile(p.id));
  EXPECT_EQ(got_profile, p);
  ASSERT_OK_AND_ASSIGN(profiles, store_->ListProfiles(e.id));
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0], p);

  RecommendationRecord recommendation;
  recommendation.run_id = run_.id;
  recommendation.candidate_id = candidate_.id;
  recommendation.recommendation_json = R"({"advice": ["vectorise loads"]})";
  ASSERT_OK_AND_ASSIGN(r, store_->AddRecommendation(recommendation));
  EXPECT_FALSE(r.llm_call_id.has_value());
  ASSERT_OK_AND_ASSIGN(got_recommendation, store_->GetRecommendation(r.id));
  EXPECT_EQ(got_recommendation, r);
  ASSERT_OK_AND_ASSIGN(recommendations, store_->ListRecommendations(run_.id));
  ASSERT_EQ(recommendations.size(), 1u);
  EXPECT_EQ(recommendations[0], r);
}

TEST_F(RunStoreTest, CallerChosenIdsAreKept) {
  RunRecord run;
  run.id = "eval-20250101-000000-abcdef";
  ASSERT_OK_AND_ASSIGN(added, store_->AddRun(run));
  EXPECT_EQ(added.id, run.id);
  auto again = store_->AddRun(run);
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, ErrorCode::kInvalidArgument);
}

TEST_F(RunStoreTest, GetOfMissingRowIsNotFound) {
  for (auto error : {store_->GetRun("x").error(), store_->GetTask("x").error(),
                     store_->GetCandidate("x").error(), store_->GetEvaluation("x").error(),
                     store_->GetLlmCall("x").error(), store_->GetProfile("x").error(),
                     store_->GetRecommendation("x").error()}) {
    EXPECT_EQ(error.code, ErrorCode::kNotFound) << error.ToString();
  }
}

TEST_F(RunStoreTest, ForeignKeysAreEnforced) {
  AddRunTaskCandidate();
  CandidateRecord orphan = candidate_;
  orphan.id.clear();
  orphan.task_id = "task-missing";
  auto added = store_->AddCandidate(orphan);
  ASSERT_FALSE(added.has_value());
  EXPECT_EQ(added.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(added.error().message.find("FOREIGN KEY"), std::string::npos)
      << added.error().message;

  EvaluationRecord evaluation;
  evaluation.run_id = run_.id;
  evaluation.candidate_id = "cand-missing";
  EXPECT_FALSE(store_->AddEvaluation(evaluation).has_value());
  ProfileRecord profile;
  profile.evaluation_id = "evl-missing";
  EXPECT_FALSE(store_->AddProfile(profile).has_value());
}

TEST_F(RunStoreTest, MalformedJsonIsRefused) {
  RunRecord run;
  run.config_json = "{not json";
  auto added = store_->AddRun(run);
  ASSERT_FALSE(added.has_value());
  EXPECT_EQ(added.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(added.error().message.find("runs"), std::string::npos) << added.error().message;
}

TEST_F(RunStoreTest, ReopenAfterCloseKeepsEverything) {
  AddRunTaskCandidate();
  EvaluationRecord evaluation;
  evaluation.run_id = run_.id;
  evaluation.candidate_id = candidate_.id;
  evaluation.status = EvaluationStatus::kCompileError;
  ASSERT_OK_AND_ASSIGN(e, store_->AddEvaluation(evaluation));
  ASSERT_TRUE(store_->FinishRun(run_.id, RunStatus::kFinished).has_value());
  store_.reset();

  for (int i = 0; i < 2; ++i) {  // opening twice migrates nothing and loses nothing
    auto reopened = RunStore::Open(dir_.path());
    ASSERT_TRUE(reopened.has_value()) << reopened.error().ToString();
    ASSERT_OK_AND_ASSIGN(run, (*reopened)->GetRun(run_.id));
    EXPECT_EQ(run.status, RunStatus::kFinished);
    EXPECT_TRUE(run.finished_at.has_value());
    EXPECT_EQ((*reopened)->GetCandidate(candidate_.id).value(), candidate_);
    EXPECT_EQ((*reopened)->GetEvaluation(e.id).value(), e);
    EXPECT_EQ((*reopened)->GetArtifact(candidate_.source_hash).value(), "void relu() {}");
    EXPECT_TRUE((*reopened)->CheckIntegrity().has_value());
  }
}

TEST_F(RunStoreTest, NewerSchemaIsRefusedNamingTheFile) {
  store_.reset();
  const fs::path db_path = dir_.path() / "run.sqlite";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  std::string sql = fmt::format("INSERT INTO schema_version (version, applied_at) VALUES ({}, 0)",
                                RunStore::SchemaVersion() + 1);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);

  auto reopened = RunStore::Open(dir_.path());
  ASSERT_FALSE(reopened.has_value());
  const std::string& message = reopened.error().message;
  EXPECT_NE(message.find(db_path.string()), std::string::npos) << message;
  EXPECT_NE(message.find(fmt::format("schema version {}", RunStore::SchemaVersion() + 1)),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("upgrade kforge"), std::string::npos) << message;
}

TEST_F(RunStoreTest, FileThatIsNotADatabaseIsRefusedNamingIt) {
  store_.reset();
  ScratchDir other;
  fs::create_directories(other.path());
  {
    std::ofstream out(other.path() / "run.sqlite");
    out << std::string(4096, 'x');
  }
  auto opened = RunStore::Open(other.path());
  ASSERT_FALSE(opened.has_value());
  EXPECT_NE(opened.error().message.find((other.path() / "run.sqlite").string()), std::string::npos)
      << opened.error().message;
}

TEST_F(RunStoreTest, ConcurrentWritersFromThreads) {
  AddRunTaskCandidate();
  constexpr int kThreads = 16;
  constexpr int kPerThread = 40;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        CandidateRecord candidate;
        candidate.run_id = run_.id;
        candidate.task_id = task_.id;
        candidate.parent_id = candidate_.id;
        candidate.sample = t;
        candidate.iteration = i;
        candidate.target = "cpu/cpp";
        auto hash = store_->PutArtifact(fmt::format("source {} {}", t, i));
        if (!hash) {
          ++failures;
          continue;
        }
        candidate.source_hash = *hash;
        auto added = store_->AddCandidate(candidate);
        if (!added) {
          ++failures;
          continue;
        }
        EvaluationRecord evaluation;
        evaluation.run_id = run_.id;
        evaluation.candidate_id = added->id;
        evaluation.status = EvaluationStatus::kCorrect;
        if (!store_->AddEvaluation(evaluation)) ++failures;
        if (!store_->FindEvaluation(added->id).value_or(std::nullopt)) ++failures;  // reads too
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_OK_AND_ASSIGN(candidates, store_->ListCandidates(run_.id));
  EXPECT_EQ(candidates.size(), 1u + kThreads * kPerThread);
  std::set<std::string> ids;
  for (const auto& c : candidates) ids.insert(c.id);
  EXPECT_EQ(ids.size(), candidates.size());
  ASSERT_OK_AND_ASSIGN(rows, store_->ListEvaluationRows(run_.id));
  EXPECT_EQ(rows.size(), static_cast<std::size_t>(kThreads * kPerThread));
  for (const auto& row : rows) {
    EXPECT_EQ(store_->GetArtifact(row.candidate.source_hash).value(),
              fmt::format("source {} {}", row.candidate.sample, row.candidate.iteration));
  }
  EXPECT_TRUE(store_->CheckIntegrity().has_value());
}

}  // namespace
}  // namespace kforge::store
