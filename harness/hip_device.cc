// The hip adapter (AMD GPUs): the cuda adapter's protocol through HIP (compile-checked with
// Debian's hipcc where no AMD GPU is; runs where one is). Differences: no persisting-L2 reset and
// no NVML (the SM clock reads 0, so no sample is discarded as throttled); the device string is
// torch's ("cuda:N" names HIP devices too).
#include <hip/hip_runtime.h>
#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "device.h"

namespace kforge_harness {
namespace {

constexpr double kMinSpinS = 50e-6;
constexpr double kMaxSpinS = 20e-3;

__global__ void SpinKernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void ReadKernel(const int4* data, std::size_t n, int* sink) {
  int acc = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const int4 v = data[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7F3A9C1D) *sink = acc;  // keeps the reads; practically never true
}

double HostNow() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

// The SM clock through NVML, loaded at run time (absent NVML: clocks read 0).
class Nvml {
 public:
  bool Open(const char* pci_bus_id) {
    lib_ = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) return false;
    auto init = reinterpret_cast<int (*)()>(::dlsym(lib_, "nvmlInit_v2"));
    auto by_bus = reinterpret_cast<int (*)(const char*, void**)>(
        ::dlsym(lib_, "nvmlDeviceGetHandleByPciBusId_v2"));
    clock_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(::dlsym(lib_, "nvmlDeviceGetClockInfo"));
    auto max_clock = reinterpret_cast<int (*)(void*, int, unsigned*)>(
        ::dlsym(lib_, "nvmlDeviceGetMaxClockInfo"));
    if (init == nullptr || by_bus == nullptr || clock_ == nullptr || init() != 0 ||
        by_bus(pci_bus_id, &handle_) != 0) {
      handle_ = nullptr;
      return false;
    }
    unsigned mhz = 0;
    if (max_clock != nullptr && max_clock(handle_, kSmClock, &mhz) == 0) max_sm_mhz_ = static_cast<int>(mhz);
    return true;
  }
  int SmMhz() const {
    unsigned mhz = 0;
    if (handle_ == nullptr || clock_(handle_, kSmClock, &mhz) != 0) return 0;
    return static_cast<int>(mhz);
  }
  int max_sm_mhz() const { return max_sm_mhz_; }

 private:
  static constexpr int kSmClock = 1;  // NVML_CLOCK_SM
  void* lib_ = nullptr;
  void* handle_ = nullptr;
  int (*clock_)(void*, int, unsigned*) = nullptr;
  int max_sm_mhz_ = 0;
};

class HipDevice : public Device {
 public:
  std::string kind() const override { return "hip"; }

  bool Init(const std::string& device, Failure* failure) override {
    int index = 0;
    if (device.rfind("cuda", 0) != 0 ||
        (device.size() > 4 && (device[4] != ':' || std::sscanf(device.c_str() + 5, "%d", &index) != 1))) {
      *failure = {"infra_error", "the hip harness runs on cuda:N (torch's name for a HIP device), not " + device};
      return false;
    }
    index_ = index;
    if (!Check(hipSetDevice(index), "hipSetDevice", failure) ||
        !Check(hipFree(nullptr), "creating the device context", failure) ||
        !Check(hipStreamCreateWithFlags(&stream_, hipStreamNonBlocking), "hipStreamCreate", failure) ||
        !Check(hipEventCreate(&start_), "hipEventCreate", failure) ||
        !Check(hipEventCreate(&end_), "hipEventCreate", failure)) {
      return false;
    }
    hipDeviceProp_t props{};
    (void)hipGetDeviceProperties(&props, index);
    name_ = props.name;
    sm_count_ = props.multiProcessorCount;
    l2_bytes_ = props.l2CacheSize > 0 ? static_cast<std::size_t>(props.l2CacheSize) : (50u << 20);
    int khz = 0;
    (void)hipDeviceGetAttribute(&khz, hipDeviceAttributeClockRate, index);
    char bus[64] = {};
    (void)hipDeviceGetPCIBusId(bus, sizeof(bus), index);
    bus_id_ = bus;
    (void)bus;  // NVML is NVIDIA's: the SM clock reads 0 here
    const int mhz = nvml_.max_sm_mhz() > 0 ? nvml_.max_sm_mhz() : khz / 1000;
    cycles_per_s_ = (mhz > 0 ? mhz : 1500) * 1e6;
    flush_bytes_ = 2 * l2_bytes_;
    if (!Check(hipMalloc(&flush_, flush_bytes_), "the L2 flush buffer", failure) ||
        !Check(hipMemset(flush_, 1, flush_bytes_), "the L2 flush buffer", failure) ||
        !Check(hipMalloc(&sink_, sizeof(int)), "the flush sink", failure)) {
      return false;
    }
    persisting_reset_ = false;  // HIP has no persisting-L2 state to reset
    return true;
  }

