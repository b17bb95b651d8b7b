/* KForge native kernel ABI, version 1.
 *
 * A native candidate (cpp, cuda, hip, sycl) is compiled into a shared object that exports
 *
 *   extern "C" int kforge_forward(const kforge_tensor* inputs, int num_inputs,
 *                                 kforge_tensor* outputs, int num_outputs, void* stream);
 *
 * Contract:
 * - `inputs` are, in order: the tensors returned by the task's get_inputs(), then the tensors of the
 *   reference Model's state_dict() (parameters and buffers, in state_dict order). Non-tensor values
 *   of get_inputs() are passed as 0-d float64 (kforge_float64) host tensors.
 * - `outputs` are allocated by the runner with the reference output's shape and dtype, contiguous,
 *   and filled with NaN (floats) or a poison pattern (integers). The kernel must write every element.
 * - Inputs must not be modified. Data pointers are device pointers for device targets (CUDA/HIP
 *   device memory, a USM pointer for SYCL) and host pointers for cpu/cpp.
 * - `stream` is the stream to launch on: cudaStream_t for cuda, hipStream_t for hip, sycl::queue*
 *   for sycl, NULL for cpp. The kernel must not create streams or threads of its own.
 * - Return 0 on success; any other value is reported as a runtime error.
 */
#ifndef KFORGE_KERNEL_H_
#define KFORGE_KERNEL_H_

#include <stdint.h>

#define KFORGE_ABI_VERSION 1
#define KFORGE_MAX_DIMS 8

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kforge_dtype {
  kforge_float32 = 0,
  kforge_float16 = 1,
  kforge_bfloat16 = 2,
  kforge_float64 = 3,
  kforge_int32 = 4,
  kforge_int64 = 5,
  kforge_int8 = 6,
  kforge_uint8 = 7,
  kforge_bool = 8,
  kforge_int16 = 9,
} kforge_dtype;

typedef struct kforge_tensor {
  void* data;                         /* first element */
  int32_t dtype;                      /* a kforge_dtype value */
  int32_t ndim;                       /* 0 .. KFORGE_MAX_DIMS */
  int64_t shape[KFORGE_MAX_DIMS];     /* elements per dimension */
  int64_t strides[KFORGE_MAX_DIMS];   /* in elements, not bytes */
} kforge_tensor;

/* Number of elements of `t`. */
static inline int64_t kforge_numel(const kforge_tensor* t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

#ifdef __cplusplus
}
#endif

#endif /* KFORGE_KERNEL_H_ */
