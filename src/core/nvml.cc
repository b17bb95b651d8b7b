#include "kforge/core/nvml.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <mutex>

namespace kforge {
namespace {

// The parts of nvml.h used here (NVML's C ABI; nvml.h itself is not needed to build).
using NvmlReturn = int;
constexpr NvmlReturn kSuccess = 0;
constexpr NvmlReturn kErrorNotFound = 6;
constexpr NvmlReturn kErrorInsufficientSize = 7;

struct NvmlProcessUtilizationSample {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
};

}  // namespace

struct Nvml::Api {
  NvmlReturn (*init)();
  const char* (*error_string)(NvmlReturn);
  NvmlReturn (*handle_by_index)(unsigned int, void**);
  NvmlReturn (*handle_by_uuid)(const char*, void**);
  NvmlReturn (*process_utilization)(void*, NvmlProcessUtilizationSample*, unsigned int*,
                                    unsigned long long);

  std::string Error(NvmlReturn r) const {
    return error_string != nullptr ? error_string(r) : fmt::format("NVML error {}", r);
  }
};

Result<const Nvml*> Nvml::Get() {
  static std::once_flag once;
  static const Nvml* nvml = nullptr;
  static std::string why;
  std::call_once(once, [] {
    void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      why = "NVML is not installed here (libnvidia-ml.so.1 not found: no NVIDIA driver)";
      return;
    }
    static Api api{};
    auto sym = [&](const char* name) { return ::dlsym(lib, name); };
    api.init = reinterpret_cast<NvmlReturn (*)()>(sym("nvmlInit_v2"));
    api.error_string = reinterpret_cast<const char* (*)(NvmlReturn)>(sym("nvmlErrorString"));
    api.handle_by_index =
        reinterpret_cast<NvmlReturn (*)(unsigned int, void**)>(sym("nvmlDeviceGetHandleByIndex_v2"));
    api.handle_by_uuid =
        reinterpret_cast<NvmlReturn (*)(const char*, void**)>(sym("nvmlDeviceGetHandleByUUID"));
    api.process_utilization =
        reinterpret_cast<NvmlReturn (*)(void*, NvmlProcessUtilizationSample*, unsigned int*,
                                        unsigned long long)>(
            sym("nvmlDeviceGetProcessUtilization"));
    if (api.init == nullptr || api.handle_by_index == nullptr ||
        api.process_utilization == nullptr) {
      why = "this NVML lacks nvmlInit_v2, nvmlDeviceGetHandleByIndex_v2 or "
            "nvmlDeviceGetProcessUtilization";
      return;
    }
    if (NvmlReturn r = api.init(); r != kSuccess) {
      why = "nvmlInit failed: " + api.Error(r);
      return;
    }
    static Nvml instance(&api);
    nvml = &instance;
  });
  if (nvml == nullptr) return Unavailable(why);
  return nvml;
}

Result<Nvml::Device> Nvml::DeviceFor(std::string_view cuda_device) const {
  unsigned index = 0;
  if (cuda_device.starts_with("cuda:")) {
    index = static_cast<unsigned>(std::strtoul(std::string(cuda_device.substr(5)).c_str(), nullptr, 10));
  } else if (cuda_device != "cuda") {
    return InvalidArgument(fmt::format("not a CUDA device: {}", cuda_device));
  }
  // CUDA counts the devices CUDA_VISIBLE_DEVICES lists, in its order; NVML counts them all.
  std::string entry;
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible != nullptr && *visible) {
    std::string_view rest(visible);
    for (unsigned i = 0; !rest.empty(); ++i) {
      std::size_t comma = rest.find(',');
      if (i == index) {
        entry = std::string(rest.substr(0, comma));
        break;
      }
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
    if (entry.empty()) {
      return NotFound(fmt::format("{} is not among CUDA_VISIBLE_DEVICES={}", cuda_device, visible));
    }
  }
  void* device = nullptr;
  NvmlReturn r;
  if (!entry.empty() && (entry.starts_with("GPU-") || entry.starts_with("MIG-"))) {
    if (api_->handle_by_uuid == nullptr) return Unavailable("this NVML cannot look up UUIDs");
    r = api_->handle_by_uuid(entry.c_str(), &device);
  } else {
    const unsigned nvml_index =
        entry.empty() ? index : static_cast<unsigned>(std::strtoul(entry.c_str(), nullptr, 10));
    r = api_->handle_by_index(nvml_index, &device);
  }
  if (r != kSuccess) {
    return Unavailable(fmt::format("NVML has no device for {}: {}", cuda_device, api_->Error(r)));
  }
  return device;
}

Result<std::vector<Nvml::ProcessSample>> Nvml::ProcessUtilization(Device device,
                                                                  std::uint64_t since_us) const {
  std::vector<NvmlProcessUtilizationSample> raw(64);
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned int count = static_cast<unsigned int>(raw.size());
    NvmlReturn r = api_->process_utilization(device, raw.data(), &count, since_us);
    if (r == kErrorNotFound) return std::vector<ProcessSample>{};
    if (r == kErrorInsufficientSize) {
      raw.resize(static_cast<std::size_t>(count) + 64);
      continue;
    }
    if (r != kSuccess) return Unavailable("nvmlDeviceGetProcessUtilization: " + api_->Error(r));
    std::vector<ProcessSample> out;
    for (unsigned int i = 0; i < count && i < raw.size(); ++i) {
      out.push_back(ProcessSample{static_cast<pid_t>(raw[i].pid), raw[i].timeStamp,
                                  raw[i].smUtil, raw[i].memUtil});
    }
    return out;
  }
  return Unavailable("nvmlDeviceGetProcessUtilization: the sample count kept growing");
}

}  // namespace kforge
