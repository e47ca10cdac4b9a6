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

  detail::groupedGemm(
      in, order, expertStarts, experts, topK, pairs, params.gatherTokens, k, n, silu,
      detail::WeightRows::nvfp4(weight.packed, weight.scales, k),
      [&](int64_t e) {
        detail::GemmEpilogue epilogue;
        epilogue.partScales = params.globalScales.data() + static_cast<size_t>(e) * parts;
        epilogue.partEnds = ends;
        epilogue.parts = static_cast<int64_t>(parts);
        return epilogue;
      },
      params.numerics, out, pool);
}

} // namespace volt::cpu
