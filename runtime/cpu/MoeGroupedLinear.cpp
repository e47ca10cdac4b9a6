//===- MoeGroupedLinear.cpp - grouped GEMM over dense expert weights ------===//
//
// The dense counterpart of moeGroupedQLinear, for unquantized MoE
// checkpoints: each (token, k) row j of the grouped input is multiplied by
// the weight of the expert whose range [expertStarts[e], expertStarts[e+1])
// holds j. Work is split as there, into (expert, group of output columns)
// items over the experts that received pairs; same accumulation order as
// the other GEMMs (detail::dot).
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Matmul.h"
#include "runtime/cpu/Moe.h"
#include "runtime/numerics/Half.h"

#include <cassert>
#include <vector>

namespace volt::cpu {

void moeGroupedLinear(const MoeGroupedLinearParams &params, const uint16_t *in,
                      const int32_t *order, const int32_t *expertStarts, const uint16_t *weight,
                      uint16_t *out, ThreadPool &pool) {
  const int64_t k = params.inFeatures, n = params.outFeatures, experts = params.numExperts;
  const int64_t topK = params.topK, pairs = params.tokens * topK;
  const bool silu = params.epilogue == Epilogue::SiluMul;
  assert(k > 0 && n > 0 && experts > 0 && topK > 0 && (!silu || n % 2 == 0));
  assert(expertStarts[0] == 0 && expertStarts[experts] == pairs);

  detail::groupedGemm(
      in, order, expertStarts, experts, topK, pairs, params.gatherTokens, k, n, silu,
      detail::WeightRows::f16(weight, k), [](int64_t) { return detail::GemmEpilogue{}; },
      params.numerics, out, pool);
}

void moeGroupedFp8Linear(const MoeGroupedLinearParams &params, const uint16_t *in,
                         const int32_t *order, const int32_t *expertStarts, const Fp8Matrix &weight,
                         uint16_t *out, ThreadPool &pool) {
  const int64_t k = params.inFeatures, n = params.outFeatures, experts = params.numExperts;
  const int64_t topK = params.topK, pairs = params.tokens * topK;
  const bool silu = params.epilogue == Epilogue::SiluMul;
  assert(k > 0 && n > 0 && experts > 0 && topK > 0 && (!silu || n % 2 == 0));
  assert(weight.rows == experts * n && weight.cols == k);
  assert(expertStarts[0] == 0 && expertStarts[experts] == pairs);

  // dotBlock gives the sums of the E4M3 values times 2^-8 (WeightRows::fp8);
  // expert e's rows are rows e * n .. of the stack, their scales likewise.
  detail::groupedGemm(
      in, order, expertStarts, experts, topK, pairs, params.gatherTokens, k, n, silu,
      detail::WeightRows::fp8(weight.bytes, k),
      [&](int64_t e) {
        detail::GemmEpilogue epilogue;
        epilogue.rowScales = weight.rowScales + e * n;
        epilogue.rowScaleFactor = detail::kFp8RowsBias;
        return epilogue;
      },
      params.numerics, out, pool);
}

} // namespace volt::cpu
