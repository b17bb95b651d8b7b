// The device adapter of kforge-harness: one per backend (cpu, cuda, hip, sycl), behind one
// interface, so that the portable core (channel, arena, commands, the kernel ABI) never names a
// vendor API. An adapter owns the device context, its memory, its stream or queue, and the
// timing protocol of its device (runner/HARNESS.md, `sample` modes).
#ifndef KFORGE_HARNESS_DEVICE_H_
#define KFORGE_HARNESS_DEVICE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace kforge_harness {

// What the harness tells the parent when something fails: a verdict status and diagnostics.
struct Failure {
  std::string status;       // runtime_error, out_of_memory, compile_error, ...
  std::string diagnostics;  // one or a few lines
};

// One timed sample as the child measured it (a claim the parent checks).
struct SampleTime {
  double seconds = 0;
  double enqueue_s = 0;
  int sm_mhz = 0;
};

// The call being timed: returns kforge_forward's status (0: success).
using CallFn = std::function<int()>;

class Device {
 public:
  virtual ~Device() = default;

  // The adapter's name: "cpu", "cuda", "hip", "sycl".
  virtual std::string kind() const = 0;
  // Creates the context for `device` ("cpu", "cuda:1"); false with `failure` set otherwise.
  virtual bool Init(const std::string& device, Failure* failure) = 0;
  // JSON object text describing the device (name, driver, memory, clocks).
  virtual std::string EnvironmentJson() const = 0;

  // Device memory; nullptr when exhausted.
  virtual void* Alloc(std::size_t bytes) = 0;
  virtual void Free(void* p) = 0;
  virtual bool CopyToDevice(void* dst, const void* src, std::size_t bytes, Failure* f) = 0;
  virtual bool CopyToHost(void* dst, const void* src, std::size_t bytes, Failure* f) = 0;
  virtual bool CopyOnDevice(void* dst, const void* src, std::size_t bytes, Failure* f) = 0;
  virtual bool Fill(void* dst, std::uint8_t byte, std::size_t bytes, Failure* f) = 0;
  // Waits for all work the process queued on the device (every stream); reports device errors
  // the candidate's work left (an illegal address, ...).
  virtual bool Synchronize(Failure* f) = 0;

  // The handle the candidate gets as `stream` for `kind` (runner/HARNESS.md `stream_handle`):
  // false with `failure` set when this adapter cannot provide that kind. "none" is NULL.
  virtual bool StreamHandle(const std::string& kind, void** handle, Failure* failure) = 0;

  // One sample of `call` in `mode` (cold, warm, host, cpu); false with `failure` set on an
  // unknown mode or a failed call. `spin_s` > 0 sets the cold spin length.
  virtual bool TimeCall(const std::string& mode, double spin_s, const CallFn& call,
                        SampleTime* sample, Failure* failure) = 0;
  // Opens (start) or closes the range an external profiler captures (cudaProfilerStart/Stop:
  // `ncu --profile-from-start off` sees only what runs inside); a no-op where there is none.
  virtual bool ProfileRange(bool /*start*/, Failure* /*failure*/) { return true; }

  // `calls` back-to-back calls captured in one graph, replayed: seconds per call.
  virtual bool GraphPerCall(int calls, const CallFn& call, double* seconds_per_call,
                            Failure* failure) = 0;
};

// The adapter this binary was built with.
std::unique_ptr<Device> NewDevice();

}  // namespace kforge_harness

#endif  // KFORGE_HARNESS_DEVICE_H_
