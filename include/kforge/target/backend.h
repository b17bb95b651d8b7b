// Backend: everything KForge knows about one programming model on one target — which files a
// candidate has, whether the toolchain and device are present here, how native sources are
// compiled, and how the runner loads the result.
//
// A backend file (src/target/backends/<model>.cc) exports one factory, NewXxxBackend(const Target&),
// and keeps its class in an anonymous namespace; NewBackend() dispatches on Target::model. Adding a
// programming model is one backend file, one template folder and one line in NewBackend().
//
// Thread-safety: all methods are const and safe to call from any thread.
#ifndef KFORGE_TARGET_BACKEND_H_
#define KFORGE_TARGET_BACKEND_H_

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/target/target.h"

namespace kforge {

// How the runner loads a candidate (runner/PROTOCOL.md, "Candidate kinds").
enum class CandidateKind {
  kNative,  // compiled here into a shared object exporting kforge_forward
  kOpenCl,  // Python file with SOURCE and launch(); built by the device's OpenCL runtime
  kModule,  // Python file with ModelNew (Triton, CuTe DSL, KernelBench load_inline submissions)
};
std::string_view CandidateKindName(CandidateKind kind);

// Whether a target can be used here, and if not, exactly what is missing.
struct Availability {
  bool toolchain = false;             // compiler / DSL importable
  bool device = false;                // a device to run on
  std::vector<std::string> missing;   // one line each: what is absent and how to get it
  std::string toolchain_version;      // e.g. "nvcc 13.0.48"; part of the compile cache key
  bool usable() const { return toolchain && device; }
};

// A compiler invocation that turns one source file into a shared object. argv[0] is an absolute
// path; the compile cache keys on the argv, the compiler binary's identity and the source.
struct CompileCommand {
  std::vector<std::string> argv;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual const Target& target() const = 0;

  // File endings of this backend's own candidates, e.g. {".cu"}; ".py" files of native backends
  // are KernelBench-style ModelNew submissions (compatibility mode).
  virtual std::vector<std::string> CandidateExtensions() const = 0;

  // How the runner loads `candidate`, or an error naming the file and the endings expected.
  Result<CandidateKind> KindOf(const std::filesystem::path& candidate) const;

  // Probes this machine: toolchain, device, versions. Cost: up to a few seconds (it may start
  // the runner's Python to look for torch, triton or pyopencl); callers cache the answer.
  virtual Availability Probe() const = 0;

  // For native candidates: the command compiling `source` into the shared object `output`.
  // `abi_include_dir` holds kforge_kernel.h.
  virtual Result<CompileCommand> NativeCompile(const std::filesystem::path& source,
                                               const std::filesystem::path& output,
                                               const std::filesystem::path& abi_include_dir) const;

  // Device string for the runner's torch: "cpu", "cuda:0", "xpu:0", "mps".
  virtual std::string RunnerDevice() const = 0;

  // Backend name in the runner job ("cuda", "cpp", "opencl", "triton", ...).
  std::string RunnerBackendName() const {
    return std::string(ProgrammingModelName(target().model));
  }

  // OpenCL only: the substring that names the platform to use ("Portable Computing Language").
  virtual std::string OpenClPlatform() const { return {}; }

  // True when the candidate runs on an accelerator (no address-space limit: drivers reserve
  // large virtual ranges).
  virtual bool UsesAccelerator() const { return target().vendor != Vendor::kCpu; }
};

// The backend for `target.model`.
std::unique_ptr<Backend> NewBackend(const Target& target);

// Ok when `backend` can run candidates on this machine (Probe()), else kUnavailable with one
// line naming the target and each missing piece: the one check of every command that runs
// candidates (eval, run, bench, calibrate, profile, e2e), so that each says the same thing.
Status CheckRunsHere(const Backend& backend);

std::unique_ptr<Backend> NewCudaBackend(const Target& target);
std::unique_ptr<Backend> NewTritonBackend(const Target& target);
std::unique_ptr<Backend> NewCuteBackend(const Target& target);
std::unique_ptr<Backend> NewHipBackend(const Target& target);
std::unique_ptr<Backend> NewSyclBackend(const Target& target);
std::unique_ptr<Backend> NewMetalBackend(const Target& target);
std::unique_ptr<Backend> NewOpenClBackend(const Target& target);
std::unique_ptr<Backend> NewCppBackend(const Target& target);

}  // namespace kforge

#endif  // KFORGE_TARGET_BACKEND_H_
