// Element-wise comparison of a candidate's output file with the reference's (runner/PROTOCOL.md,
// "Tensor files" and "Comparison"). This runs in the orchestrator: the candidate's process only
// produces files, it never decides whether they match.
#ifndef KFORGE_EVAL_TENSOR_COMPARE_H_
#define KFORGE_EVAL_TENSOR_COMPARE_H_

#include <cstdint>
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/task/task.h"

namespace kforge {

// A manifest entry of a tensor file.
struct TensorFile {
  std::string name;
  std::filesystem::path file;  // absolute
  std::string dtype;           // float32, float16, bfloat16, float64, int32, int64, int16, int8, uint8, bool
  std::vector<std::int64_t> shape;
  std::string scalar;  // "int" or "float" for a Python number stored as a 0-d float64 tensor
  std::string key;     // a state tensor's state_dict() key ("" otherwise)

  std::int64_t numel() const;
};

// Bytes per element of `dtype`, 0 if unknown.
int DtypeSize(const std::string& dtype);

struct TensorComparison {
  bool ok = false;              // same dtype and shape, every element within tolerance
  std::string problem;          // why not, in one line (empty when ok)
  double max_abs_error = 0;
  double max_rel_error = 0;
  double fraction_bad = 0;      // elements out of tolerance / all elements
  std::int64_t first_bad_index = -1;  // flat index of the first bad element
  double first_bad_expected = 0;
  double first_bad_actual = 0;
};

// |a - b| <= atol + rtol * |b| per element (b: reference); NaN and Inf never equal a finite value;
// equal infinities match. Errors only for unreadable files.
Result<TensorComparison> CompareTensors(const TensorFile& reference, const TensorFile& candidate,
                                        const Tolerance& tolerance);

// The same rule with the candidate's tensor in memory (a frozen copy taken from a harness's
// arena, eval/harness_session.h).
Result<TensorComparison> CompareTensorToMemory(const TensorFile& reference,
                                               const std::string& dtype,
                                               const std::vector<std::int64_t>& shape,
                                               std::span<const std::byte> candidate,
                                               const Tolerance& tolerance);

// A (reference, candidate) pair for CompareTensorPairs; both must outlive the call.
struct TensorPair {
  const TensorFile* reference = nullptr;
  const TensorFile* candidate = nullptr;
};

// CompareTensors over every pair, on up to `max_threads` threads (0: the hardware's count, at
// most 16); results in the pairs' order. Each comparison reads only its own files.
std::vector<Result<TensorComparison>> CompareTensorPairs(const std::vector<TensorPair>& pairs,
                                                         const Tolerance& tolerance,
                                                         unsigned max_threads = 0);

}  // namespace kforge

#endif  // KFORGE_EVAL_TENSOR_COMPARE_H_
