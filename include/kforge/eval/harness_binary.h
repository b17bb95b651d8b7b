// Where kforge-harness binaries are (harness/README.md): kforge-harness-<adapter> for the
// adapters cpu, cuda, hip, sycl, looked for in $KFORGE_HARNESS_DIR, then beside the running
// executable, then in the build tree KForge was built in.
#ifndef KFORGE_EVAL_HARNESS_BINARY_H_
#define KFORGE_EVAL_HARNESS_BINARY_H_

#include <filesystem>
#include <string_view>

#include "kforge/core/error.h"

namespace kforge {

// The binary of `adapter`, or kUnavailable naming where it was looked for and how to build it.
Result<std::filesystem::path> HarnessBinary(std::string_view adapter);

}  // namespace kforge

#endif  // KFORGE_EVAL_HARNESS_BINARY_H_
