// Element-wise a + b for float32 tensors of any shape on the host CPU: one OpenMP loop, split
// across cores and vectorised by the compiler.
#include <cstdint>

#include "kforge_kernel.h"

extern "C" int kforge_forward(const kforge_tensor* inputs, int num_inputs, kforge_tensor* outputs,
                              int num_outputs, void* /*stream*/) {
  if (num_inputs != 2 || num_outputs != 1) return 1;
  if (inputs[0].dtype != kforge_float32 || inputs[1].dtype != kforge_float32 ||
      outputs[0].dtype != kforge_float32) {
    return 2;
  }
  const int64_t n = kforge_numel(&outputs[0]);
  if (kforge_numel(&inputs[0]) != n || kforge_numel(&inputs[1]) != n) return 3;
  const float* __restrict__ a = static_cast<const float*>(inputs[0].data);
  const float* __restrict__ b = static_cast<const float*>(inputs[1].data);
  float* __restrict__ out = static_cast<float*>(outputs[0].data);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  return 0;
}
