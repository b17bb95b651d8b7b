// The cpu adapter: host memory is device memory, the host clock is the device clock.
#include <time.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "device.h"

namespace kforge_harness {
namespace {

double Now() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

std::string CpuName() {
  std::ifstream info("/proc/cpuinfo");
  std::string line;
  while (std::getline(info, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "cpu";
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

class CpuDevice : public Device {
 public:
  std::string kind() const override { return "cpu"; }
  bool Init(const std::string& device, Failure* failure) override {
    if (device != "cpu") {
      *failure = {"infra_error", "the cpu harness runs on device cpu, not " + device};
      return false;
    }
    return true;
  }
  std::string EnvironmentJson() const override {
    return "{\"device_name\": \"cpu\", \"cpu\": \"" + Escape(CpuName()) + "\"}";
  }
  void* Alloc(std::size_t bytes) override {
    // 64-byte aligned like the arena; at least one byte so that every tensor has an address.
    return std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
  }
  void Free(void* p) override { std::free(p); }
  bool CopyToDevice(void* dst, const void* src, std::size_t n, Failure*) override {
    std::memcpy(dst, src, n);
    return true;
  }
  bool CopyToHost(void* dst, const void* src, std::size_t n, Failure*) override {
    std::memcpy(dst, src, n);
    return true;
  }
  bool CopyOnDevice(void* dst, const void* src, std::size_t n, Failure*) override {
    std::memcpy(dst, src, n);
    return true;
  }
  bool Fill(void* dst, std::uint8_t byte, std::size_t n, Failure*) override {
    std::memset(dst, byte, n);
    return true;
  }
  bool Synchronize(Failure*) override { return true; }
  bool StreamHandle(const std::string& kind, void** handle, Failure* failure) override {
    if (kind == "none" || kind.empty()) {
      *handle = nullptr;
      return true;
    }
    *failure = {"infra_error", "the cpu harness has no stream of kind '" + kind +
                                   "' (cpu candidates get stream_handle none: NULL)"};
    return false;
  }
  bool TimeCall(const std::string& mode, double, const CallFn& call, SampleTime* sample,
                Failure* failure) override {
    if (mode != "cpu" && mode != "host") {
      *failure = {"infra_error", "the cpu harness times in mode cpu, not " + mode};
      return false;
    }
    const double start = Now();
    const int status = call();
    sample->seconds = Now() - start;
    if (status != 0) {
      *failure = {"runtime_error", "kforge_forward returned " + std::to_string(status)};
      return false;
    }
    return true;
  }
  bool GraphPerCall(int, const CallFn&, double*, Failure* failure) override {
    *failure = {"runtime_error", "no CUDA graphs on device cpu"};
    return false;
  }
};

}  // namespace

std::unique_ptr<Device> NewDevice() { return std::make_unique<CpuDevice>(); }

}  // namespace kforge_harness
