//===- Rope.h - QkNormRope: per-head RMSNorm and rotary embedding -*- C++ -*-===//
//
// OpKind QkNormRope of runtime/schema/plan.fbs, and the rotary tables it is
// built on, which GPU kernels and their tests can use to get the very same
// angles.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/ThreadPool.h"

#include <cstdint>
#include <vector>

namespace volt::cpu {

/// inv_freq[i] for i < headDim / 2, as Hugging Face computes it in FP32:
/// 1 / theta^(float(2i) / float(headDim)). The exponent is an FP32 division;
/// the power is evaluated in double and rounded to FP32 (the correctly
/// rounded value torch's FP32 pow approximates); the reciprocal is FP32.
std::vector<float> ropeInverseFrequencies(int64_t headDim, float theta);

/// cos and sin of angle_i = float(position) * invFreq[i] (an FP32 product,
/// as HF's FP32 matmul of positions by inv_freq), each evaluated in double
/// from the FP32 angle and rounded to FP32. Writes invFreq.size() values to
/// each of `cos` and `sin`.
void ropeCosSin(int64_t position, const std::vector<float> &invFreq, float *cos, float *sin);

struct QkNormRopeParams {
  int64_t tokens = 0;
  /// q heads (Hq) and kv heads (Hkv) of this rank, and the head size D (even).
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;
  int64_t headDim = 0;
  float ropeTheta = 10000.0f;
  /// Epsilon of the per-head RMSNorm.
  float eps = 1e-6f;
  /// R: the leading dims of each head RoPE rotates (even; 0: all D). The
  /// angles are those of a head of R dims (ropeInverseFrequencies(R)).
  int64_t rotaryDim = 0;
};

/// In place on qkv FP16 [T, (Hq + 2 Hkv) * D] (q heads, then k, then v;
/// v is left alone). For each q and k head x[D] of token t, in FP32:
/// when a norm weight is given, x = x * (1 / sqrt(sum(x^2) / D + eps)) * w;
/// then rotate-half (NeoX) RoPE at positions[t] with c, s from ropeCosSin
/// over the first R dims: y[i] = x[i] * c[i] - x[i + R/2] * s[i],
/// y[i + R/2] = x[i + R/2] * c[i] + x[i] * s[i] for i < R/2, y[i] = x[i]
/// for i >= R; rounded to FP16 once. qNorm and kNorm are FP16 [D] or null.
void qkNormRope(const QkNormRopeParams &params, uint16_t *qkv, const int32_t *positions,
                const uint16_t *qNorm, const uint16_t *kNorm, ThreadPool &pool);

} // namespace volt::cpu
