// Static guardrails (EVAL-PROTOCOL, "Static guardrails"): a first filter over a candidate's source
// before anything compiles. Each rule looks for one known way of fooling the evaluation (calling
// the reference framework, side streams and threads, graph capture, patched timers, reading the
// harness, caches keyed on identity, exception fallbacks, forbidden precision, run-time installs,
// hard-coded shapes) and answers with a finding written for the model that produced the code.
//
// The rules read tokens, not text: a small lexer per language (Python; C-like for CUDA, HIP, C++,
// SYCL and OpenCL C) drops comments and keeps string literals apart, so a rule never fires on a
// comment or on prose inside a string. Code inside strings is scanned as C where it is code: an
// OpenCL candidate's SOURCE and the C++/CUDA sources of a load_inline submission.
//
// Static rules are a first filter, not the defence: anything they miss is for the dynamic checks
// (poisoned outputs, fresh inputs, the sandbox, the timing cross-checks). They are tuned for no
// false rejects on honest code; what is only suspicious is flagged, not rejected.
//
// Layout (src/eval/guardrails/, internal): the lexers (lexer, token_queries), Python scopes and
// import aliases (python_scopes), the rule catalogue (rule_catalogue: ids and the texts the model
// reads), the findings a check collects (findings), the precision policy's rule (precision_rule),
// the rules per language (python_rules, c_rules) and those over both (text_rules). The task's
// own facts the rules need come from task_analysis.h.
//
// Thread-safety: CheckCandidate is a pure function.
#ifndef KFORGE_EVAL_GUARDRAILS_H_
#define KFORGE_EVAL_GUARDRAILS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/eval/task_analysis.h"
#include "kforge/target/backend.h"
#include "kforge/target/target.h"
#include "kforge/task/task.h"

namespace kforge {

// kReject ends the evaluation with status `guardrail`; kFlag is reported in the verdict only.
enum class GuardrailSeverity { kReject, kFlag };
std::string_view GuardrailSeverityName(GuardrailSeverity severity);  // "reject", "flag"

struct GuardrailFinding {
  // Stable rule id, stored in verdicts and never renamed: reference-op-call, stream-creation,
  // thread-creation, graph-capture, timer-patch, harness-introspection, inherited-descriptor,
  // output-cache, exception-fallback, precision-downcast, runtime-install, hardcoded-shape.
  std::string rule;
  GuardrailSeverity severity = GuardrailSeverity::kReject;
  int line = 0;         // 1-based line in the candidate file
  std::string found;    // the code that triggered the rule, e.g. "torch.relu("
  std::string message;  // for the model: what was found, why it is not allowed, what to do instead

  // One line: "line 12: [reference-op-call] <message>".
  std::string Format() const;
};

struct GuardrailReport {
  std::vector<GuardrailFinding> findings;  // in source order

  bool rejected() const;
  // The reject findings, one per line (Format()), for a verdict's diagnostics and the next prompt.
  std::string FormatRejects() const;
  // The flag findings, each Format()'ed.
  std::vector<std::string> FlagLines() const;
};

struct GuardrailOptions {
  // The task's precision policy: under strict, any lower-precision arithmetic (fp16, bf16, fp8,
  // TF32) is rejected; under tf32 and mixed, only what goes beyond the policy is flagged.
  PrecisionPolicy policy = PrecisionPolicy::kStrict;
  // The target lets candidates call the reference framework's compute ops (torch.*, F.*, nn
  // submodules) in the forward path. Default false: the candidate's own kernels must compute.
  bool allow_reference_ops = false;
  // The task itself computes in fp16/bf16 (TaskUsesLowPrecision): those types are then no
  // downcast. Default false.
  bool task_low_precision = false;
  // The task's sizes (TaskDimensions); numeric literals equal to one of them (>= 8) used as a size
  // are flagged as hardcoded-shape. Empty (the default) turns that rule off.
  std::vector<std::int64_t> task_dimensions;
};

// Checks one candidate file's source. `rules` are the target backend's dialect facts
// (Backend::traits().static_rules) and `kind` how the runner loads the file (a module candidate
// on a native model is a KernelBench-style load_inline submission).
GuardrailReport CheckCandidate(std::string_view source, const StaticRuleSet& rules,
                               CandidateKind kind, const GuardrailOptions& options);

// The same with the rules of `model`'s backend (TraitsOf(model).static_rules).
GuardrailReport CheckCandidate(std::string_view source, ProgrammingModel model, CandidateKind kind,
                               const GuardrailOptions& options);

}  // namespace kforge

#endif  // KFORGE_EVAL_GUARDRAILS_H_
