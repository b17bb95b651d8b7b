#include "reference_ops.h"

namespace kforge::guardrails {

const std::set<std::string_view>& TorchAllowedLeaves() {
  static const std::set<std::string_view> kAllowed = {"empty",
                                                      "empty_like",
                                                      "empty_strided",
                                                      "zeros",
                                                      "zeros_like",
                                                      "ones",
                                                      "ones_like",
                                                      "full",
                                                      "full_like",
                                                      "arange",
                                                      "tensor",
                                                      "as_tensor",
                                                      "from_numpy",
                                                      "device",
                                                      "Size",
                                                      "no_grad",
                                                      "inference_mode",
                                                      "enable_grad",
                                                      "set_grad_enabled",
                                                      "is_tensor",
                                                      "is_floating_point",
                                                      "numel",
                                                      "manual_seed",
                                                      "get_default_dtype",
                                                      "finfo",
                                                      "iinfo",
                                                      "promote_types",
                                                      "result_type",
                                                      "is_grad_enabled",
                                                      "Generator",
                                                      "dtype",
                                                      "is_complex",
                                                      "get_device"};
  return kAllowed;
}

const std::set<std::string_view>& ComputeMethods() {
  static const std::set<std::string_view> kMethods = {
      "mm",          "bmm",    "matmul",     "addmm",         "addmm_",     "baddbmm",
      "addbmm",      "addmv",  "mv",         "dot",           "einsum",     "softmax",
      "log_softmax", "relu",   "relu_",      "sigmoid",       "sigmoid_",   "tanh",
      "tanh_",       "gelu",   "silu",       "exp",           "exp_",       "log",
      "sum",         "mean",   "var",        "std",           "norm",       "amax",
      "amin",        "max",    "min",        "logsumexp",     "cumsum",     "cumprod",
      "prod",        "clamp",  "clamp_",     "clamp_min",     "clamp_max",  "sqrt",
      "rsqrt",       "pow",    "erf",        "reciprocal",    "leaky_relu", "hardtanh",
      "conv2d",      "linear", "layer_norm", "group_norm",    "batch_norm", "argmax",
      "argmin",      "topk",   "sort",       "cross_entropy", "mish",       "softplus",
      "elu",         "selu",   "hardswish",  "triu",          "tril"};
  return kMethods;
}

bool IsParameterHolder(std::string_view leaf) {
  return leaf == "Parameter" || leaf == "ParameterList" || leaf == "ParameterDict" ||
         leaf == "Buffer" || leaf == "Module" || leaf == "ModuleList" || leaf == "ModuleDict";
}

}  // namespace kforge::guardrails
