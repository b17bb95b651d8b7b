// Element-wise a + b for float32 tensors of any shape: a grid-stride loop launched on the
// harness's stream; blocks of 256 threads (four 64-lane wavefronts).
#include <hip/hip_runtime.h>

#include <cstdint>

#include "kforge_kernel.h"

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = a[i] + b[i];
  }
}

extern "C" int kforge_forward(const kforge_tensor* inputs, int num_inputs, kforge_tensor* outputs,
                              int num_outputs, void* stream) {
  if (num_inputs != 2 || num_outputs != 1) return 1;
  if (inputs[0].dtype != kforge_float32 || inputs[1].dtype != kforge_float32 ||
      outputs[0].dtype != kforge_float32) {
    return 2;
  }
  const int64_t n = kforge_numel(&outputs[0]);
  if (kforge_numel(&inputs[0]) != n || kforge_numel(&inputs[1]) != n) return 3;
  if (n == 0) return 0;
  const int threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  const int grid = static_cast<int>(blocks < 65535 * 16 ? blocks : 65535 * 16);
  hipLaunchKernelGGL(add_kernel, dim3(grid), dim3(threads), 0, static_cast<hipStream_t>(stream),
                     static_cast<const float*>(inputs[0].data),
                     static_cast<const float*>(inputs[1].data),
                     static_cast<float*>(outputs[0].data), n);
  return hipGetLastError() == hipSuccess ? 0 : 4;
}
