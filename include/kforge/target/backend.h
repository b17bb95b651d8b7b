// Backend: the one home of everything KForge knows about one programming model on one target —
// what a candidate is (its file, fence, kind and the model's title in prompts), whether KernelBench
// ModelNew submissions are accepted, which stream or queue the kernel receives, where its
// conventions and one-shot example live, which profilers can look at it, which static guardrail
// rules read it, whether the toolchain and device are present here, how native sources are
// compiled, and how the runner loads the result.
//
// prompt/, eval/, profile/, cli/ and the runner ask the backend (the runner through the job it is
// handed: kind, stream handle, backend name); none of them switches on the programming model.
//
// A backend file (src/target/backends/<model>.cc) exports one factory, NewXxxBackend(const
// Target&), and keeps its class in an anonymous namespace; NewBackend() dispatches through the
// registry in src/target/registry.cc. Adding a programming model is one ProgrammingModel value, one
// backend file, one registry line, one template folder (templates/examples/<model>/: conventions
// and the one-shot example) and, only for a new kind of candidate, one runner adapter.
//
// Thread-safety: all methods are const and safe to call from any thread.
#ifndef KFORGE_TARGET_BACKEND_H_
#define KFORGE_TARGET_BACKEND_H_

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/env.h"
#include "kforge/core/error.h"
#include "kforge/target/target.h"

namespace kforge {

// How the runner loads a candidate (runner/PROTOCOL.md, "Candidate kinds"): each kind is one
// runner adapter.
enum class CandidateKind {
  kNative,  // compiled here into a shared object exporting kforge_forward
  kOpenCl,  // Python file with SOURCE and launch(); built by the device's OpenCL runtime
  kModule,  // Python file with ModelNew (Triton, CuTe DSL, KernelBench load_inline submissions)
};
std::string_view CandidateKindName(CandidateKind kind);

// What a native candidate's kforge_forward receives as its `stream` argument (the kernel ABI,
// runner/kforge_runner/abi/kforge_kernel.h). Named in the runner job as "stream_handle".
enum class StreamHandle {
  kNone,        // NULL: the kernel runs on the host, or the model has no stream argument
  kCudaStream,  // the current cudaStream_t of the device
  kHipStream,   // the current hipStream_t of the device
  kSyclQueue,   // a sycl::queue* of the device's current stream
};
std::string_view StreamHandleName(
    StreamHandle handle);  // "none", "cuda-stream", "hip-stream", "sycl-queue"

// The one file a generated candidate consists of (runner/PROTOCOL.md, "Candidate kinds"). The
// prompts ask for exactly this file and the answer parser accepts exactly this format.
struct CandidateFormat {
  ProgrammingModel model = ProgrammingModel::kCpp;
  CandidateKind kind = CandidateKind::kNative;
  std::string file_name;                     // the name the prompt asks for: "kernel.cu"
  std::string fence_language;                // the tag the prompt asks for: "cuda"
  std::vector<std::string> extensions;       // endings a named block may carry: {".cu"}
  std::vector<std::string> fence_languages;  // tags accepted on a block, lower case
  std::string requirement;                   // what the file must define, one line for a person
};

// What the static guardrails (eval/guardrails.h) need to know of a programming model's dialect;
// the rules themselves live in eval and read these facts, so a model that brings no new concept
// needs no guardrail code.
struct StaticRuleSet {
  // Python modules whose decorators make a function a device kernel (`@triton.jit`,
  // `@cute.kernel`, `@helion.kernel`): inside one, tensor methods and operators are the DSL's,
  // not PyTorch's. KernelBench submissions may use Triton, so every model lists these three.
  std::vector<std::string> kernel_decorator_modules = {"triton", "cutlass", "cute"};
  // Inside such a kernel, only the bodies of loops over these iterables run on the device
  // (Helion: `for tile in hl.tile(...)`); elsewhere in the kernel is host code, where PyTorch
  // compute is the reference framework's. Empty: the whole kernel runs on the device.
  std::vector<std::string> device_loop_iterables;
  // Calls that compute fp32 matrix products in TF32 unless given `input_precision` or
  // `allow_tf32` (Triton: triton.language.dot); flagged under the strict policy.
  std::vector<std::string> implicit_tf32_calls;
};

// What a programming model is, stated once by its backend file.
struct ModelTraits {
  std::string title;       // the model's name in prompts: "CUDA C++"
  CandidateFormat format;  // the file a candidate of this model is
  // A `.py` file with a KernelBench ModelNew (load_inline) is accepted as a module candidate and
  // judged in compatibility mode (KernelBench's tolerance, reference ops allowed). Set by native
  // models only (a module model's own candidates are `.py` files).
  bool kernelbench_compat = false;
  StreamHandle stream = StreamHandle::kNone;
  // The template folder, templates/examples/<templates>/: conventions.mustache (what a candidate
  // of this model is, for the prompt) and the one-shot example (format.file_name).
  std::string templates;
  // Profile tools (profile::ToolName) that can look at this model's candidates, the default first
  // among those installed: "ncu", "torch", "nsys", "opencl".
  std::vector<std::string> profilers;
  StaticRuleSet static_rules;
};

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

