//===- AttentionBounds.h - how far GPU attention may be from the cpu op -*- C++ -*-===//
//
// The tolerances docs/perf/kernels.md derives for the attention kernels
// against cpu::attention, shared by the SIMT and the GPU tests.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/numerics/Half.h"

#include <cmath>
#include <cstdint>

namespace volt::codegen::testing {

/// paged_attention (FP32 throughout, online softmax): (n + 64) 2^-22
/// max|v| for an output of n positions.
inline double pagedAttentionBound(int64_t n, double maxV) {
  return static_cast<double>(n + 64) * std::ldexp(1.0, -22) * maxV;
}

/// paged_attention_tiled: max|v| (2^-11 + n 2^-25 + 2e + (n + 64) 2^-22)
/// with e = 3 (d + 2) 2^-24 a + 2^-22, where `a` bounds sum_d |q_d k_d| /
/// sqrt(d) over the row's keys. 2^-11 + n 2^-25: P rounded to FP16 (the
/// row sum keeps FP32); e: both sides' score errors (the tensor cores'
/// truncating adds count twice) and exp; the last term as paged_attention.
inline double tiledAttentionBound(int64_t n, int64_t dim, double a, double maxV) {
  const double e =
      3.0 * static_cast<double>(dim + 2) * std::ldexp(1.0, -24) * a + std::ldexp(1.0, -22);
  return maxV * (std::ldexp(1.0, -11) + static_cast<double>(n) * std::ldexp(1.0, -25) + 2 * e +
                 static_cast<double>(n + 64) * std::ldexp(1.0, -22));
}

/// The Euclidean norm of an FP16 row (|q . k| sums are at most |q| |k|).
inline double halfNorm(const uint16_t *row, int64_t dim) {
  double sum = 0;
  for (int64_t d = 0; d < dim; ++d) {
    const double x = halfToFloat(row[d]);
    sum += x * x;
  }
  return std::sqrt(sum);
}

} // namespace volt::codegen::testing
