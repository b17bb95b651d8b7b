#include "c_rules.h"

#include <fmt/format.h>

#include <cstddef>
#include <set>
#include <string>
#include <string_view>

#include "precision_rule.h"
#include "reference_ops.h"
#include "token_queries.h"

namespace kforge::guardrails {

// Native code (C, C++, CUDA, HIP, SYCL, OpenCL C), or C++ embedded in a module candidate.
void CheckCRules(const std::vector<Token>& t, bool embedded_in_module, Findings& findings) {
  const GuardrailOptions& options = findings.options();
  // Mutable state that survives calls: a function-level `static` that is not const.
  bool mutable_static = false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    // (`schedule(static)` of an OpenMP pragma is no storage class.)
    if (t[i].kind == TokKind::kName && t[i].text == "static" && t[i].depth > 0 &&
        !PrevIs(t, i, "(") &&
        !(i + 1 < t.size() && (t[i + 1].text == "const" || t[i + 1].text == "constexpr" ||
                               t[i + 1].text == "__shared__" || t[i + 1].text == "__device__"))) {
      mutable_static = true;
      findings.Flag("output-cache", t[i].line, "static (inside a function)",
                    "(function-level static state survives between calls)");
    }
    if (t[i].kind == TokKind::kName &&
        (LastPart(t[i].text) == "unordered_map" || LastPart(t[i].text) == "map")) {
      mutable_static |= t[i].depth == 0;
    }
  }
  for (std::size_t i = 0; i < t.size(); ++i) {
    const Token& tok = t[i];
    const int line = tok.line;
    if (tok.kind == TokKind::kPunct) {
      // catch (...) — a catch-all around the launch.
      if (tok.text == "..." && PrevIs(t, i, "(") && i >= 2 && t[i - 2].text == "catch") {
        findings.Reject("exception-fallback", line, "catch (...)");
      }
      // Output cache: an input's data pointer compared with remembered state.
      if ((tok.text == "==" || tok.text == "!=") && mutable_static && i > 0 && i + 1 < t.size()) {
        const auto is_pointer = [](const Token& x) {
          return x.kind == TokKind::kName &&
                 (LastPart(x.text) == "data" || LastPart(x.text) == "data_ptr");
        };
        if (is_pointer(t[i - 1]) || is_pointer(t[i + 1]) ||
            (i + 2 < t.size() && is_pointer(t[i + 2]) && t[i + 1].text == "(")) {
          findings.Reject("output-cache", line, fmt::format("... {} ...data", tok.text),
                          "(a data pointer compared with state kept from an earlier call)");
        }
      }
      continue;
    }
    if (tok.kind != TokKind::kName) continue;
    const std::string& c = tok.text;
    const std::string_view leaf = LastPart(c);
    const bool call = IsCall(t, i);
    const std::string shown = call ? c + "(" : c;

    // reference-op-call: torch::/at:: operators (only reachable from load_inline code).
    if (!options.allow_reference_ops && call &&
        (StartsWith(c, "torch::") || StartsWith(c, "at::"))) {
      const std::string_view rest = std::string_view(c).substr(StartsWith(c, "at::") ? 4 : 7);
      static const std::set<std::string_view> kAllowed = {
          "empty",  "empty_like",    "empty_strided", "zeros",           "zeros_like",
          "ones",   "ones_like",     "full",          "full_like",       "from_blob",
          "tensor", "arange",        "parallel_for",  "get_num_threads", "Device",
          "device", "TensorOptions", "dtype",         "IntArrayRef",     "Scalar",
          "Tensor", "autocast",      "NoGradGuard",   "InferenceMode",   "get_num_interop_threads",
          "kCPU",   "kCUDA"};
      const bool leaf_op = rest.find("::") == std::string_view::npos && kAllowed.count(rest) == 0;
      if (leaf_op || StartsWith(rest, "nn::functional::") || StartsWith(rest, "native::") ||
          StartsWith(rest, "linalg::") || StartsWith(rest, "fft::") || StartsWith(rest, "_ops::") ||
          StartsWith(rest, "cpu::") || StartsWith(rest, "special::")) {
        findings.Reject("reference-op-call", line, shown);
      }
    }
    if (embedded_in_module && !options.allow_reference_ops && call && c[0] == '.' &&
        ComputeMethods().count(leaf) != 0) {
      findings.Reject("reference-op-call", line, shown);
    }
    if (StartsWith(c, "cublas") || StartsWith(c, "cudnn") || StartsWith(c, "hipblas") ||
        StartsWith(c, "rocblas") || StartsWith(c, "miopen")) {
      if (call)
        findings.Flag("reference-op-call", line, shown,
                      "(a vendor library computes this, not your kernel)");
    }

    // stream-creation
    if (StartsWith(c, "cudaStreamCreate") || StartsWith(c, "hipStreamCreate") ||
        StartsWith(c, "cuStreamCreate") || leaf == "getStreamFromPool" ||
        c == "cudaStreamPerThread" || c == "hipStreamPerThread" || c == "CU_STREAM_PER_THREAD" ||
        StartsWith(c, "clCreateCommandQueue")) {
      findings.Reject("stream-creation", line, shown);
    }

    // thread-creation
    static const std::set<std::string_view> kThreadTypes = {"std::thread", "std::jthread",
                                                            "std::async", "boost::thread"};
    static const std::set<std::string_view> kThreadCalls = {
        "pthread_create", "fork",           "vfork",        "clone",
        "clone3",         "posix_spawn",    "posix_spawnp", "CreateThread",
        "_beginthread",   "_beginthreadex", "thrd_create"};
    if (kThreadTypes.count(c) != 0 || (call && kThreadCalls.count(c) != 0)) {
      findings.Reject("thread-creation", line, shown);
    }

    // graph-capture
    if (StartsWith(c, "cudaGraph") || StartsWith(c, "cuGraph") || StartsWith(c, "hipGraph") ||
        c.find("BeginCapture") != std::string::npos || c.find("EndCapture") != std::string::npos ||
        leaf == "CUDAGraph") {
      findings.Reject("graph-capture", line, shown);
    }

    // timer-patch: defining (interposing) a timing or event function, or symbol interposition.
    static const std::set<std::string_view> kTimingFunctions = {
        "cudaEventElapsedTime",  "cudaEventRecord",
        "cudaEventSynchronize",  "cudaEventQuery",
        "cudaDeviceSynchronize", "cudaStreamSynchronize",
        "cuEventElapsedTime",    "hipEventElapsedTime",
        "hipEventRecord",        "clock_gettime",
        "gettimeofday",          "clGetEventProfilingInfo",
        "clWaitForEvents",       "clFinish"};
    if (kTimingFunctions.count(c) != 0 && call && i > 0 && t[i - 1].kind == TokKind::kName &&
        t[i - 1].text != "return" && t[i - 1].text != "else") {
      findings.Reject("timer-patch", line, fmt::format("a definition of {}", c),
                      "(defining it interposes the harness's own timing function)");
    }
    if (c == "RTLD_NEXT" || c == "dlsym" || c == "LD_PRELOAD") {
      findings.Reject("timer-patch", line, shown,
                      "(symbol interposition replaces functions of the harness)");
    }

    // harness-introspection
    if (c == "dl_iterate_phdr" || c == "environ" || c == "__environ" || StartsWith(c, "_dl_") ||
        c == "process_vm_readv" || c == "ptrace") {
      findings.Reject("harness-introspection", line, shown);
    }

    // inherited-descriptor
    static const std::set<std::string_view> kFdCalls = {
        "write", "read", "dup",    "dup2",   "dup3",      "fdopen", "fstat",    "lseek", "close",
        "fcntl", "send", "writev", "pwrite", "ftruncate", "fsync",  "sendfile", "ioctl"};
    if (call && kFdCalls.count(c) != 0 && i + 2 < t.size()) {
      auto fd = IntValue(t[i + 2]);
      if (fd && *fd >= 3 && *fd < 1024) {
        findings.Reject("inherited-descriptor", line, fmt::format("{}({}, ...)", c, *fd));
      }
    }

    // precision-downcast
    static const std::set<std::string_view> kHalfTypes = {
        "__half",           "__half2",      "half2",         "half4",          "half8",
        "half16",           "__nv_half",    "__nv_bfloat16", "__nv_bfloat162", "nv_bfloat16",
        "nv_bfloat162",     "__bf16",       "_Float16",      "bfloat16",       "c10::Half",
        "c10::BFloat16",    "at::Half",     "at::BFloat16",  "torch::kHalf",   "torch::kFloat16",
        "torch::kBFloat16", "at::kHalf",    "at::kBFloat16", "sycl::half",     "cl_khr_fp16",
        "__hip_bfloat16",   "hip_bfloat16", "rocblas_half"};
    const bool half_type_use =
        c == "half" && i + 1 < t.size() &&
        (t[i + 1].kind == TokKind::kName || t[i + 1].text == "*" || t[i + 1].text == "&" ||
         (t[i + 1].text == ")" && PrevIs(t, i, "(")) ||
         (t[i + 1].text == ">" && PrevIs(t, i, "<")));
    if (kHalfTypes.count(c) != 0 || kHalfTypes.count(leaf) != 0 || half_type_use ||
        StartsWith(leaf, "__float2half") || StartsWith(leaf, "__float2bfloat16") ||
        StartsWith(leaf, "__half2float") || StartsWith(leaf, "__bfloat162float") ||
        StartsWith(leaf, "vload_half") || StartsWith(leaf, "vstore_half") ||
        StartsWith(leaf, "vloada_half") || StartsWith(leaf, "vstorea_half") || leaf == "__hfma" ||
        leaf == "__hmul" || leaf == "__hadd" || leaf == "__hfma2" || leaf == "__hmul2" ||
        leaf == "__hadd2" ||
        // F16C / AVX-512 conversions to and from binary16 (no half type named).
        leaf == "_cvtss_sh" || leaf == "_cvtsh_ss" || leaf.find("cvtps_ph") != std::string_view::npos ||
        leaf.find("cvtph_ps") != std::string_view::npos) {
      Downcast(findings, Precision::kHalf, line, shown);
    }
    // A float type narrowed by GCC's machine mode attribute: mode(HF) is binary16, BF bfloat16.
    if ((c == "mode" || c == "__mode__") && NextIs(t, i, "(") && i + 2 < t.size() &&
        (t[i + 2].text == "HF" || t[i + 2].text == "__HF__" || t[i + 2].text == "BF" ||
         t[i + 2].text == "__BF__")) {
      Downcast(findings, Precision::kHalf, line, fmt::format("{}({})", c, t[i + 2].text));
    }
    if (leaf == "tf32" || c.find("float_to_tf32") != std::string::npos ||
        c.find("TF32") != std::string::npos) {
      Downcast(findings, Precision::kTf32, line, shown);
    }
    if (StartsWith(leaf, "__nv_fp8") || leaf.find("fp8_e4m3") != std::string_view::npos ||
        leaf.find("fp8_e5m2") != std::string_view::npos) {
      Downcast(findings, Precision::kFp8, line, shown);
    }

    // runtime-install
    static const std::set<std::string_view> kProcessCalls = {
        "system", "popen",  "execv",  "execve",      "execvp", "execvpe",
        "execl",  "execlp", "execle", "std::system", "_popen", "fexecve"};
    if (call && kProcessCalls.count(c) != 0) findings.Reject("runtime-install", line, shown);
  }
}

}  // namespace kforge::guardrails
