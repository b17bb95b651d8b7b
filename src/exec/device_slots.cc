#include "kforge/exec/device_slots.h"

#include <fmt/format.h>

#include <chrono>
#include <utility>

#include "kforge/target/probe.h"

namespace kforge::exec {
namespace {

std::int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

DeviceSlots::DeviceSlots(std::vector<Device> devices) : devices_(std::move(devices)) {
  if (devices_.empty()) devices_.push_back(Device{0, "cpu"});
  for (std::size_t i = 0; i < devices_.size(); ++i) devices_[i].index = static_cast<int>(i);
  busy_.assign(devices_.size(), false);
  for (const Device& d : devices_) usage_.push_back(DeviceUsage{d, 0, 0});
}

DeviceSlots::Lease::Lease(DeviceSlots* owner, int index)
    : owner_(owner), index_(index), start_ns_(NowNs()) {}

DeviceSlots::Lease::Lease(Lease&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)),
      index_(other.index_),
      start_ns_(other.start_ns_) {}

DeviceSlots::Lease::~Lease() {
  if (owner_ != nullptr) owner_->Release(index_, start_ns_);
}

const Device& DeviceSlots::Lease::device() const {
  return owner_->devices_[static_cast<std::size_t>(index_)];
}

std::optional<DeviceSlots::Lease> DeviceSlots::Acquire(std::stop_token stop) {
  std::unique_lock lock(mu_);
  int chosen = -1;
  const bool got = cv_.wait(lock, stop, [&] {
    chosen = -1;
    for (std::size_t i = 0; i < busy_.size(); ++i) {
      if (busy_[i]) continue;
      if (chosen < 0 ||
          usage_[i].evaluations < usage_[static_cast<std::size_t>(chosen)].evaluations) {
        chosen = static_cast<int>(i);
      }
    }
    return chosen >= 0;
  });
  if (!got) return std::nullopt;
  busy_[static_cast<std::size_t>(chosen)] = true;
  ++usage_[static_cast<std::size_t>(chosen)].evaluations;
  ++busy_now_;
  if (busy_now_ > peak_busy_) peak_busy_ = busy_now_;
  return Lease(this, chosen);
}

void DeviceSlots::Release(int index, std::int64_t start_ns) {
  {
    std::lock_guard lock(mu_);
    busy_[static_cast<std::size_t>(index)] = false;
    usage_[static_cast<std::size_t>(index)].busy_seconds +=
        static_cast<double>(NowNs() - start_ns) / 1e9;
    --busy_now_;
  }
  cv_.notify_all();
}

std::vector<DeviceUsage> DeviceSlots::Usage() const {
  std::lock_guard lock(mu_);
  return usage_;
}

int DeviceSlots::PeakBusy() const {
  std::lock_guard lock(mu_);
  return peak_busy_;
}

std::vector<Device> DiscoverDevices(const Target& target, const std::string& runner_device,
                                    int max_devices) {
  std::vector<Device> out;
  if (target.vendor == Vendor::kNvidia && runner_device.starts_with("cuda")) {
    const auto& gpus = NvidiaGpus();
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      out.push_back(Device{static_cast<int>(i), fmt::format("cuda:{}", i)});
    }
  }
  if (out.empty()) out.push_back(Device{0, runner_device.empty() ? "cpu" : runner_device});
  if (max_devices > 0 && static_cast<int>(out.size()) > max_devices) {
    out.resize(static_cast<std::size_t>(max_devices));
  }
  return out;
}

std::string DescribeUsage(const DeviceSlots& slots) {
  std::string out;
  for (const DeviceUsage& u : slots.Usage()) {
    out += fmt::format("{} {} evaluation{}, {:.1f} s busy · ", u.device.name, u.evaluations,
                       u.evaluations == 1 ? "" : "s", u.busy_seconds);
  }
  return out + fmt::format("at most {} busy at once", slots.PeakBusy());
}

std::vector<Device> SimulatedDevices(int count) {
  std::vector<Device> out;
  for (int i = 0; i < count; ++i) out.push_back(Device{i, fmt::format("sim:{}", i)});
  return out;
}

}  // namespace kforge::exec
