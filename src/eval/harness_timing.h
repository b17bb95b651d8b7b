// Parent-driven timing through a harness (runner/HARNESS.md "What the parent decides";
// docs/verdict.md "Timing"). Internal to src/eval.
//
// Timed calls are checked calls: samples rotate among timing sets that the reference drew like
// trials but that no trial showed, in an order the parent draws; the harness poisons the outputs
// before every sample; after a sample has run the parent decides (at random, out of the child's
// sight) whether to freeze the child and compare that sample's outputs with the set's reference
// outputs. Sampling stops when the median is known precisely (eval/median_interval.h) or at the
// cap. The parent keeps its own clock around every sample: against the empty samples taken before
// `load` (what the protocol itself costs, trusted: no candidate code was in the process), it
// bounds how much time the child's claims may leave out (`[clock-check]`).
#ifndef KFORGE_SRC_EVAL_HARNESS_TIMING_H_
#define KFORGE_SRC_EVAL_HARNESS_TIMING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kforge/eval/accuracy.h"
#include "kforge/eval/harness_session.h"
#include "kforge/eval/tensor_compare.h"
#include "kforge/eval/timing.h"
#include "kforge/task/task.h"

namespace kforge {

// One timing set as placed in the arena, with its reference outputs.
struct TimedSet {
  std::vector<ArenaTensor> inputs;   // task inputs then state tensors
  std::vector<ArenaTensor> outputs;  // where the harness copies each sample's outputs
  std::vector<TensorFile> expected;  // the reference outputs of this set
  std::vector<std::optional<TensorFile>> truth;  // their float64 truth, where there is one
};

// Judges a frozen copy of an output against its reference file and float64 truth (null: none)
// by the precision contract (eval/accuracy.h `JudgeOutput`): the trials' rule, so that a timed
// call is held to what its trials were.
Result<OutputJudgement> JudgeFrozenOutput(const TensorFile& expected, const TensorFile* truth,
                                          const HostTensor& candidate, PrecisionPolicy policy);

// What one sampling mode costs with nothing to call (empty samples, before `load`).
struct ProtocolCost {
  std::string mode;
  std::vector<double> parent_s;  // the parent's clock around each empty sample
  std::vector<double> child_s;   // what the child reported for it
  double median_parent_s() const;
  double spread_s() const;  // median absolute deviation of parent_s
};

// Before `load`: `count` empty samples in each mode, rotating over `sets` timing sets.
HarnessResult<std::vector<ProtocolCost>> MeasureProtocolCost(HarnessSession& session, int sets,
                                                             const std::vector<std::string>& modes,
                                                             int count);

struct HarnessTimingRequest {
  TimingOptions options;
  std::string headline_mode = "cpu";  // cpu (host clock), cold (CUDA's cold protocol)
  // The samples the parent's clock is compared on: the headline samples themselves on a CPU,
  // device-synchronised host samples on a GPU (no idle spin in them to hide work in).
  std::string check_mode = "cpu";
  bool side_figures = false;  // GPU: warm events and N calls in one graph
  PrecisionPolicy policy = PrecisionPolicy::kStrict;  // timed outputs are judged as the trials
  std::uint64_t seed = 0;   // the set order and which samples are checked
  int max_sm_mhz = 0;       // samples below 75 % of it are discarded (0: unknown, keep all)
};

// The parent's clock against the child's claims (docs/verdict.md "Clock check").
struct ClockCheck {
  bool done = false;
  bool ok = true;
  double parent_call_s = 0;  // median parent time of the check batches per call, protocol cost off
  double claimed_s = 0;      // what the child claimed for the same calls
  double allowance_s = 0;    // what the parent's figure may exceed the claim by
  int samples = 0;
  // GPU: the child's device-synchronised figure (the batches) against its event-timed headline:
  // work on another stream or after the end event shows in the first but not the second.
  bool events_checked = false;
  bool events_ok = true;
  double synchronised_s = 0;
  double headline_s = 0;
  double events_allowance_s = 0;
  std::string Describe() const;
};

struct HarnessTimingOutcome {
  std::optional<TimingStats> stats;
  std::string error;                      // no statistics: why (the call failed while timed)
  std::optional<HarnessProblem> problem;  // the harness ended or failed while timed
  int timed_samples = 0;                  // every sample taken after load (warm-up included)
  int checked_samples = 0;                // of those, compared with the reference
  double check_probability = 1;           // of an unforced sample being checked
  std::string timed_mismatch;             // the first checked sample that was wrong, or ""
  std::vector<std::string> findings;      // "[check-id] ..." the harness reported while timed
  ClockCheck clock_check;
  double check_seconds = 0;  // freezing, copying and comparing timed outputs
};

HarnessTimingOutcome TimeThroughHarness(HarnessSession& session, const std::vector<TimedSet>& sets,
                                        const std::vector<ProtocolCost>& cost,
                                        const HarnessTimingRequest& request);

// The allowance of the clock check: the share the parent's figure may exceed the claim by, and
// the absolute slack (launch and synchronisation jitter on top of three spreads of the empty
// samples). docs/verdict.md says why these values.
inline constexpr double kClockCheckFactor = 0.5;
inline constexpr double kClockCheckSlackS = 50e-6;
// GPU: the device-synchronised figure may be this many times the event-timed headline, plus
// kEventsCheckSlackS per call (back-to-back launches cost 2-3 us each on an H200, more than a
// tiny kernel runs; the cold headline counts the device time of every kernel and the gaps
// between them).
inline constexpr double kEventsCheckFactor = 2.0;
inline constexpr double kEventsCheckSlackS = 5e-6;

}  // namespace kforge

#endif  // KFORGE_SRC_EVAL_HARNESS_TIMING_H_
