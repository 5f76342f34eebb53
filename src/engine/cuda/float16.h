// FP32 → FP16 / BF16 on the host, round to nearest even, as the weights are prepared for the
// device (plain C++: tested on any machine). Bit patterns, not types: the device side
// reinterprets them as __half / __nv_bfloat16.
#pragma once

#include <bit>
#include <cstdint>

namespace mogserve::engine::cuda {

// IEEE binary16: overflow (|x| >= 65520) gives ±inf, results below 2^-14 become subnormals
// (|x| <= 2^-25 gives ±0), NaN stays a quiet NaN with its sign and top payload bits.
inline uint16_t FloatToHalfBits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return sign | 0x7E00u | static_cast<uint16_t>((abs >> 13) & 0x3FFu);
  if (abs >= 0x477FF000u) return sign | 0x7C00u;  // 65520 and up (ties to even: to inf)
  if (abs >= 0x38800000u) {                       // 2^-14 and up: a normal half
    const uint32_t rounded = abs + 0xFFFu + ((abs >> 13) & 1u);
    return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);  // rebias 127 → 15
  }
  const int exponent = static_cast<int>(abs >> 23);
  if (exponent < 102) return sign;  // below 2^-25: rounds to zero
  // A subnormal half counts units of 2^-24: significand · 2^(exponent − 150) / 2^-24.
  const uint32_t significand = (abs & 0x7FFFFFu) | 0x800000u;
  const int shift = 126 - exponent;  // 14 .. 24
  uint32_t units = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (units & 1u))) ++units;  // may carry into 2^-14: fine
  return sign | static_cast<uint16_t>(units);
}

// bfloat16 (the top 16 bits of a float): overflow past the largest bfloat16 gives ±inf, float
// subnormals round like the rest, NaN stays a quiet NaN (never rounds into an infinity).
inline uint16_t FloatToBf16Bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace mogserve::engine::cuda
