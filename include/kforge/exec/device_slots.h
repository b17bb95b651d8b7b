// DeviceSlots: placement of evaluations on the devices of one host, one timing slot per device.
//
// A device's timing slot is held for the whole of one evaluation (reference, candidate, timing),
// so no two evaluations share a device while either is measured, and evaluations on different
// devices run at the same time. With one device this is one slot: evaluations run one after the
// other while LLM calls and compiles of other tasks go on around them.
//
// Placement: Acquire() gives the free device that has been used least (by evaluations placed so
// far), so work spreads over every device; it blocks while every device is busy.
//
// Thread-safety: every method may be called from any thread.
#ifndef KFORGE_EXEC_DEVICE_SLOTS_H_
#define KFORGE_EXEC_DEVICE_SLOTS_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "kforge/target/target.h"

namespace kforge::exec {

struct Device {
  int index = 0;     // 0-based among the slots
  std::string name;  // the runner's device string: "cpu", "cuda:1", "sim:0"
};

// What one device did, for the summary and for placement tests.
struct DeviceUsage {
  Device device;
  std::int64_t evaluations = 0;
  double busy_seconds = 0;
};

class DeviceSlots {
 public:
  // `devices` must not be empty; their indexes are set to their positions.
  explicit DeviceSlots(std::vector<Device> devices);
  DeviceSlots(const DeviceSlots&) = delete;
  DeviceSlots& operator=(const DeviceSlots&) = delete;

  // Holds one device's slot until destroyed (or moved from).
  class Lease {
   public:
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease();
    const Device& device() const;

   private:
    friend class DeviceSlots;
    Lease(DeviceSlots* owner, int index);
    DeviceSlots* owner_;
    int index_;
    std::int64_t start_ns_;
  };

  // Waits for a free device; nullopt when `stop` is requested first.
  std::optional<Lease> Acquire(std::stop_token stop = {});

  std::size_t size() const { return devices_.size(); }
  const std::vector<Device>& devices() const { return devices_; }
  std::vector<DeviceUsage> Usage() const;
  // Most devices ever busy at once (placement tests: several devices used together).
  int PeakBusy() const;

 private:
  void Release(int index, std::int64_t start_ns);

  std::vector<Device> devices_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::vector<bool> busy_;          // guarded by mu_
  std::vector<DeviceUsage> usage_;  // guarded by mu_
  int busy_now_ = 0;                // guarded by mu_
  int peak_busy_ = 0;               // guarded by mu_
};

// The devices of `target` on this machine: NVIDIA GPUs ("cuda:0".."cuda:N-1", from nvidia-smi),
// one device for other accelerators (the backend's device) and for CPUs ("cpu"). `max_devices`
// > 0 keeps the first that many. `runner_device` is the backend's own device string.
std::vector<Device> DiscoverDevices(const Target& target, const std::string& runner_device,
                                    int max_devices);

// One line for the bench's summary: per device its evaluations and busy seconds, and how many
// devices were busy at once at most, e.g.
// "cuda:0 19 evaluations, 148.2 s busy · cuda:1 18 evaluations, 150.1 s busy · at most 2 busy at once".
std::string DescribeUsage(const DeviceSlots& slots);

// `count` simulated devices "sim:0".. for tests.
std::vector<Device> SimulatedDevices(int count);

}  // namespace kforge::exec

#endif  // KFORGE_EXEC_DEVICE_SLOTS_H_