  std::string EnvironmentJson() const override {
    int driver = 0, runtime = 0;
    (void)hipDriverGetVersion(&driver);
    (void)hipRuntimeGetVersion(&runtime);
    char buf[1024];
    std::snprintf(buf, sizeof(buf),
                  "{\"device_name\": \"%s\", \"hip_driver\": %d, \"hip_runtime\": %d, "
                  "\"sm_count\": %d, \"l2_bytes\": %zu, \"max_sm_mhz\": %d, \"pci_bus_id\": \"%s\", "
                  "\"persisting_l2_reset\": %s, \"flush_bytes\": %zu}",
                  Escape(name_).c_str(), driver, runtime, sm_count_, l2_bytes_,
                  nvml_.max_sm_mhz(), bus_id_.c_str(), persisting_reset_ ? "true" : "false",
                  flush_bytes_);
    return buf;
  }

  void* Alloc(std::size_t bytes) override {
    void* p = nullptr;
    if (hipMalloc(&p, bytes) != hipSuccess) {
      (void)hipGetLastError();
      return nullptr;
    }
    return p;
  }
  void Free(void* p) override { (void)hipFree(p); }
  bool CopyToDevice(void* dst, const void* src, std::size_t n, Failure* f) override {
    return Check(hipMemcpyAsync(dst, src, n, hipMemcpyHostToDevice, stream_), "copy to device", f) &&
           Check(hipStreamSynchronize(stream_), "copy to device", f);
  }
  bool CopyToHost(void* dst, const void* src, std::size_t n, Failure* f) override {
    return Check(hipMemcpyAsync(dst, src, n, hipMemcpyDeviceToHost, stream_), "copy to host", f) &&
           Check(hipStreamSynchronize(stream_), "copy to host", f);
  }
  bool CopyOnDevice(void* dst, const void* src, std::size_t n, Failure* f) override {
    return Check(hipMemcpyAsync(dst, src, n, hipMemcpyDeviceToDevice, stream_), "copy on device", f);
  }
  bool Fill(void* dst, std::uint8_t byte, std::size_t n, Failure* f) override {
    return Check(hipMemsetAsync(dst, byte, n, stream_), "poisoning a buffer", f);
  }
  bool Synchronize(Failure* f) override {
    return Check(hipDeviceSynchronize(), "the device after the call", f) &&
           Check(hipGetLastError(), "the device after the call", f);
  }

  bool StreamHandle(const std::string& kind, void** handle, Failure* failure) override {
    if (kind == "hip-stream") {
      *handle = stream_;
      return true;
    }
    *failure = {"infra_error", "the hip harness provides stream_handle hip-stream, not '" + kind + "'"};
    return false;
  }

