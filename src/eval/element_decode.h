// Element decoding shared by the judging code (accuracy.cc, tensor_compare.cc). Internal to
// src/eval.
#ifndef KFORGE_SRC_EVAL_ELEMENT_DECODE_H_
#define KFORGE_SRC_EVAL_ELEMENT_DECODE_H_

#include <bit>
#include <cstdint>
#include <cstring>

namespace kforge {

// IEEE binary16 bits to float (subnormals, infinities and NaN included).
inline float HalfToFloat(std::uint16_t h) {
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

// bfloat16 bits (the upper half of a float32) to float.
inline float Bfloat16ToFloat(std::uint16_t h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

// Element `i` of a buffer of `T` (unaligned reads allowed).
template <typename T>
T LoadRaw(const void* data, std::int64_t i) {
  T value;
  std::memcpy(&value, static_cast<const char*>(data) + i * static_cast<std::int64_t>(sizeof(T)),
              sizeof(T));
  return value;
}

}  // namespace kforge

#endif  // KFORGE_SRC_EVAL_ELEMENT_DECODE_H_
