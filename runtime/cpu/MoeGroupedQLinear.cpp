//===- MoeGroupedQLinear.cpp - the experts' NVFP4 GEMMs -------------------===//
//
// Work is split into (expert, group of weight rows) items over the experts
// that received pairs this step; each item decodes its rows once and
// multiplies them against all of that expert's pairs.
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
  const int64_t pairs = params.tokens * params.topK;
  assert(k > 0 && k % 16 == 0 && n > 0 && experts > 0 && params.topK > 0);
  assert(weight.rows == experts * n && weight.cols == k);
  assert(expertStarts[0] == 0 && expertStarts[experts] == pairs);

  // rowPart[r]: the fused part row r of an expert belongs to.
  const int64_t parts = params.partRows.empty() ? 1 : static_cast<int64_t>(params.partRows.size());
  assert(static_cast<int64_t>(params.globalScales.size()) == experts * parts);
  std::vector<int32_t> rowPart(static_cast<size_t>(n), 0);
  if (!params.partRows.empty()) {
    size_t row = 0;
    for (size_t p = 0; p < params.partRows.size(); ++p)
      for (uint32_t i = 0; i < params.partRows[p]; ++i)
        rowPart[row++] = static_cast<int32_t>(p);
    assert(static_cast<int64_t>(row) == n);
  }

  const int64_t topK = params.topK;
  std::vector<float> x = detail::loadActivations(
      in, pairs, k, [&](int64_t j) -> int64_t { return params.gatherTokens ? order[j] / topK : j; },
      pool);

  struct Item {
    int64_t expert;
    int64_t row0;
  };
  std::vector<Item> items;
  for (int64_t e = 0; e < experts; ++e)
    if (expertStarts[e + 1] > expertStarts[e])
      for (int64_t row0 = 0; row0 < n; row0 += detail::kRowGroup)
        items.push_back({e, row0});

  pool.parallelFor(static_cast<int64_t>(items.size()), 1, [&](int64_t begin, int64_t end) {
    std::vector<float> w(static_cast<size_t>(detail::kRowGroup * k));
    for (int64_t i = begin; i < end; ++i) {
      const Item item = items[static_cast<size_t>(i)];
      const int64_t rows = std::min(detail::kRowGroup, n - item.row0);
      const int64_t first = expertStarts[item.expert];
      const int64_t count = expertStarts[item.expert + 1] - first;
      for (int64_t r = 0; r < rows; ++r) {
        int64_t row = item.expert * n + item.row0 + r;
        detail::decodeNvfp4Row(weight.packed + row * (k / 2), weight.scales + row * (k / 16), k,
                               w.data() + r * k);
      }
      const float *scales = params.globalScales.data() + item.expert * parts;
      detail::multiplyGroup(w.data(), rows, x.data() + first * k, count, k,
                            [&](int64_t j, int64_t r, float acc) {
                              int64_t row = item.row0 + r;
                              out[(first + j) * n + row] =
                                  floatToHalf(acc * scales[rowPart[static_cast<size_t>(row)]]);
                            });
    }
  });
}

} // namespace volt::cpu