  bool TimeCall(const std::string& mode, double spin_s, const CallFn& call, SampleTime* sample,
                Failure* failure) override {
    if (mode == "host" || mode == "cpu") {
      if (!Synchronize(failure)) return false;
      const double t0 = HostNow();
      const int status = call();
      if (!Synchronize(failure)) return false;
      sample->seconds = HostNow() - t0;
      return Returned(status, failure);
    }
    if (mode != "cold" && mode != "warm") {
      *failure = {"infra_error", "unknown timing mode " + mode};
      return false;
    }
    if (!Synchronize(failure)) return false;
    const bool cold = mode == "cold";
    if (cold) {
      ReadKernel<<<sm_count_ * 4, 512, 0, stream_>>>(static_cast<const int4*>(flush_),
                                                    flush_bytes_ / sizeof(int4), sink_);
      const double spin = spin_s > 0 ? std::min(kMaxSpinS, spin_s) : kMinSpinS;
      SpinKernel<<<1, 1, 0, stream_>>>(static_cast<long long>(spin * cycles_per_s_));
    }
    (void)hipEventRecord(start_, stream_);
    const double enqueue_start = HostNow();
    const int status = call();
    const double enqueue = HostNow() - enqueue_start;
    (void)hipEventRecord(end_, stream_);
    if (!Synchronize(failure)) return false;
    float ms = 0;
    if (!Check(hipEventElapsedTime(&ms, start_, end_), "the event pair", failure)) return false;
    // Raw: the event pair's own cost is in it; the parent subtracts the empty samples' median.
    sample->seconds = ms / 1e3;
    sample->enqueue_s = enqueue;
    sample->sm_mhz = nvml_.SmMhz();
    return Returned(status, failure);
  }

  bool GraphPerCall(int calls, const CallFn& call, double* seconds_per_call,
                    Failure* failure) override {
    if (!Synchronize(failure)) return false;
    // One eager call on the capture stream first (lazy module loading, workspaces), as capture
    // requires.
    if (!Returned(call(), failure) || !Synchronize(failure)) return false;
    hipGraph_t graph = nullptr;
    hipGraphExec_t exec = nullptr;
    if (!Check(hipStreamBeginCapture(stream_, hipStreamCaptureModeThreadLocal),
               "hipStreamBeginCapture", failure)) {
      return false;
    }
    int status = 0;
    for (int i = 0; i < calls && status == 0; ++i) status = call();
    const hipError_t captured = hipStreamEndCapture(stream_, &graph);
    if (status != 0) return Returned(status, failure);
    if (!Check(captured, "capturing the calls in a graph (does the kernel launch on its stream?)",
               failure) ||
        !Check(hipGraphInstantiate(&exec, graph, nullptr, nullptr, 0), "hipGraphInstantiate", failure)) {
      if (graph != nullptr) (void)hipGraphDestroy(graph);
      return false;
    }
    std::vector<double> per_call;
    bool ok = Check(hipGraphLaunch(exec, stream_), "the warm-up replay", failure) &&
              Synchronize(failure);
    for (int r = 0; ok && r < 5; ++r) {
      (void)hipEventRecord(start_, stream_);
      ok = Check(hipGraphLaunch(exec, stream_), "a graph replay", failure);
      (void)hipEventRecord(end_, stream_);
      ok = ok && Synchronize(failure);
      float ms = 0;
      ok = ok && Check(hipEventElapsedTime(&ms, start_, end_), "the event pair", failure);
      per_call.push_back(ms / 1e3 / calls);
    }
    (void)hipGraphExecDestroy(exec);
    (void)hipGraphDestroy(graph);
    if (!ok) return false;
    std::sort(per_call.begin(), per_call.end());
    *seconds_per_call = per_call[per_call.size() / 2];
    return true;
  }

 private:
  static bool Check(hipError_t e, const char* what, Failure* failure) {
    if (e == hipSuccess) return true;
    const bool oom = e == hipErrorOutOfMemory;
    *failure = {oom ? "out_of_memory" : "runtime_error",
                std::string(what) + ": " + hipGetErrorName(e) + ": " + hipGetErrorString(e)};
    return false;
  }
  static bool Returned(int status, Failure* failure) {
    if (status == 0) return true;
    *failure = {"runtime_error", "kforge_forward returned " + std::to_string(status)};
    return false;
  }

  int index_ = 0;
  hipStream_t stream_ = nullptr;
  hipEvent_t start_ = nullptr;
  hipEvent_t end_ = nullptr;
  std::string name_;
  std::string bus_id_;
  int sm_count_ = 1;
  std::size_t l2_bytes_ = 0;
  std::size_t flush_bytes_ = 0;
  void* flush_ = nullptr;
  int* sink_ = nullptr;
  bool persisting_reset_ = false;
  double cycles_per_s_ = 1.5e9;
  Nvml nvml_;
};

}  // namespace

std::unique_ptr<Device> NewDevice() { return std::make_unique<HipDevice>(); }

}  // namespace kforge_harness
