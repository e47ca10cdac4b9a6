//===- Matmul.h - the shared body of Linear, QLinear and MoE GEMMs -*- C++ -*-===//
//
// Private to runtime/cpu. Weight rows are decoded to FP32 a group at a time
// and multiplied against FP32 copies of the activation rows in token tiles
// sized to stay in cache; every output element is one detail::dot (see
// Kernels.h), so tiling changes speed, never bits.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace volt::cpu::detail {

/// Weight rows decoded and multiplied together.
inline constexpr int64_t kRowGroup = 16;

/// FP32 copies of FP16 activation rows: row j is in[source(j)].
template <typename Source>
std::vector<float> loadActivations(const uint16_t *in, int64_t rows, int64_t cols, Source &&source,
                                   ThreadPool &pool) {
  std::vector<float> x(static_cast<size_t>(rows * cols));
  pool.parallelFor(rows, std::max<int64_t>(1, 65536 / std::max<int64_t>(cols, 1)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t j = begin; j < end; ++j)
                       halfToFloat(in + source(j) * cols, x.data() + j * cols, cols);
                   });
  return x;
}

/// For each of `groupRows` decoded weight rows w[r] (FP32, `cols` each) and
/// each of `tokens` activation rows x[t]: emit(t, r, dot(x[t], w[r])).
template <typename Emit>
void multiplyGroup(const float *w, int64_t groupRows, const float *x, int64_t tokens, int64_t cols,
                   Emit &&emit) {
  // Keep a token tile (about 256 KiB of activations) in cache across the
  // group's rows.
  constexpr int64_t kTileBytes = 256 * 1024;
  int64_t tile = std::clamp<int64_t>(kTileBytes / (cols * 4), 4, 256);
  float acc[256];
  for (int64_t t0 = 0; t0 < tokens; t0 += tile) {
    int64_t n = std::min(tile, tokens - t0);
    for (int64_t r = 0; r < groupRows; ++r) {
      dotRows(w + r * cols, x + t0 * cols, cols, n, cols, acc);
      for (int64_t i = 0; i < n; ++i)
        emit(t0 + i, r, acc[i]);
    }
  }
}

} // namespace volt::cpu::detail
