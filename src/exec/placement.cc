#include "kforge/exec/placement.h"

#include <fmt/format.h>

#include <utility>

#include "kforge/core/activity.h"

namespace kforge::exec {
namespace {

// The target's backend with the runner's device replaced by one slot's device.
class DeviceBackend : public Backend {
 public:
  DeviceBackend(const Backend& inner, std::string device)
      : inner_(inner), device_(std::move(device)) {}
  const Target& target() const override { return inner_.target(); }
  const ModelTraits& traits() const override { return inner_.traits(); }
  Availability Probe() const override { return inner_.Probe(); }
  Result<CompileCommand> NativeCompile(const std::filesystem::path& source,
                                       const std::filesystem::path& output,
                                       const std::filesystem::path& abi_include_dir) const override {
    return inner_.NativeCompile(source, output, abi_include_dir);
  }
  std::string RunnerDevice() const override { return device_; }
  std::string OpenClPlatform() const override { return inner_.OpenClPlatform(); }
  bool UsesAccelerator() const override { return inner_.UsesAccelerator(); }

 private:
  const Backend& inner_;
  const std::string device_;
};

Verdict Cancelled(const Task& task, const Backend& backend, const std::filesystem::path& path) {
  Verdict v;
  v.task_name = task.name;
  v.task_origin = task.origin;
  v.target = backend.target().ToString();
  v.candidate = path.string();
  v.status = EvalStatus::kInfraError;
  v.message = "cancelled before a device was free";
  return v;
}

}  // namespace

synth::EvaluateFn PlaceOnDevices(DeviceSlots& slots, DeviceEvaluateFn on_device,
                                 BeforeSlotFn before, std::stop_token waiting_stop) {
  return [&slots, on_device = std::move(on_device), before = std::move(before), waiting_stop](
             const Task& task, const Backend& backend, const std::filesystem::path& candidate,
             std::stop_token stop) -> Verdict {
    if (before) {
      ScopedActivity activity("compiling");
      before(backend, candidate);
    }
    // Waiting ends on either token: one stop source fed by both.
    std::stop_source wait;
    std::stop_callback on_stop(stop, [&wait] { wait.request_stop(); });
    std::stop_callback on_waiting_stop(waiting_stop, [&wait] { wait.request_stop(); });
    auto lease = [&] {
      ScopedActivity activity("waiting for a device");
      return slots.Acquire(wait.get_token());
    }();
    if (!lease) return Cancelled(task, backend, candidate);
    ScopedActivity activity(fmt::format("evaluating on {}", lease->device().name));
    return on_device(lease->device(), task, backend, candidate, stop);
  };
}

Verdict RetimeUnderLoad(const std::function<Verdict()>& evaluate, std::stop_token stop) {
  Verdict first = evaluate();
  if (first.status != EvalStatus::kCorrect || !first.timed_under_load || stop.stop_requested()) {
    return first;
  }
  Verdict again = evaluate();
  again.retimed = 1;
  return again;
}

DeviceEvaluators::DeviceEvaluators(CompileService& compiler, const EvalOptions& options,
                                   const Backend& backend, const DeviceSlots& slots)
    : compiler_(compiler) {
  for (const Device& d : slots.devices()) {
    evaluators_.push_back(std::make_unique<Evaluator>(compiler, options));
    backends_.push_back(std::make_unique<DeviceBackend>(backend, d.name));
  }
}

DeviceEvaluators::~DeviceEvaluators() = default;

synth::EvaluateFn DeviceEvaluators::Placed(DeviceSlots& slots, std::stop_token waiting_stop) {
  auto on_device = [this](const Device& device, const Task& task, const Backend& /*backend*/,
                          const std::filesystem::path& candidate, std::stop_token stop) {
    const auto i = static_cast<std::size_t>(device.index);
    return RetimeUnderLoad(
        [&] { return evaluators_[i]->Evaluate(task, *backends_[i], candidate, stop); }, stop);
  };
  auto before = [this](const Backend& backend, const std::filesystem::path& candidate) {
    auto kind = backend.KindOf(candidate);
    if (!kind || *kind != CandidateKind::kNative) return;
    // The outcome is cached by content; the evaluation inside the slot reads it from the cache.
    (void)compiler_.Submit(backend, candidate).get();
  };
  return PlaceOnDevices(slots, std::move(on_device), std::move(before), std::move(waiting_stop));
}

}  // namespace kforge::exec
