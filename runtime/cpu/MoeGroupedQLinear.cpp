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

  // Expert e's part p has the global scale globalScales[e * parts + p].
  const size_t parts = params.partRows.empty() ? 1 : params.partRows.size();
  assert(params.globalScales.size() == static_cast<size_t>(experts) * parts);
  const int64_t *ends = nullptr;
  if (!params.partRows.empty()) {
    const std::vector<int64_t> &partEnds = detail::partEnds(params.partRows);
    assert(partEnds.back() == n);
    ends = partEnds.data();
  }

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

  pool.parallelFor(static_cast<int64_t>(items.size()), 1, [&](int64_t begin, int64_t end) {
    detail::GemmScratch &scratch = detail::gemmScratch();
    for (int64_t i = begin; i < end; ++i) {
      const Item item = items[static_cast<size_t>(i)];
      const int64_t first = expertStarts[item.expert];
      const int64_t count = expertStarts[item.expert + 1] - first;
      detail::GemmEpilogue epilogue;
      epilogue.partScales = params.globalScales.data() + static_cast<size_t>(item.expert) * parts;
      epilogue.partEnds = ends;
      epilogue.parts = static_cast<int64_t>(parts);
      epilogue.siluUpOffset = silu ? n / 2 : -1;
      detail::gemmItem(
          item.column0, std::min(detail::kColumnGroup, columns - item.column0),
          x + first * k, count, k, epilogue, scratch,
          detail::WeightRows::nvfp4(weight.packed, weight.scales, k).from(item.expert * n),
          [&](int64_t j, int64_t c, float y) { out[(first + j) * columns + c] = floatToHalf(y); });
    }
  });
}

} // namespace volt::cpu
