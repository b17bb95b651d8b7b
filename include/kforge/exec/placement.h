// Placement of evaluations on device slots: the EvaluateFn a bench gives each task's loop.
//
// PlaceOnDevices() wraps what runs on a device (`on_device`) so that each call first takes a
// device's timing slot (DeviceSlots::Acquire) and gives it back when the verdict is in.
// DeviceEvaluators is the real `on_device`: one Evaluator per device (its own warm work slots) and
// the target's backend bound to that device; native candidates are compiled on the compile
// service's CPU pool before a slot is taken, so the evaluation inside the slot finds the
// compile in the cache and a device never waits for a compiler. A timing taken under load is
// taken once more (RetimeUnderLoad).
#ifndef KFORGE_EXEC_PLACEMENT_H_
#define KFORGE_EXEC_PLACEMENT_H_

#include <filesystem>
#include <functional>
#include <memory>
#include <stop_token>
#include <vector>

#include "kforge/eval/compile_service.h"
#include "kforge/eval/evaluator.h"
#include "kforge/exec/device_slots.h"
#include "kforge/synth/synthesizer.h"
#include "kforge/target/backend.h"

namespace kforge::exec {

// What runs while `device`'s slot is held.
using DeviceEvaluateFn =
    std::function<Verdict(const Device& device, const Task& task, const Backend& backend,
                          const std::filesystem::path& candidate, std::stop_token stop)>;

// Runs before a slot is taken (e.g. compiling on the CPU pool). Optional.
using BeforeSlotFn =
    std::function<void(const Backend& backend, const std::filesystem::path& candidate)>;

// `slots` must outlive the returned function. A stop requested while waiting for a slot — the
// evaluation's own stop token, or `waiting_stop` (a bench's first Ctrl-C: evaluations not yet on
// a device are put back rather than queued behind the device) — ends the evaluation as
// infra_error "cancelled before a device was free"; resume evaluates it again. An evaluation that
// already holds a slot runs to its end unless its own token is stopped.
synth::EvaluateFn PlaceOnDevices(DeviceSlots& slots, DeviceEvaluateFn on_device,
                                 BeforeSlotFn before = {}, std::stop_token waiting_stop = {});

// A correct verdict that was timed while other work competed (Verdict::timed_under_load) is
// evaluated once more: the second verdict is kept, with Verdict::retimed = 1 (still flagged when
// the load persisted). Everything else is returned as `evaluate` gave it. DeviceEvaluators
// evaluates this way, inside the device's slot.
Verdict RetimeUnderLoad(const std::function<Verdict()>& evaluate, std::stop_token stop = {});

class DeviceEvaluators {
 public:
  // One Evaluator per device of `slots`; `compiler` and `backend` must outlive this.
  DeviceEvaluators(CompileService& compiler, const EvalOptions& options, const Backend& backend,
                   const DeviceSlots& slots);
  ~DeviceEvaluators();
  DeviceEvaluators(const DeviceEvaluators&) = delete;
  DeviceEvaluators& operator=(const DeviceEvaluators&) = delete;

  // The EvaluateFn placing evaluations on `slots` (the same slots as the constructor's);
  // `waiting_stop` as in PlaceOnDevices.
  synth::EvaluateFn Placed(DeviceSlots& slots, std::stop_token waiting_stop = {});

 private:
  CompileService& compiler_;
  std::vector<std::unique_ptr<Evaluator>> evaluators_;
  std::vector<std::unique_ptr<Backend>> backends_;  // the target's backend bound to each device
};

}  // namespace kforge::exec

#endif  // KFORGE_EXEC_PLACEMENT_H_
