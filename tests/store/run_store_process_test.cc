// Several processes on one run directory, and a writer killed mid-write.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "kforge/store/run_store.h"
#include "scratch_dir.h"

namespace kforge::store {
namespace {

namespace fs = std::filesystem;

struct Fixture {
  std::string run_id;
  std::string task_id;
};

// A run and a task in a fresh store at `dir`; the store is closed again before any fork, since a
// connection must not cross fork().
void MakeRunAndTask(const fs::path& dir, Fixture* fixture) {
  auto store = RunStore::Open(dir);
  ASSERT_TRUE(store.has_value()) << store.error().ToString();
  RunRecord run;
  run.kind = RunKind::kRun;
  auto added_run = (*store)->AddRun(run);
  ASSERT_TRUE(added_run.has_value()) << added_run.error().ToString();
  TaskRecord task;
  task.run_id = added_run->id;
  task.name = "sum_dim";
  task.source_hash = (*store)->PutArtifact("reference").value();
  auto added_task = (*store)->AddTask(task);
  ASSERT_TRUE(added_task.has_value()) << added_task.error().ToString();
  *fixture = {added_run->id, added_task->id};
}

// Adds one candidate (with a fresh source artifact) and its evaluation; false on any error.
bool WriteOne(RunStore& store, const Fixture& fixture, int writer, int i) {
  auto hash = store.PutArtifact(fmt::format("writer {} candidate {}\n{}", writer, i,
                                            std::string(static_cast<std::size_t>(i % 7) * 500, 'k')));
  if (!hash) return false;
  CandidateRecord candidate;
  candidate.run_id = fixture.run_id;
  candidate.task_id = fixture.task_id;
  candidate.sample = writer;
  candidate.iteration = i;
  candidate.target = "cpu/cpp";
  candidate.source_hash = *hash;
  auto added = store.AddCandidate(candidate);
  if (!added) {
    fmt::print(stderr, "writer {}: {}\n", writer, added.error().ToString());
    return false;
  }
  EvaluationRecord evaluation;
  evaluation.run_id = fixture.run_id;
  evaluation.candidate_id = added->id;
  evaluation.status = EvaluationStatus::kCorrect;
  evaluation.verdict_json = fmt::format(R"({{"writer": {}, "i": {}}})", writer, i);
  auto evaluated = store.AddEvaluation(evaluation);
  if (!evaluated) fmt::print(stderr, "writer {}: {}\n", writer, evaluated.error().ToString());
  return evaluated.has_value();
}

// Every candidate has a readable, intact source artifact and its evaluation.
void ExpectConsistent(RunStore& store, const Fixture& fixture) {
  auto candidates = store.ListCandidates(fixture.run_id);
  ASSERT_TRUE(candidates.has_value()) << candidates.error().ToString();
  for (const auto& candidate : *candidates) {
    auto source = store.GetArtifact(candidate.source_hash);
    ASSERT_TRUE(source.has_value()) << source.error().ToString();
    EXPECT_TRUE(source->starts_with(
        fmt::format("writer {} candidate {}\n", candidate.sample, candidate.iteration)));
  }
}

TEST(RunStoreProcessTest, TwoProcessesAndThisOneWriteTogether) {
  ScratchDir dir;
  Fixture fixture;
  ASSERT_NO_FATAL_FAILURE(MakeRunAndTask(dir.path(), &fixture));
  constexpr int kWriters = 2;
  constexpr int kPerWriter = 150;
  std::vector<pid_t> children;
  for (int writer = 1; writer <= kWriters; ++writer) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // The child: its own connection; _exit so that no parent state is torn down twice.
      auto store = RunStore::Open(dir.path());
      if (!store) _exit(2);
      for (int i = 0; i < kPerWriter; ++i) {
        if (!WriteOne(**store, fixture, writer, i)) _exit(3);
      }
      store->reset();
      _exit(0);
    }
    children.push_back(pid);
  }
  auto store = RunStore::Open(dir.path());
  ASSERT_TRUE(store.has_value()) << store.error().ToString();
  int failures = 0;
  for (int i = 0; i < kPerWriter; ++i) {
    if (!WriteOne(**store, fixture, 0, i)) ++failures;
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  EXPECT_EQ(failures, 0);

  auto candidates = (*store)->ListCandidates(fixture.run_id);
  ASSERT_TRUE(candidates.has_value());
  EXPECT_EQ(candidates->size(), static_cast<std::size_t>((kWriters + 1) * kPerWriter));
  auto rows = (*store)->ListEvaluationRows(fixture.run_id);
  ASSERT_TRUE(rows.has_value());
  EXPECT_EQ(rows->size(), static_cast<std::size_t>((kWriters + 1) * kPerWriter));
  ExpectConsistent(**store, fixture);
  EXPECT_TRUE((*store)->CheckIntegrity().has_value());
}

TEST(RunStoreProcessTest, KilledWriterLeavesAnIntactStore) {
  ScratchDir dir;
  Fixture fixture;
  ASSERT_NO_FATAL_FAILURE(MakeRunAndTask(dir.path(), &fixture));
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(pipe_fds[0]);
    auto store = RunStore::Open(dir.path());
    if (!store) _exit(2);
    for (int i = 0;; ++i) {  // until killed
      if (!WriteOne(**store, fixture, 1, i)) _exit(3);
      char tick = 'w';
      if (write(pipe_fds[1], &tick, 1) != 1) _exit(4);
    }
  }
  close(pipe_fds[1]);
  // Let it commit a good number of rows, then kill it at an arbitrary point mid-loop.
  int ticks = 0;
  char buffer[64];
  while (ticks < 200) {
    ssize_t n = read(pipe_fds[0], buffer, sizeof(buffer));
    ASSERT_GT(n, 0) << "the writer stopped before it was killed";
    ticks += static_cast<int>(n);
  }
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  close(pipe_fds[0]);

  // SQLite's own check, on a plain connection that does not go through RunStore.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir.path() / "run.sqlite").c_str(), &db), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "ok");
    EXPECT_EQ(sqlite3_step(stmt), SQLITE_DONE);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
  }

  auto store = RunStore::Open(dir.path());
  ASSERT_TRUE(store.has_value()) << store.error().ToString();
  EXPECT_TRUE((*store)->CheckIntegrity().has_value());
  auto candidates = (*store)->ListCandidates(fixture.run_id);
  ASSERT_TRUE(candidates.has_value());
  // Every committed write survived: the writer reported 200 finished pairs.
  EXPECT_GE(candidates->size(), 200u);
  auto evaluations = (*store)->ListEvaluations(fixture.run_id);
  ASSERT_TRUE(evaluations.has_value());
  EXPECT_GE(evaluations->size(), 200u);
  ExpectConsistent(**store, fixture);
  // And the store takes new writes.
  EXPECT_TRUE(WriteOne(**store, fixture, 9, 0));
}

}  // namespace
}  // namespace kforge::store
