#include "rule_catalogue.h"

#include <map>

namespace kforge::guardrails {

std::string_view RuleText(std::string_view rule) {
  static const std::map<std::string_view, std::string_view> kTexts = {
      {"reference-op-call",
       "computes with PyTorch's own operators in the forward path. The evaluation compares your "
       "kernel with PyTorch, so the result must come from your kernel, not from the reference "
       "framework. Compute it in your own kernel; use torch only to allocate outputs "
       "(torch.empty, torch.empty_like, torch.zeros) and for shapes, strides and views."},
      {"stream-creation",
       "creates or switches to another stream or command queue. Work on a side stream escapes the "
       "timer, which waits only on the stream it is given. Launch every kernel on the stream the "
       "harness passes in (the `stream` argument, or PyTorch's current stream)."},
      {"thread-creation",
       "starts a thread or a process. Work in the background escapes the timed call and can race "
       "the checker. Do all work inside the call (OpenMP inside a cpu/cpp kernel is fine)."},
      {"graph-capture",
       "captures or replays a CUDA graph. Replayed work hides launch cost and can replay stale "
       "results; the harness measures graph replay itself. Launch your kernels directly."},
      {"timer-patch",
       "assigns to or patches an attribute of a module (torch, time, builtins, ...) or a timing "
       "function. Changing timers or framework functions falsifies the measurement. Leave the "
       "framework and the harness as they are; change only your own code."},
      {"harness-introspection",
       "looks into the interpreter or the process (loaded modules, stack frames, the garbage "
       "collector, /proc). A candidate must not read the harness's state, such as its reference "
       "outputs. Use only the inputs passed to your function."},
      {"inherited-descriptor",
       "writes to, opens or reads a file descriptor it did not open. Inherited descriptors belong "
       "to the harness (its result channel). Return results only through the output tensors."},
      {"output-cache",
       "keeps results between calls keyed on tensor identity (data_ptr, id, _version) or on "
       "shapes. Every call gets fresh inputs, possibly at the same address, so a cached result is "
       "a wrong answer that only looks fast. Compute the output on every call; caching compiled "
       "kernels or launch configurations is fine."},
      {"exception-fallback",
       "catches errors around the computation. A fallback hides a failing kernel and may compute "
       "the result another way. Let errors propagate (from native code, return a non-zero code) "
       "and fix the kernel instead."},
      {"precision-downcast",
       "uses a lower precision than the task's precision policy names (a flag: the accuracy check "
       "against a float64 run of the reference decides). Plain lower-precision arithmetic fails "
       "strict: it is faster because it does less work, not because the kernel is better. "
       "Split precision that stays fp32-accurate (3xTF32, bf16x6; in Triton "
       "tl.dot(..., input_precision=\"tf32x3\")) passes; otherwise keep fp32 arithmetic "
       "(input_precision=\"ieee\"), or evaluate under a policy that allows it (--policy tf32 or "
       "mixed)."},
      {"runtime-install",
       "installs packages or runs programs at run time. The evaluation has no network and a "
       "candidate must not change its environment. Use only what the target provides."},
      {"hardcoded-shape",
       "uses one of the task's sizes as a literal. The task asks for a kernel that works for any "
       "size; one written for a single size fails or misleads on another. Read sizes from the "
       "tensors' shapes."},
  };
  auto it = kTexts.find(rule);
  return it == kTexts.end() ? std::string_view() : it->second;
}

}  // namespace kforge::guardrails
