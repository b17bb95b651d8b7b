// Which kforge-harness adapter runs a backend's native candidates, and how they are timed
// (runner/HARNESS.md `load`, `sample`). The stream handle the candidate gets is the backend's
// own (`Backend::traits().stream`). Internal to src/eval.
#ifndef KFORGE_SRC_EVAL_NATIVE_HARNESS_H_
#define KFORGE_SRC_EVAL_NATIVE_HARNESS_H_

#include <optional>
#include <string>

#include "kforge/target/backend.h"

namespace kforge {

struct NativeHarness {
  std::string adapter;        // cpu, cuda, hip, sycl: kforge-harness-<adapter>
  std::string stream_handle;  // StreamHandleName(backend.traits().stream)
  std::string sample_mode;    // the headline timing mode: cpu, cold, warm
  std::string check_mode;     // the clock check's mode: cpu, host
};

// The harness of `backend`'s native candidates; nullopt for backends without native candidates
// (opencl, triton, cute, metal), whose candidates the Python runner loads.
std::optional<NativeHarness> NativeHarnessOf(const Backend& backend);

}  // namespace kforge

#endif  // KFORGE_SRC_EVAL_NATIVE_HARNESS_H_
