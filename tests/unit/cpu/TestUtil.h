//===- TestUtil.h - helpers shared by the cpu op tests -----------*- C++ -*-===//
//
// Random FP16 data, NVFP4 test weights built with runtime/numerics, and the
// error bounds the tests hold the ops to (docs/design/cpu-backend.md,
// "Tolerances"): an FP32 result is within its analytic bound of the exact
// (double) value, and an FP16 result within that plus half an FP16 ulp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/Types.h"
#include "runtime/numerics/Half.h"
#include "runtime/numerics/Nvfp4.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <vector>

namespace volt::cpu::test {

/// Unit roundoff of FP32.
inline constexpr double kU32 = 0x1p-24;
/// Half an FP16 ulp, relative, and half the smallest FP16 subnormal.
inline constexpr double kHalfRel = 0x1p-11;
inline constexpr double kHalfAbs = 0x1p-25;

/// A stored FP16 value within `bound` (the FP32 computation's error bound)
/// of `exact` is within this of it after rounding to nearest FP16.
inline double f16Tolerance(double exact, double bound) {
  return bound + kHalfRel * (std::fabs(exact) + bound) + kHalfAbs;
}

/// Bound on an FP32 sum of n rounded products whose magnitudes sum to
/// `absSum`, in any order: (n + 1) u absSum (first order; the +2 covers
/// the second-order terms for the sizes used here).
inline double dotBound(int64_t n, double absSum) {
  return static_cast<double>(n + 2) * kU32 * absSum;
}

inline double h2d(uint16_t h) { return static_cast<double>(halfToFloat(h)); }

inline std::vector<uint16_t> randomHalf(size_t n, std::mt19937 &rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<uint16_t> v(n);
  for (auto &x : v)
    x = floatToHalf(dist(rng));
  return v;
}

inline std::vector<double> toDouble(const std::vector<uint16_t> &h) {
  std::vector<double> d(h.size());
  for (size_t i = 0; i < h.size(); ++i)
    d[i] = h2d(h[i]);
  return d;
}

inline bool sameBits(const void *a, const void *b, size_t bytes) {
  return std::memcmp(a, b, bytes) == 0;
}

/// An NVFP4 [rows, cols] weight of one or more fused parts, each quantized
/// with its own global scale, plus its dequantized values.
struct TestNvfp4 {
  int64_t rows = 0, cols = 0;
  std::vector<uint8_t> packed, scales;
  std::vector<uint32_t> partRows;
  std::vector<float> globalScales;
  /// dequantizeRow() of every row, as double [rows, cols].
  std::vector<double> values;

  Nvfp4Matrix view() const { return {packed.data(), scales.data(), rows, cols}; }
};

/// Random weights for the given parts (each part's magnitude differs, so a
/// wrong global scale shows). Appends to `w` when stacking experts.
inline void appendNvfp4(TestNvfp4 &w, const std::vector<uint32_t> &parts, int64_t cols,
                        std::mt19937 &rng) {
  w.cols = cols;
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (uint32_t rows : parts) {
    float magnitude = std::ldexp(1.0f, static_cast<int>(rng() % 9) - 6);
    std::vector<float> dense(static_cast<size_t>(rows) * cols);
    for (auto &x : dense)
      x = dist(rng) * magnitude;
    nvfp4::Quantized q = nvfp4::quantize(dense, rows, cols);
    w.packed.insert(w.packed.end(), q.packed.begin(), q.packed.end());
    w.scales.insert(w.scales.end(), q.scales.begin(), q.scales.end());
    w.globalScales.push_back(q.globalScale);
    std::vector<float> row(static_cast<size_t>(cols));
    for (uint32_t r = 0; r < rows; ++r) {
      nvfp4::dequantizeRow({q.packed.data() + r * cols / 2, static_cast<size_t>(cols / 2)},
                           {q.scales.data() + r * cols / 16, static_cast<size_t>(cols / 16)},
                           q.globalScale, row);
      w.values.insert(w.values.end(), row.begin(), row.end());
    }
    w.rows += rows;
  }
}

inline TestNvfp4 makeNvfp4(const std::vector<uint32_t> &parts, int64_t cols, std::mt19937 &rng) {
  TestNvfp4 w;
  appendNvfp4(w, parts, cols, rng);
  if (parts.size() > 1)
    w.partRows = parts;
  return w;
}

} // namespace volt::cpu::test
