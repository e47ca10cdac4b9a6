//===- Moe.h - the mixture-of-experts ops ------------------------*- C++ -*-===//
//
// OpKind MoeRouter, MoeAlign, MoeGroupedQLinear and MoeCombine of
// runtime/schema/plan.fbs. A layer runs router -> align -> grouped gate|up
// -> SiluMul -> grouped down -> combine; between align and combine, rows are
// the (token, slot) pairs sorted by expert.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/ThreadPool.h"
#include "runtime/cpu/Types.h"

#include <cstdint>
#include <span>

namespace volt::cpu {

struct MoeRouterParams {
  int64_t tokens = 0;
  int64_t numExperts = 0;
  int64_t topK = 0;
  bool renormalize = false;
};

/// For each token, in FP32: p[e] = exp(logit[e] - max) / (sum over e in
/// index order of exp(logit[e] - max)); the topK largest p, ties to the
/// lower expert index, in descending order, to ids[t, :] and weights[t, :];
/// with `renormalize`, each selected weight is divided by their sum (taken
/// in that descending order). `logits` F32 [T, E], `ids` I32 [T, k],
/// `weights` F32 [T, k].
void moeRouter(const MoeRouterParams &params, const float *logits, int32_t *ids, float *weights,
               ThreadPool &pool);

struct MoeAlignParams {
  int64_t tokens = 0;
  int64_t topK = 0;
  int64_t numExperts = 0;
};

/// Groups the pairs p = t * k + slot by expert ids[p]: expertStarts[e] is
/// where expert e's pairs begin in `order`, expertStarts[E] = T * k, and
/// order[expertStarts[e] ..] lists e's pairs in increasing p. `ids` I32
/// [T * k] with values in [0, E); `order` I32 [T * k]; `expertStarts` I32
/// [E + 1].
void moeAlign(const MoeAlignParams &params, const int32_t *ids, int32_t *order,
              int32_t *expertStarts);

struct MoeGroupedQLinearParams {
  int64_t tokens = 0;
  int64_t topK = 0;
  int64_t numExperts = 0;
  /// K (a multiple of 16) and N of one expert.
  int64_t inFeatures = 0;
  int64_t outFeatures = 0;
  /// Rows of each fused part of one expert (gate, up); empty for one part.
  std::span<const uint32_t> partRows;
  /// Global scale of expert e's part p at e * parts + p.
  std::span<const float> globalScales;
  /// Input rows are tokens (row j reads in[order[j] / k]) rather than the
  /// already-sorted pairs (row j reads in[j]).
  bool gatherTokens = false;
  Epilogue epilogue = Epilogue::None;
  Numerics numerics = Numerics::Reference;
};

/// out[j] = qlinear(in[gather(j)], expert e(j)) for j < T * k, where e(j) is
/// the expert whose range of expertStarts holds j; each element exactly as
/// qlinear() computes it (no bias). `in` FP16 [T, K] or [T * k, K];
/// `weight` is the experts' matrices stacked, [E * N, K]; `out` FP16
/// [T * k, N], or [T * k, N/2] with the SiluMul epilogue (as for qlinear()).
void moeGroupedQLinear(const MoeGroupedQLinearParams &params, const uint16_t *in,
                       const int32_t *order, const int32_t *expertStarts, const Nvfp4Matrix &weight,
                       uint16_t *out, ThreadPool &pool);

/// The dense counterpart of MoeGroupedQLinear (plan OpKind
/// MoeGroupedLinear): `weight` holds every expert's FP16 [N, K] matrix.
struct MoeGroupedLinearParams {
  int64_t tokens = 0;
  int64_t topK = 0;
  int64_t numExperts = 0;
  int64_t inFeatures = 0;
  int64_t outFeatures = 0;
  bool gatherTokens = false;
  Epilogue epilogue = Epilogue::None;
  Numerics numerics = Numerics::Reference;
};

void moeGroupedLinear(const MoeGroupedLinearParams &params, const uint16_t *in,
                      const int32_t *order, const int32_t *expertStarts, const uint16_t *weight,
                      uint16_t *out, ThreadPool &pool);

/// moeGroupedLinear over FP8 experts: `weight` is every expert's E4M3 [N, K]
/// matrix stacked ([E * N, K], rows E * N) with a scale per row; each
/// output is as fp8Linear computes it (the row's scale multiplying the FP32
/// sum; with SiluMul, the gate's and the up's each their own, before
/// silu(gate) * up).
void moeGroupedFp8Linear(const MoeGroupedLinearParams &params, const uint16_t *in,
                         const int32_t *order, const int32_t *expertStarts,
                         const Fp8Matrix &weight, uint16_t *out, ThreadPool &pool);

struct MoeCombineParams {
  int64_t tokens = 0;
  int64_t topK = 0;
  /// Hidden size H.
  int64_t dim = 0;
  bool accumulate = false;
};

/// out[t, i] = fp16(base + sum over slot in order 0..k-1 of
/// weights[t, slot] * in[row of (t, slot), i]) in FP32, where base is
/// out[t, i] with `accumulate` and 0 without, and the row of pair p is the j
/// with order[j] = p. `in` FP16 [T * k, H] (sorted pairs), `weights` F32
/// [T, k], `out` FP16 [T, H].
void moeCombine(const MoeCombineParams &params, const uint16_t *in, const int32_t *order,
                const float *weights, uint16_t *out, ThreadPool &pool);

} // namespace volt::cpu