  // What this programming model is (title, candidate format, stream handle, templates,
  // profilers, guardrail rules). Constant for the backend's lifetime.
  virtual const ModelTraits& traits() const = 0;

  const CandidateFormat& format() const { return traits().format; }

  // File endings of this backend's own candidates, e.g. {".cu"}; ".py" files of models with
  // kernelbench_compat are KernelBench-style ModelNew submissions (compatibility mode).
  std::vector<std::string> CandidateExtensions() const { return format().extensions; }

  // How the runner loads `candidate`, or an error naming the file and the endings expected.
  Result<CandidateKind> KindOf(const std::filesystem::path& candidate) const;

  // Whether a candidate of `kind` is a KernelBench compatibility-mode submission here.
  bool IsKernelBenchCompat(CandidateKind kind) const {
    return traits().kernelbench_compat && kind == CandidateKind::kModule;
  }

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

  // Backend name in the runner job ("cuda", "cpp", "opencl", "triton", ...): for the runner's
  // messages and the verdict; the runner chooses its adapter by the job's kind.
  std::string RunnerBackendName() const {
    return std::string(ProgrammingModelName(target().model));
  }

  // OpenCL only: the substring that names the platform to use ("Portable Computing Language").
  virtual std::string OpenClPlatform() const { return {}; }

  // True when the candidate runs on an accelerator (no address-space limit: drivers reserve
  // large virtual ranges).
  virtual bool UsesAccelerator() const { return target().vendor != Vendor::kCpu; }
};

// The backend for `target.model` (through the registry). It asks `env` about the machine (its
// compilers, devices, environment variables); `env` must outlive it.
std::unique_ptr<Backend> NewBackend(const Target& target, const Env& env = Env::Default());

// Ok when `backend` can run candidates on this machine (Probe()), else kUnavailable with one
// line naming the target and each missing piece: the one check of every command that runs
// candidates (eval, run, bench, calibrate, profile, e2e), so that each says the same thing.
Status CheckRunsHere(const Backend& backend);

// The traits of `model`'s backend on the first vendor that supports it (traits do not depend on
// the vendor, except profilers). Every ProgrammingModel has them.
const ModelTraits& TraitsOf(ProgrammingModel model);

// The candidate format of `model` (TraitsOf(model).format).
const CandidateFormat& CandidateFormatOf(ProgrammingModel model);

std::unique_ptr<Backend> NewCudaBackend(const Target& target, const Env& env);
std::unique_ptr<Backend> NewTritonBackend(const Target& target, const Env& env);
std::unique_ptr<Backend> NewCuteBackend(const Target& target, const Env& env);
std::unique_ptr<Backend> NewHipBackend(const Target& target, const Env& env);
std::unique_ptr<Backend> NewSyclBackend(const Target& target, const Env& env);
std::unique_ptr<Backend> NewMetalBackend(const Target& target, const Env& env);
std::unique_ptr<Backend> NewOpenClBackend(const Target& target, const Env& env);
std::unique_ptr<Backend> NewCppBackend(const Target& target, const Env& env);
std::unique_ptr<Backend> NewHelionBackend(const Target& target, const Env& env);

}  // namespace kforge

#endif  // KFORGE_TARGET_BACKEND_H_
