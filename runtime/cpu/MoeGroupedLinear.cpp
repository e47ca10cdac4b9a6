//===- MoeGroupedLinear.cpp - grouped GEMM over dense expert weights ------===//
//
// The dense counterpart of moeGroupedQLinear, for unquantized MoE
// checkpoints: each (token, k) row j of the grouped input is multiplied by
// the weight of the expert whose range [expertStarts[e], expertStarts[e+1])
// holds j. Same accumulation order as the other GEMMs (detail::dot).
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/Moe.h"
#include "runtime/numerics/Half.h"

#include <vector>

namespace volt::cpu {

void moeGroupedLinear(const MoeGroupedLinearParams &params, const uint16_t *in,
                      const int32_t *order, const int32_t *expertStarts, const uint16_t *weight,
                      uint16_t *out, ThreadPool &pool) {
  const int64_t k = params.inFeatures, n = params.outFeatures;
  const bool silu = params.epilogue == Epilogue::SiluMul;
  const int64_t outCols = silu ? n / 2 : n;
  for (int64_t e = 0; e < params.numExperts; ++e) {
    int64_t begin = expertStarts[e], end = expertStarts[e + 1];
    if (begin == end)
      continue;
    std::vector<float> w(static_cast<size_t>(n * k));
    detail::halfToFloat(weight + e * n * k, w.data(), n * k);
    pool.parallelFor(end - begin, 1, [&](int64_t first, int64_t last) {
      std::vector<float> x(static_cast<size_t>(k)), y(static_cast<size_t>(n));
      for (int64_t j = begin + first; j < begin + last; ++j) {
        int64_t row = params.gatherTokens ? order[j] / params.topK : j;
        detail::halfToFloat(in + row * k, x.data(), k);
        // dotRows(v, m, ...) dots the vector v with each row of the matrix m.
        detail::dotRows(x.data(), w.data(), k, n, k, y.data());
        uint16_t *dst = out + j * outCols;
        for (int64_t c = 0; c < outCols; ++c)
          dst[c] = floatToHalf(silu ? detail::siluTimes(y[c], y[c + outCols]) : y[c]);
      }
    });
  }
}

} // namespace volt::cpu
