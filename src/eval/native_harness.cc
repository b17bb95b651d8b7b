#include "native_harness.h"

namespace kforge {

std::optional<NativeHarness> NativeHarnessOf(const Backend& backend) {
  switch (backend.target().model) {
    case ProgrammingModel::kCpp:
      return NativeHarness{"cpu", "none", "cpu", "cpu"};
    case ProgrammingModel::kCuda:
      return NativeHarness{"cuda", "cuda-stream", "cold", "host"};
    case ProgrammingModel::kHip:
      return NativeHarness{"hip", "hip-stream", "cold", "host"};
    case ProgrammingModel::kSycl:
      return NativeHarness{"sycl", "sycl-queue", "warm", "host"};
    default:
      return std::nullopt;
  }
}

}  // namespace kforge
