//===- AttentionAvx512.h - attention's inner loops on AVX-512 ---*- C++ -*-===//
//
// Private to runtime/cpu: called by Attention.cpp only where dotBlock runs
// its AVX-512 path (detail::dotBlockPath()). Each gives the bits of the
// portable loops in Attention.cpp (halfToFloat, dotRows, axpy).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace volt::cpu::detail::avx512 {

/// Row stride of convertRows' output: `dim` rounded up to 16.
inline int64_t paddedDim(int64_t dim) { return (dim + 15) / 16 * 16; }

/// The n FP16 rows at k + j * kStride (each `dim` long) as FP32 rows at
/// out + j * paddedDim(dim), zeros after each row's end.
void convertRows(const uint16_t *k, int64_t kStride, int64_t n, int64_t dim, float *out);

/// scores[g * scoresStride + j] = dot(q + g * dim, k_j, dim) * scale for
/// g < group and j < n, where k_j is the FP32 row at k + j * paddedDim(dim)
/// (convertRows) and q holds FP16 values, so that each product is exact and
/// is fused into its sum. Sixteen rows at a time, their lane sums folded
/// together in dot()'s order.
void scoreRows(const float *k, int64_t n, const float *q, int64_t group, int64_t dim, float scale,
               float *scores, int64_t scoresStride);

/// The largest of s[0..n), n >= 1 (which of +0 and -0 when both are is
/// left open: subtracted from a score, either gives the same bits).
float maxOf(const float *s, int64_t n);

/// acc[g * dim + d] += p[g * pStride + j] * v_j[d] for j < n in order, g <
/// group, d < dim (each product rounded, then added), where v_j is the FP16
/// row at v + j * vStride.
void accumulateValues(const uint16_t *v, int64_t vStride, int64_t n, const float *p,
                      int64_t pStride, int64_t group, int64_t dim, float *acc);

} // namespace volt::cpu::detail::avx512
