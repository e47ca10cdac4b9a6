//===- Half.h - FP16 and BF16 bit conversions on the host ------*- C++ -*-===//
//
// The cpu backend, the weight packer and the checkpoint reader convert between
// FP32 and the 16-bit formats on the host; these do it bit-exactly (round to
// nearest even), independent of compiler support for _Float16.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <bit>
#include <cstdint>

namespace volt {

inline float bf16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

/// Round to nearest even; NaN stays NaN (quiet).
inline uint16_t floatToBf16(float value) {
  uint32_t u = std::bit_cast<uint32_t>(value);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  uint32_t rounding = 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

inline float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal: renormalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      mant &= 0x3FFu;
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | mant << 13;
    }
  } else if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else {
    bits = sign | (exp + (127 - 15)) << 23 | mant << 13;
  }
  return std::bit_cast<float>(bits);
}

/// Round to nearest even; overflow gives ±inf, NaN stays NaN.
inline uint16_t floatToHalf(float value) {
  uint32_t u = std::bit_cast<uint32_t>(value);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t absBits = u & 0x7FFFFFFFu;
  if (absBits > 0x7F800000u)
    return sign | 0x7E00u;
  if (absBits >= 0x47800000u) // >= 65536 rounds to inf (65520 and up do below)
    return sign | 0x7C00u;
  if (absBits >= 0x38800000u) { // normal half range
    uint32_t rounded = absBits + 0xFFFu + ((absBits >> 13) & 1u);
    rounded -= (127 - 15) << 23;
    uint32_t h = rounded >> 13;
    return static_cast<uint16_t>(sign | (h > 0x7C00u ? 0x7C00u : h));
  }
  if (absBits < 0x33000000u) // below half of the smallest subnormal
    return sign;
  // Subnormal half: value = mant * 2^-24.
  uint32_t exp = absBits >> 23;
  uint32_t mant = (absBits & 0x7FFFFFu) | 0x800000u;
  uint32_t shift = 126 - exp; // 14 + (113 - exp) ... aligns to 2^-24 units
  uint32_t halfMant = mant >> shift;
  uint32_t rem = mant & ((1u << shift) - 1);
  uint32_t halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (halfMant & 1u)))
    ++halfMant;
  return static_cast<uint16_t>(sign | halfMant);
}

} // namespace volt
