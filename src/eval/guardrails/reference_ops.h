// What counts as computing with the reference framework (PyTorch) for the reference-op-call rule:
// torch calls that only allocate, describe or configure; torch namespaces that compute; tensor
// methods that compute; nn classes that only hold parameters. Internal to src/eval.
#ifndef KFORGE_SRC_EVAL_GUARDRAILS_REFERENCE_OPS_H_
#define KFORGE_SRC_EVAL_GUARDRAILS_REFERENCE_OPS_H_

#include <array>
#include <set>
#include <string_view>

namespace kforge::guardrails {

// torch.<leaf>(...) calls that allocate, describe or configure rather than compute.
const std::set<std::string_view>& TorchAllowedLeaves();

// Namespaces under torch. whose calls compute with the reference framework.
inline constexpr std::array<std::string_view, 14> kTorchComputeNamespaces = {
    "torch.nn.functional.", "torch.linalg.",   "torch.fft.",       "torch.special.",
    "torch.sparse.",        "torch.ops.aten.", "torch.ops.prims.", "torch._C.",
    "torch._refs.",         "torch._prims.",   "torch.Tensor.",    "torch.jit.",
    "torch._dynamo.",       "torch._inductor."};

// Tensor methods that compute (x.sum(), a.mm(b)); views, copies and queries are not listed.
const std::set<std::string_view>& ComputeMethods();

// nn classes that hold parameters only (constructing and holding them is not computing).
bool IsParameterHolder(std::string_view leaf);

}  // namespace kforge::guardrails

#endif  // KFORGE_SRC_EVAL_GUARDRAILS_REFERENCE_OPS_H_
