#include "kforge/store/records.h"

#include <gtest/gtest.h>

namespace kforge::store {
namespace {

// The stored texts are a persistent format: these literals must never change.
TEST(StoreRecordsTest, StoredEnumTextsAreFixed) {
  EXPECT_EQ(ToString(RunKind::kEval), "eval");
  EXPECT_EQ(ToString(RunKind::kRun), "run");
  EXPECT_EQ(ToString(RunKind::kBench), "bench");
  EXPECT_EQ(ToString(RunStatus::kRunning), "running");
  EXPECT_EQ(ToString(RunStatus::kFinished), "finished");
  EXPECT_EQ(ToString(RunStatus::kFailed), "failed");
  EXPECT_EQ(ToString(RunStatus::kInterrupted), "interrupted");
  EXPECT_EQ(ToString(PassKind::kFunctional), "functional");
  EXPECT_EQ(ToString(PassKind::kOptimization), "optimization");
  EXPECT_EQ(ToString(PassKind::kGiven), "given");
  EXPECT_EQ(ToString(EvaluationStatus::kCorrect), "correct");
  EXPECT_EQ(ToString(EvaluationStatus::kMismatch), "mismatch");
  EXPECT_EQ(ToString(EvaluationStatus::kCompileError), "compile_error");
  EXPECT_EQ(ToString(EvaluationStatus::kRuntimeError), "runtime_error");
  EXPECT_EQ(ToString(EvaluationStatus::kCrashed), "crashed");
  EXPECT_EQ(ToString(EvaluationStatus::kTimeout), "timeout");
  EXPECT_EQ(ToString(EvaluationStatus::kOutOfMemory), "out_of_memory");
  EXPECT_EQ(ToString(EvaluationStatus::kSandboxViolation), "sandbox_violation");
  EXPECT_EQ(ToString(EvaluationStatus::kResourceLimit), "resource_limit");
  EXPECT_EQ(ToString(EvaluationStatus::kGuardrail), "guardrail");
  EXPECT_EQ(ToString(EvaluationStatus::kRejected), "rejected");
  EXPECT_EQ(ToString(EvaluationStatus::kReferenceError), "reference_error");
  EXPECT_EQ(ToString(EvaluationStatus::kInfraError), "infra_error");
  EXPECT_EQ(ToString(LlmCallStatus::kOk), "ok");
  EXPECT_EQ(ToString(LlmCallStatus::kError), "error");
  EXPECT_EQ(ToString(LlmCallStatus::kTimeout), "timeout");
  EXPECT_EQ(ToString(LlmCallStatus::kCancelled), "cancelled");
}

TEST(StoreRecordsTest, ParseInvertsToString) {
  for (auto v : {RunKind::kEval, RunKind::kRun, RunKind::kBench}) {
    EXPECT_EQ(ParseRunKind(ToString(v)).value(), v);
  }
  for (auto v : {RunStatus::kRunning, RunStatus::kFinished, RunStatus::kFailed,
                 RunStatus::kInterrupted}) {
    EXPECT_EQ(ParseRunStatus(ToString(v)).value(), v);
  }
  for (auto v : {PassKind::kFunctional, PassKind::kOptimization, PassKind::kGiven}) {
    EXPECT_EQ(ParsePassKind(ToString(v)).value(), v);
  }
  for (auto v : {EvaluationStatus::kCorrect, EvaluationStatus::kMismatch,
                 EvaluationStatus::kCompileError, EvaluationStatus::kRuntimeError,
                 EvaluationStatus::kCrashed, EvaluationStatus::kTimeout,
                 EvaluationStatus::kOutOfMemory, EvaluationStatus::kSandboxViolation,
                 EvaluationStatus::kResourceLimit, EvaluationStatus::kGuardrail,
                 EvaluationStatus::kRejected, EvaluationStatus::kReferenceError,
                 EvaluationStatus::kInfraError}) {
    EXPECT_EQ(ParseEvaluationStatus(ToString(v)).value(), v);
  }
  for (auto v : {LlmCallStatus::kOk, LlmCallStatus::kError, LlmCallStatus::kTimeout,
                 LlmCallStatus::kCancelled}) {
    EXPECT_EQ(ParseLlmCallStatus(ToString(v)).value(), v);
  }
}

TEST(StoreRecordsTest, UnknownTextIsAParseErrorNamingIt) {
  auto kind = ParsePassKind("Functional");
  ASSERT_FALSE(kind.has_value());
  EXPECT_EQ(kind.error().code, ErrorCode::kParse);
  EXPECT_NE(kind.error().message.find("'Functional'"), std::string::npos);
  EXPECT_NE(kind.error().message.find("optimization"), std::string::npos);
  EXPECT_FALSE(ParseRunStatus("").has_value());
}

}  // namespace
}  // namespace kforge::store
