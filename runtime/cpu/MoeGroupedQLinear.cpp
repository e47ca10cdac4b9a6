//===- MoeGroupedQLinear.cpp - the experts' NVFP4 GEMMs -------------------===//
//
// Work is split into (expert, group of output columns) items over the
// experts that received pairs this step; each item decodes its weight rows
// once and multiplies them against all of that expert's pairs.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Matmul.h"
#include "runtime/cpu/Moe.h"
#include "runtime/numerics/Half.h"

#include <cassert>
#include <vector>

namespace volt::cpu {

void moeGroupedQLinear(const MoeGroupedQLinearParams &params, const uint16_t *in,
                       const int32_t *order, const int32_t *expertStarts, const Nvfp4Matrix &weight,
                       uint16_t *out, ThreadPool &pool) {
  const int64_t k = params.inFeatures, n = params.outFeatures, experts = params.numExperts;
  const int64_t topK = params.topK, pairs = params.tokens * topK;
  const bool silu = params.epilogue == Epilogue::SiluMul;
  assert(k > 0 && k % 16 == 0 && n > 0 && experts > 0 && topK > 0 && (!silu || n % 2 == 0));
  assert(weight.rows == experts * n && weight.cols == k);
  assert(expertStarts[0] == 0 && expertStarts[experts] == pairs);

  // rowScale[e * N + r]: the global scale of expert e's row r.
  const size_t parts = params.partRows.empty() ? 1 : params.partRows.size();
  assert(params.globalScales.size() == static_cast<size_t>(experts) * parts);
  std::vector<float> rowScale(static_cast<size_t>(experts * n));
  for (int64_t e = 0; e < experts; ++e) {
    float *scale = rowScale.data() + e * n;
    const float *global = params.globalScales.data() + static_cast<size_t>(e) * parts;
    if (params.partRows.empty()) {
      std::fill_n(scale, n, global[0]);
      continue;
    }
    int64_t row = 0;
    for (size_t p = 0; p < parts; ++p)
      for (uint32_t i = 0; i < params.partRows[p]; ++i)
        scale[row++] = global[p];
    assert(row == n);
  }

  std::vector<float> x = detail::loadActivations(
      in, pairs, k, [&](int64_t j) -> int64_t { return params.gatherTokens ? order[j] / topK : j; },
      pool);

  const int64_t columns = silu ? n / 2 : n;
  struct Item {
    int64_t expert;
    int64_t column0;
  };
  std::vector<Item> items;
  for (int64_t e = 0; e < experts; ++e)
    if (expertStarts[e + 1] > expertStarts[e])
      for (int64_t c0 = 0; c0 < columns; c0 += detail::kColumnGroup)
        items.push_back({e, c0});

  pool.parallelFor(static_cast<int64_t>(items.size()), 1, [&](int64_t begin, int64_t end) {
    detail::GemmScratch scratch;
    for (int64_t i = begin; i < end; ++i) {
      const Item item = items[static_cast<size_t>(i)];
      const int64_t first = expertStarts[item.expert];
      const int64_t count = expertStarts[item.expert + 1] - first;
      detail::GemmEpilogue epilogue;
      epilogue.rowScale = rowScale.data() + item.expert * n;
      epilogue.siluUpOffset = silu ? n / 2 : -1;
      detail::gemmItem(
          item.column0, std::min(detail::kColumnGroup, columns - item.column0),
          x.data() + first * k, count, k, epilogue, scratch,
          detail::WeightRows::nvfp4(weight.packed, weight.scales, k).from(item.expert * n),
          [&](int64_t j, int64_t c, float y) { out[(first + j) * columns + c] = floatToHalf(y); });
    }
  });
}

} // namespace volt::cpu
