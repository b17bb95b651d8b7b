// A tensor as the judge sees it: a dtype name, a shape and the element bytes, wherever they live
// (a candidate's outputs copied out of a harness's arena, a reference or truth file mapped
// read-only). The judging functions (eval/accuracy.h) work on views only; `MappedTensor` is the
// thin layer that turns a tensor file (runner/PROTOCOL.md "Tensor files") into one.
#ifndef KFORGE_EVAL_TENSOR_VIEW_H_
#define KFORGE_EVAL_TENSOR_VIEW_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/eval/tensor_compare.h"

namespace kforge {

// Non-owning: the caller keeps `shape` and `bytes` alive while the view is used. Elements are
// C-contiguous and little endian; dtype names are the protocol's (float32, float16, bfloat16,
// float64, int32, int64, int16, int8, uint8, bool). A 0-d tensor has an empty shape and one element.
struct TensorView {
  std::string_view dtype;
  std::span<const std::int64_t> shape;
  std::span<const std::byte> bytes;

  std::int64_t numel() const;
};

// A tensor file mapped read-only for as long as this object lives (no copy). Move-only.
class MappedTensor {
 public:
  MappedTensor() = default;
  MappedTensor(MappedTensor&& other) noexcept;
  MappedTensor& operator=(MappedTensor&& other) noexcept;
  MappedTensor(const MappedTensor&) = delete;
  MappedTensor& operator=(const MappedTensor&) = delete;
  ~MappedTensor();

  // The view of the whole file, with the entry's dtype and shape. The byte count is the file's:
  // a file whose size does not match dtype and shape is the caller's to report (JudgeOutput says so).
  TensorView view() const;
  const TensorFile& entry() const { return entry_; }

 private:
  friend Result<MappedTensor> MapTensorFile(const TensorFile& file);
  TensorFile entry_;
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// Maps `file` (a regular file); errors name the file.
Result<MappedTensor> MapTensorFile(const TensorFile& file);

}  // namespace kforge

#endif  // KFORGE_EVAL_TENSOR_VIEW_H_
