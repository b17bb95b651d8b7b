// NVML (NVIDIA's management library), loaded at run time with dlopen: KForge builds and runs
// where it is absent, and says so. Only what the load monitor needs: device handles and
// per-process utilisation samples (nvmlProcessUtilizationSample_t, whose layout every NVML
// version since CUDA 6 shares; the process-list calls are left out because their struct changed
// size between driver releases).
//
// Thread-safety: Nvml::Get() and the methods of the returned object may be called from any thread
// (NVML itself is thread-safe).
#ifndef KFORGE_CORE_NVML_H_
#define KFORGE_CORE_NVML_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/error.h"

namespace kforge {

class Nvml {
 public:
  using Device = void*;  // nvmlDevice_t

  struct ProcessSample {
    pid_t pid = 0;
    std::uint64_t timestamp_us = 0;  // CPU time stamp of the sample (microseconds since the epoch)
    unsigned sm_util = 0;            // percent of the sample period a kernel of this process ran
    unsigned mem_util = 0;
  };

  // The loaded library, or why it is not there (no libnvidia-ml.so.1, or nvmlInit failed).
  static Result<const Nvml*> Get();

  // The NVML device behind a CUDA device name ("cuda:N", counted as CUDA counts them: through
  // CUDA_VISIBLE_DEVICES when it is set, by index or by UUID).
  Result<Device> DeviceFor(std::string_view cuda_device) const;

  // Utilisation samples of every process on `device` taken after `since_us` (empty when none).
  Result<std::vector<ProcessSample>> ProcessUtilization(Device device,
                                                        std::uint64_t since_us) const;

  struct Api;  // the resolved entry points (defined in nvml.cc)

 private:
  explicit Nvml(const Api* api) : api_(api) {}
  const Api* api_;
};

}  // namespace kforge

#endif  // KFORGE_CORE_NVML_H_
