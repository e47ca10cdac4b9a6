//===- GatedDeltaNet.h - the Gated DeltaNet mixer's ops ----------*- C++ -*-===//
//
// The two computations of a Gated DeltaNet layer (Qwen3-Next, Qwen3.5,
// Qwen3.6 `linear_attn`) between its input projections and `out_proj`:
//
//   causalConv1d    the depthwise causal convolution over q, k, v, then SiLU,
//                   with a conv state of each sequence's last kernel - 1
//                   inputs;
//   gatedDeltaRule  q/k L2 norms, the gates, the delta-rule recurrence over
//                   a [dk, dv] state per value head, and the gated RMSNorm
//                   of its output.
//
// Both run each sequence's tokens in order, its state kept in a slot between
// steps (as EmaScan, runtime/cpu/Ema.h): a step whose first token of a
// sequence is at position 0 starts the sequence from a zero state; a slot of
// -1 starts from zero and keeps nothing. Everything is computed in FP32
// (products and sums rounded separately); outputs are rounded to FP16.
// tests/unit/cpu/GatedDeltaNetTest.cpp checks both against transformers'
// own torch functions (tests/golden/gated_deltanet_ops.py).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/ThreadPool.h"

#include <cstdint>

namespace volt::cpu {

struct CausalConv1dParams {
  int64_t tokens = 0, seqs = 0;
  /// Channels C (2 * key heads * dk + value heads * dv on a rank).
  int64_t dim = 0;
  /// Kernel width K (`linear_conv_kernel_dim`, 4 in the published models).
  int64_t kernel = 0;
};

/// For each sequence s (tokens seqStarts[s] .. seqStarts[s + 1] - 1, the
/// first at position p0 = contextLens[s] - its token count) and channel c:
/// x is the sequence's input stream, x[p] = in[token at p, c] for this
/// step's positions, the kept state for the K - 1 positions before p0 (zero
/// when p0 == 0 or the slot is -1), zero before position 0. Then
/// out[t, c] = fp16(silu(sum_{j<K} w[c, j] * x[p - K + 1 + j])) for the
/// token t at position p, the sum in order of j. The state slot
/// (stateSlots[s]) then holds x[p_last - K + 2 .. p_last], oldest first,
/// and where snapshotSlots (null: none) names a slot for token t at
/// position p, that slot receives x[p - K + 2 .. p] the same way.
/// `in`, `out` FP16 [T, C]; `weight` FP16 [C, K] (the checkpoint's
/// conv1d.weight [C, 1, K]); `state` FP16 [slots, K - 1, C].
void causalConv1d(const CausalConv1dParams &params, const uint16_t *in, const uint16_t *weight,
                  uint16_t *state, const int32_t *seqStarts, const int32_t *contextLens,
                  const int32_t *stateSlots, const int32_t *snapshotSlots, uint16_t *out,
                  ThreadPool &pool);

/// The sums over the key index (S^T k, S^T q) run in blocks of this many
/// keys (or all dk when fewer), the blocks' sums added in order: the GPU
/// kernel splits a state column over threads so.
inline constexpr int64_t kKeyBlock = 32;

struct GatedDeltaRuleParams {
  int64_t tokens = 0, seqs = 0;
  /// Hk, Hv (Hv a multiple of Hk), dk, dv on a rank.
  int64_t keyHeads = 0, valueHeads = 0, keyDim = 0, valueDim = 0;
  /// The gated norm's epsilon (`rms_norm_eps`).
  float normEps = 1e-6f;
};

/// Per token t of sequence s and value head h, with key head kh = h / (Hv /
/// Hk) (key heads repeated to value heads, each serving consecutive ones):
///   q = l2(qkv[t, q of kh]) / sqrt(dk), k = l2(qkv[t, k of kh]),
///   v = qkv[t, v of h], l2(x) = x * rsqrt(sum(x^2) + 1e-6),
///   beta = sigmoid(b), g = -exp(aLog[h]) * softplus(a + dtBias[h]),
///     b = gates[t, h], a = gates[t, Hv + h], softplus(x) = x past 20,
///   S = exp(g) * S;  S = S + k (x) beta * (v - S^T k);  o = S^T q,
///   out[t, h] = fp16(normWeight * o * rsqrt(mean(o^2) + eps) * silu(z[t, h])).
/// S^T k and S^T q sum over the key index in blocks of kKeyBlock (dk a
/// multiple of it, or at most it). S [dk, dv] starts as the sequence's
/// kept state (zero when its first token here is at position 0 or its slot
/// is -1) and is stored back after its last token; after a token t whose
/// snapshotSlots[t] >= 0 (null: none), S is copied to that slot too. `qkv` FP16 [T, 2 * Hk * dk + Hv * dv] laid out [q | k | v],
/// heads in order within each; `gates` FP16 [T, 2 * Hv] ([b | a]); `z` and
/// `out` FP16 [T, Hv * dv]; `aLog`, `dtBias` FP32 [Hv]; `normWeight` FP16
/// [dv]; `state` FP32 [slots, Hv, dk, dv].
void gatedDeltaRule(const GatedDeltaRuleParams &params, const uint16_t *qkv, const uint16_t *gates,
                    const uint16_t *z, const float *aLog, const float *dtBias,
                    const uint16_t *normWeight, float *state, const int32_t *seqStarts,
                    const int32_t *contextLens, const int32_t *stateSlots,
                    const int32_t *snapshotSlots, uint16_t *out, ThreadPool &pool);

} // namespace volt::cpu
