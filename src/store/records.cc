#include "kforge/store/records.h"

#include <fmt/format.h>

#include <array>
#include <utility>

namespace kforge::store {
namespace {

// The one table per enum that both directions read, so the two can never disagree.
template <typename E, std::size_t N>
using Names = std::array<std::pair<E, std::string_view>, N>;

constexpr Names<RunKind, 4> kRunKindNames{{
    {RunKind::kEval, "eval"},
    {RunKind::kRun, "run"},
    {RunKind::kBench, "bench"},
    {RunKind::kE2e, "e2e"},
}};
constexpr Names<RunStatus, 4> kRunStatusNames{{
    {RunStatus::kRunning, "running"},
    {RunStatus::kFinished, "finished"},
    {RunStatus::kFailed, "failed"},
    {RunStatus::kInterrupted, "interrupted"},
}};
constexpr Names<PassKind, 3> kPassKindNames{{
    {PassKind::kFunctional, "functional"},
    {PassKind::kOptimization, "optimization"},
    {PassKind::kGiven, "given"},
}};
constexpr Names<EvaluationStatus, 13> kEvaluationStatusNames{{
    {EvaluationStatus::kCorrect, "correct"},
    {EvaluationStatus::kMismatch, "mismatch"},
    {EvaluationStatus::kCompileError, "compile_error"},
    {EvaluationStatus::kRuntimeError, "runtime_error"},
    {EvaluationStatus::kCrashed, "crashed"},
    {EvaluationStatus::kTimeout, "timeout"},
    {EvaluationStatus::kOutOfMemory, "out_of_memory"},
    {EvaluationStatus::kSandboxViolation, "sandbox_violation"},
    {EvaluationStatus::kResourceLimit, "resource_limit"},
    {EvaluationStatus::kGuardrail, "guardrail"},
    {EvaluationStatus::kRejected, "rejected"},
    {EvaluationStatus::kReferenceError, "reference_error"},
    {EvaluationStatus::kInfraError, "infra_error"},
}};
constexpr Names<LlmCallStatus, 4> kLlmCallStatusNames{{
    {LlmCallStatus::kOk, "ok"},
    {LlmCallStatus::kError, "error"},
    {LlmCallStatus::kTimeout, "timeout"},
    {LlmCallStatus::kCancelled, "cancelled"},
}};

template <typename E, std::size_t N>
std::string_view NameOf(const Names<E, N>& names, E value) {
  for (const auto& [e, name] : names) {
    if (e == value) return name;
  }
  return "?";  // unreachable for a valid enumerator
}

template <typename E, std::size_t N>
Result<E> Parse(const Names<E, N>& names, std::string_view what, std::string_view text) {
  for (const auto& [e, name] : names) {
    if (name == text) return e;
  }
  std::string known;
  for (const auto& [e, name] : names) {
    if (!known.empty()) known += ", ";
    known += name;
  }
  return ParseError(fmt::format("unknown {} '{}' (known: {}); a newer kforge may have written it",
                                what, text, known));
}

}  // namespace

Timestamp Now() {
  return std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now());
}

std::string_view ToString(RunKind value) { return NameOf(kRunKindNames, value); }
std::string_view ToString(RunStatus value) { return NameOf(kRunStatusNames, value); }
std::string_view ToString(PassKind value) { return NameOf(kPassKindNames, value); }
std::string_view ToString(EvaluationStatus value) { return NameOf(kEvaluationStatusNames, value); }
std::string_view ToString(LlmCallStatus value) { return NameOf(kLlmCallStatusNames, value); }

Result<RunKind> ParseRunKind(std::string_view text) {
  return Parse(kRunKindNames, "run kind", text);
}
Result<RunStatus> ParseRunStatus(std::string_view text) {
  return Parse(kRunStatusNames, "run status", text);
}
Result<PassKind> ParsePassKind(std::string_view text) {
  return Parse(kPassKindNames, "pass kind", text);
}
Result<EvaluationStatus> ParseEvaluationStatus(std::string_view text) {
  return Parse(kEvaluationStatusNames, "evaluation status", text);
}
Result<LlmCallStatus> ParseLlmCallStatus(std::string_view text) {
  return Parse(kLlmCallStatusNames, "llm call status", text);
}

}  // namespace kforge::store
