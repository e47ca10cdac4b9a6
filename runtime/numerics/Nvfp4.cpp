//===- Nvfp4.cpp ----------------------------------------------------------===//
#include "runtime/numerics/Nvfp4.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <limits>

namespace volt::nvfp4 {
namespace {

constexpr std::array<float, 8> kE2M1Magnitudes = {0.0f, 0.5f, 1.0f, 1.5f,
                                                   2.0f, 3.0f, 4.0f, 6.0f};

/// The 127 finite non-negative E4M3FN values, indexed by code 0..126.
const std::array<float, 127> &e4m3Magnitudes() {
  static const std::array<float, 127> table = [] {
    std::array<float, 127> t{};
    for (int c = 0; c < 127; ++c)
      t[c] = decodeE4M3(static_cast<uint8_t>(c));
    return t;
  }();
  return table;
}

/// Index of the nearest value in an ascending table, ties to the even index
/// (for these formats an even code is an even mantissa).
template <size_t N> int nearestEven(const std::array<float, N> &table, float a) {
  auto it = std::lower_bound(table.begin(), table.end(), a);
  if (it == table.end())
    return static_cast<int>(N) - 1;
  int hi = static_cast<int>(it - table.begin());
  if (hi == 0 || table[hi] == a)
    return hi;
  int lo = hi - 1;
  float dLo = a - table[lo], dHi = table[hi] - a;
  if (dLo < dHi)
    return lo;
  if (dHi < dLo)
    return hi;
  return (lo % 2 == 0) ? lo : hi;
}

} // namespace

float decodeE2M1(uint8_t code) {
  float m = kE2M1Magnitudes[code & 0x7];
  return (code & 0x8) ? -m : m;
}

float decodeE4M3(uint8_t code) {
  bool negative = code & 0x80;
  int exp = (code >> 3) & 0xF;
  int mant = code & 0x7;
  if (exp == 0xF && mant == 0x7)
    return std::numeric_limits<float>::quiet_NaN();
  float v = exp == 0 ? std::ldexp(static_cast<float>(mant), -9)
                     : std::ldexp(1.0f + static_cast<float>(mant) / 8.0f, exp - 7);
  return negative ? -v : v;
}

uint8_t encodeE2M1(float x) {
  if (std::isnan(x))
    return 0;
  int code = nearestEven(kE2M1Magnitudes, std::fabs(x));
  if (code == 0)
    return 0;
  return static_cast<uint8_t>(code | (x < 0 ? 0x8 : 0));
}

uint8_t encodeE4M3(float x) {
  if (std::isnan(x))
    return 0x7F;
  int code = nearestEven(e4m3Magnitudes(), std::fabs(x));
  return static_cast<uint8_t>(code | (std::signbit(x) && code != 0 ? 0x80 : 0));
}

float absMax(std::span<const float> weights) {
  float amax = 0.0f;
  for (float w : weights)
    amax = std::max(amax, std::fabs(w));
  return amax;
}

Quantized quantize(std::span<const float> weights, int64_t n, int64_t k) {
  float amax = absMax(weights);
  if (amax == 0.0f || !std::isfinite(amax))
    return quantizeWithGlobalScale(weights, n, k, 1.0f);
  return quantizeWithGlobalScale(weights, n, k, amax / (kE2M1Max * kE4M3Max));
}

Quantized quantizeWithGlobalScale(std::span<const float> weights, int64_t n, int64_t k,
                                  float globalScale) {
  assert(k % kBlockSize == 0 && static_cast<int64_t>(weights.size()) == n * k);
  assert(globalScale > 0.0f);
  Quantized q;
  q.packed.assign(static_cast<size_t>(n * k / 2), 0);
  q.scales.assign(static_cast<size_t>(n * k / kBlockSize), 0);
  q.globalScale = globalScale;
  for (int64_t row = 0; row < n; ++row) {
    for (int64_t b = 0; b < k / kBlockSize; ++b) {
      const float *block = weights.data() + row * k + b * kBlockSize;
      float blockAmax = 0.0f;
      for (int64_t i = 0; i < kBlockSize; ++i)
        blockAmax = std::max(blockAmax, std::fabs(block[i]));
      uint8_t scaleCode = encodeE4M3(blockAmax / kE2M1Max / q.globalScale);
      q.scales[static_cast<size_t>(row * (k / kBlockSize) + b)] = scaleCode;
      float scale = decodeE4M3(scaleCode) * q.globalScale;
      for (int64_t i = 0; i < kBlockSize; ++i) {
        uint8_t code = scale == 0.0f ? 0 : encodeE2M1(block[i] / scale);
        int64_t idx = row * k + b * kBlockSize + i;
        uint8_t &byte = q.packed[static_cast<size_t>(idx / 2)];
        byte |= (idx % 2 == 0) ? code : static_cast<uint8_t>(code << 4);
      }
    }
  }
  return q;
}

void dequantizeRow(std::span<const uint8_t> packedRow, std::span<const uint8_t> scaleRow,
                   float globalScale, std::span<float> out) {
  for (size_t i = 0; i < out.size(); ++i) {
    float s = decodeE4M3(scaleRow[i / kBlockSize]);
    out[i] = decodeE2M1(packedElement(packedRow, static_cast<int64_t>(i))) * s * globalScale;
  }
}

} // namespace volt::nvfp4
