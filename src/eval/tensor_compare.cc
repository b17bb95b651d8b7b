#include "kforge/eval/tensor_compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "kforge/core/files.h"

namespace kforge {
namespace {

float HalfToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1Fu;
  std::uint32_t mantissa = h & 0x3FFu;
  std::uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      mantissa &= 0x3FFu;
      bits = sign | (exponent << 23) | (mantissa << 13);
    }
  } else if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

// Element `i` of a buffer of `dtype`, as double.
double Load(const std::string& dtype, const char* data, std::int64_t i) {
  auto at = [&](auto type_tag) {
    using T = decltype(type_tag);
    T value;
    std::memcpy(&value, data + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
    return value;
  };
  if (dtype == "float32") return at(float{});
  if (dtype == "float64") return at(double{});
  if (dtype == "float16") return HalfToFloat(at(std::uint16_t{}));
  if (dtype == "bfloat16") return std::bit_cast<float>(static_cast<std::uint32_t>(at(std::uint16_t{})) << 16);
  if (dtype == "int32") return at(std::int32_t{});
  if (dtype == "int64") return static_cast<double>(at(std::int64_t{}));
  if (dtype == "int16") return at(std::int16_t{});
  if (dtype == "int8") return at(std::int8_t{});
  if (dtype == "uint8" || dtype == "bool") return at(std::uint8_t{});
  return std::nan("");
}

}  // namespace

std::int64_t TensorFile::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

int DtypeSize(const std::string& dtype) {
  if (dtype == "float64" || dtype == "int64") return 8;
  if (dtype == "float32" || dtype == "int32") return 4;
  if (dtype == "float16" || dtype == "bfloat16" || dtype == "int16") return 2;
  if (dtype == "int8" || dtype == "uint8" || dtype == "bool") return 1;
  return 0;
}

Result<TensorComparison> CompareTensors(const TensorFile& reference, const TensorFile& candidate,
                                        const Tolerance& tolerance) {
  TensorComparison cmp;
  if (candidate.dtype != reference.dtype) {
    cmp.problem = fmt::format("{}: dtype {} but the reference is {}", reference.name,
                              candidate.dtype, reference.dtype);
    return cmp;
  }
  if (candidate.shape != reference.shape) {
    cmp.problem = fmt::format("{}: shape [{}] but the reference is [{}]", reference.name,
                              fmt::join(candidate.shape, ", "), fmt::join(reference.shape, ", "));
    return cmp;
  }
  const int size = DtypeSize(reference.dtype);
  if (size == 0) return InvalidArgument(fmt::format("unknown dtype '{}'", reference.dtype));
  auto ref_bytes = ReadFile(reference.file);
  if (!ref_bytes) return std::unexpected(ref_bytes.error());
  auto cand_bytes = ReadFile(candidate.file);
  if (!cand_bytes) return std::unexpected(cand_bytes.error());
  const std::int64_t n = reference.numel();
  const auto expected_bytes = static_cast<std::size_t>(n * size);
  if (ref_bytes->size() != expected_bytes) {
    return Internal(fmt::format("reference file {} has {} bytes, expected {}",
                                reference.file.string(), ref_bytes->size(), expected_bytes));
  }
  if (cand_bytes->size() != expected_bytes) {
    cmp.problem = fmt::format("{}: the candidate wrote {} bytes, expected {}", reference.name,
                              cand_bytes->size(), expected_bytes);
    return cmp;
  }
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double b = Load(reference.dtype, ref_bytes->data(), i);
    const double a = Load(reference.dtype, cand_bytes->data(), i);
    bool good;
    double abs_err;
    if (std::isnan(a) || std::isnan(b)) {
      good = false;
      abs_err = INFINITY;
    } else if (std::isinf(a) || std::isinf(b)) {
      good = a == b;
      abs_err = good ? 0 : INFINITY;
    } else {
      abs_err = std::fabs(a - b);
      good = abs_err <= tolerance.atol + tolerance.rtol * std::fabs(b);
    }
    cmp.max_abs_error = std::max(cmp.max_abs_error, abs_err);
    if (std::fabs(b) > 0) cmp.max_rel_error = std::max(cmp.max_rel_error, abs_err / std::fabs(b));
    if (!good) {
      if (bad == 0) {
        cmp.first_bad_index = i;
        cmp.first_bad_expected = b;
        cmp.first_bad_actual = a;
      }
      ++bad;
    }
  }
  cmp.fraction_bad = n > 0 ? static_cast<double>(bad) / static_cast<double>(n) : 0.0;
  cmp.ok = bad == 0;
  if (!cmp.ok) {
    cmp.problem = fmt::format(
        "{}: {} of {} elements out of tolerance (atol {:g}, rtol {:g}); max abs error {:.3g}; "
        "first at flat index {}: expected {:.6g}, got {:.6g}",
        reference.name, bad, n, tolerance.atol, tolerance.rtol, cmp.max_abs_error,
        cmp.first_bad_index, cmp.first_bad_expected, cmp.first_bad_actual);
  }
  return cmp;
}

}  // namespace kforge
