// Element-wise a + b for float32 tensors of any shape, submitted to the harness's SYCL queue on
// USM device pointers; work-groups of 256 with a guarded tail.
#include <sycl/sycl.hpp>

#include <cstdint>

#include "kforge_kernel.h"

extern "C" int kforge_forward(const kforge_tensor* inputs, int num_inputs, kforge_tensor* outputs,
                              int num_outputs, void* stream) {
  if (num_inputs != 2 || num_outputs != 1 || stream == nullptr) return 1;
  if (inputs[0].dtype != kforge_float32 || inputs[1].dtype != kforge_float32 ||
      outputs[0].dtype != kforge_float32) {
    return 2;
  }
  const int64_t n = kforge_numel(&outputs[0]);
  if (kforge_numel(&inputs[0]) != n || kforge_numel(&inputs[1]) != n) return 3;
  if (n == 0) return 0;
  const float* a = static_cast<const float*>(inputs[0].data);
  const float* b = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  sycl::queue& queue = *static_cast<sycl::queue*>(stream);
  constexpr size_t kGroup = 256;
  const size_t global = (static_cast<size_t>(n) + kGroup - 1) / kGroup * kGroup;
  queue.parallel_for(sycl::nd_range<1>(sycl::range<1>(global), sycl::range<1>(kGroup)),
                     [=](sycl::nd_item<1> item) {
                       const size_t i = item.get_global_id(0);
                       if (i < static_cast<size_t>(n)) out[i] = a[i] + b[i];
                     });
  return 0;
}
