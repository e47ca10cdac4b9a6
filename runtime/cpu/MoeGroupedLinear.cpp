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

  const float *x = detail::loadActivations(
      detail::activationScratch(), in, pairs, k,
      [&](int64_t j) -> int64_t { return params.gatherTokens ? order[j] / topK : j; }, pool);

  const int64_t columns = silu ? n / 2 : n;
  struct Item {
    int64_t expert;
    int64_t column0;
  };
  // The calling thread's buffer, named through a reference so that the
  // workers' lambda reads this thread's (not their own thread_local).
  static thread_local std::vector<Item> itemBuffer;
  std::vector<Item> &items = itemBuffer;
  items.clear();
  for (int64_t e = 0; e < experts; ++e)
    if (expertStarts[e + 1] > expertStarts[e])
      for (int64_t c0 = 0; c0 < columns; c0 += detail::kColumnGroup)
        items.push_back({e, c0});

  detail::GemmEpilogue epilogue;
  epilogue.siluUpOffset = silu ? n / 2 : -1;
  pool.parallelFor(static_cast<int64_t>(items.size()), 1, [&](int64_t begin, int64_t end) {
    detail::GemmScratch &scratch = detail::gemmScratch();
    for (int64_t i = begin; i < end; ++i) {
      const Item item = items[static_cast<size_t>(i)];
      const int64_t first = expertStarts[item.expert];
      const int64_t count = expertStarts[item.expert + 1] - first;
      detail::gemmItem(
          item.column0, std::min(detail::kColumnGroup, columns - item.column0),
          x + first * k, count, k, epilogue, scratch,
          detail::WeightRows::f16(weight, k).from(item.expert * n),
          [&](int64_t j, int64_t c, float y) { out[(first + j) * columns + c] = floatToHalf(y); });
    }
  });
}

} // namespace volt::cpu
