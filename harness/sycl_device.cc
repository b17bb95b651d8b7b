// The sycl adapter (Intel GPUs, or any SYCL device): one in-order, profiling queue of the
// harness's own; the candidate gets a `sycl::queue*` to it (stream_handle sycl-queue), never
// NULL. Device memory is USM device memory. Modes: `warm` (the queue's profiling events around
// the call: from the first command the call submitted to the last; the harness submits a
// marker before and after it), `cold` (twice the device's cache size read by a kernel first,
// then as `warm`), `host` (the queue waited for, host clock, waited for again). No graphs.
// Built only where a SYCL compiler (icpx, acpp) exists; not compiled on machines without one.
#include <time.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <sycl/sycl.hpp>

#include "device.h"

namespace kforge_harness {
namespace {

double HostNow() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

class SyclDevice : public Device {
 public:
  std::string kind() const override { return "sycl"; }

  bool Init(const std::string& device, Failure* failure) override {
    try {
      const auto devices = sycl::device::get_devices();
      int index = 0;
      const auto colon = device.find(':');
      if (colon != std::string::npos) index = std::stoi(device.substr(colon + 1));
      if (devices.empty() || index < 0 || index >= static_cast<int>(devices.size())) {
        *failure = {"infra_error", "no SYCL device " + device};
        return false;
      }
      queue_ = std::make_unique<sycl::queue>(
          devices[static_cast<std::size_t>(index)],
          sycl::property_list{sycl::property::queue::in_order(),
                              sycl::property::queue::enable_profiling()});
      name_ = queue_->get_device().get_info<sycl::info::device::name>();
      cache_bytes_ = std::max<std::size_t>(
          queue_->get_device().get_info<sycl::info::device::global_mem_cache_size>(), 8u << 20);
      flush_bytes_ = 2 * cache_bytes_;
      flush_ = sycl::malloc_device<int>(flush_bytes_ / sizeof(int), *queue_);
      sink_ = sycl::malloc_device<int>(1, *queue_);
      queue_->memset(flush_, 1, flush_bytes_).wait();
      return true;
    } catch (const sycl::exception& e) {
      *failure = {"infra_error", std::string("SYCL: ") + e.what()};
      return false;
    }
  }

  std::string EnvironmentJson() const override {
    std::string name;
    for (char c : name_) {
      if (c != '"' && c != '\\') name += c;
    }
    return "{\"device_name\": \"" + name + "\", \"cache_bytes\": " + std::to_string(cache_bytes_) +
           "}";
  }

  void* Alloc(std::size_t bytes) override {
    try {
      return sycl::malloc_device(bytes, *queue_);
    } catch (const sycl::exception&) {
      return nullptr;
    }
  }
  void Free(void* p) override { sycl::free(p, *queue_); }
  bool CopyToDevice(void* dst, const void* src, std::size_t n, Failure* f) override {
    return Run([&] { queue_->memcpy(dst, src, n).wait(); }, "copy to device", f);
  }
  bool CopyToHost(void* dst, const void* src, std::size_t n, Failure* f) override {
    return Run([&] { queue_->memcpy(dst, src, n).wait(); }, "copy to host", f);
  }
  bool CopyOnDevice(void* dst, const void* src, std::size_t n, Failure* f) override {
    return Run([&] { queue_->memcpy(dst, src, n); }, "copy on device", f);
  }
  bool Fill(void* dst, std::uint8_t byte, std::size_t n, Failure* f) override {
    return Run([&] { queue_->memset(dst, byte, n); }, "poisoning a buffer", f);
  }
  bool Synchronize(Failure* f) override {
    return Run([&] { queue_->wait_and_throw(); }, "the device after the call", f);
  }

  bool StreamHandle(const std::string& kind, void** handle, Failure* failure) override {
    if (kind == "sycl-queue") {
      *handle = queue_.get();
      return true;
    }
    *failure = {"infra_error",
                "the sycl harness provides stream_handle sycl-queue, not '" + kind + "'"};
    return false;
  }

  bool TimeCall(const std::string& mode, double, const CallFn& call, SampleTime* sample,
                Failure* failure) override {
    int status = 0;
    if (mode == "host" || mode == "cpu") {
      if (!Synchronize(failure)) return false;
      const double t0 = HostNow();
      status = call();
      if (!Synchronize(failure)) return false;
      sample->seconds = HostNow() - t0;
      return Returned(status, failure);
    }
    if (mode != "cold" && mode != "warm") {
      *failure = {"infra_error", "unknown timing mode " + mode};
      return false;
    }
    const bool ok = Run(
        [&] {
          queue_->wait_and_throw();
          if (mode == "cold") {
            const std::size_t n = flush_bytes_ / sizeof(int);
            int* flush = flush_;
            int* sink = sink_;
            queue_->parallel_for(sycl::range<1>(n), [=](sycl::id<1> i) {
              if (flush[i] == 0x7F3A9C1D) *sink = flush[i];
            });
          }
          sycl::event start = queue_->ext_oneapi_submit_barrier();
          const double enqueue_start = HostNow();
          status = call();
          sample->enqueue_s = HostNow() - enqueue_start;
          sycl::event end = queue_->ext_oneapi_submit_barrier();
          end.wait_and_throw();
          const auto t0 = start.get_profiling_info<sycl::info::event_profiling::command_end>();
          const auto t1 = end.get_profiling_info<sycl::info::event_profiling::command_end>();
          sample->seconds = static_cast<double>(t1 - t0) * 1e-9;
        },
        "timing the call", failure);
    return ok && Returned(status, failure);
  }

  bool GraphPerCall(int, const CallFn&, double*, Failure* failure) override {
    *failure = {"runtime_error", "no CUDA graphs on a SYCL device"};
    return false;
  }

 private:
  template <typename F>
  static bool Run(F&& f, const char* what, Failure* failure) {
    try {
      f();
      return true;
    } catch (const sycl::exception& e) {
      *failure = {"runtime_error", std::string(what) + ": " + e.what()};
      return false;
    }
  }
  static bool Returned(int status, Failure* failure) {
    if (status == 0) return true;
    *failure = {"runtime_error", "kforge_forward returned " + std::to_string(status)};
    return false;
  }

  std::unique_ptr<sycl::queue> queue_;
  std::string name_;
  std::size_t cache_bytes_ = 0;
  std::size_t flush_bytes_ = 0;
  int* flush_ = nullptr;
  int* sink_ = nullptr;
};

}  // namespace

std::unique_ptr<Device> NewDevice() { return std::make_unique<SyclDevice>(); }

}  // namespace kforge_harness
