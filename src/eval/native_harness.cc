#include "native_harness.h"

namespace kforge {

std::optional<NativeHarness> NativeHarnessOf(const Backend& backend) {
  const std::string stream(StreamHandleName(backend.traits().stream));
  switch (backend.target().model) {
    case ProgrammingModel::kCpp:
      return NativeHarness{"cpu", stream, "cpu", "cpu"};
    case ProgrammingModel::kCuda:
      return NativeHarness{"cuda", stream, "cold", "host"};
    case ProgrammingModel::kHip:
      return NativeHarness{"hip", stream, "cold", "host"};
    case ProgrammingModel::kSycl:
      return NativeHarness{"sycl", stream, "warm", "host"};
    default:
      return std::nullopt;
  }
}

}  // namespace kforge
