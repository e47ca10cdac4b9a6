//===- GatedDeltaNet.cpp --------------------------------------------------===//
#include "runtime/cpu/GatedDeltaNet.h"
#include "runtime/cpu/Scratch.h"

#include "runtime/numerics/Half.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace volt::cpu {
namespace {

float silu(float x) { return x / (1.0f + std::exp(-x)); }
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
// torch.nn.functional.softplus (beta 1, threshold 20).
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// Where a sequence's state starts from: its slot, unless the step starts it
// at position 0 or it keeps none.
struct SeqState {
  int32_t first, last, slot;
  bool fresh;
};

SeqState seqState(int64_t s, const int32_t *seqStarts, const int32_t *contextLens,
                  const int32_t *stateSlots) {
  SeqState st{seqStarts[s], seqStarts[s + 1], stateSlots[s], false};
  st.fresh = contextLens[s] - (st.last - st.first) == 0 || st.slot < 0;
  return st;
}

// x * rsqrt(sum(x^2) + 1e-6) in place.
void l2Normalize(float *x, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    sum += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(sum + 1e-6f);
  for (int64_t i = 0; i < n; ++i)
    x[i] *= inv;
}

} // namespace

void causalConv1d(const CausalConv1dParams &p, const uint16_t *in, const uint16_t *weight,
                  uint16_t *state, const int32_t *seqStarts, const int32_t *contextLens,
                  const int32_t *stateSlots, const int32_t *snapshotSlots, uint16_t *out,
                  ThreadPool &pool) {
  const int64_t C = p.dim, K = p.kernel, kept = K - 1;
  // One task per (sequence, block of channels): the channels are independent.
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (C + kBlock - 1) / kBlock;
  pool.parallelFor(p.seqs * blocks, 1, [&](int64_t begin, int64_t end) {
    // Each thread's buffers, kept across ops (zeroed as new ones would be).
    std::vector<float> &w = detail::threadBuffer(0, K);
    std::fill(w.begin(), w.end(), 0.0f);
    // The stream of one channel: the kept inputs, then this step's.
    std::vector<float> &x = detail::threadBuffer(1, 0);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t s = task / blocks, c0 = task % blocks * kBlock;
      const int64_t c1 = std::min(C, c0 + kBlock);
      const SeqState sq = seqState(s, seqStarts, contextLens, stateSlots);
      const int64_t n = sq.last - sq.first;
      uint16_t *slot = sq.slot >= 0 ? state + static_cast<int64_t>(sq.slot) * kept * C : nullptr;
      x.assign(static_cast<size_t>(kept + n), 0.0f);
      for (int64_t c = c0; c < c1; ++c) {
        for (int64_t j = 0; j < K; ++j)
          w[static_cast<size_t>(j)] = halfToFloat(weight[c * K + j]);
        for (int64_t j = 0; j < kept; ++j)
          x[static_cast<size_t>(j)] = sq.fresh ? 0.0f : halfToFloat(slot[j * C + c]);
        for (int64_t i = 0; i < n; ++i)
          x[static_cast<size_t>(kept + i)] = halfToFloat(in[(sq.first + i) * C + c]);
        for (int64_t i = 0; i < n; ++i) {
          float acc = 0.0f;
          for (int64_t j = 0; j < K; ++j)
            acc += w[static_cast<size_t>(j)] * x[static_cast<size_t>(i + j)];
          out[(sq.first + i) * C + c] = floatToHalf(silu(acc));
          // The last K - 1 inputs up to this token: x[i + 1 .. i + K - 1].
          const int32_t snap = snapshotSlots ? snapshotSlots[sq.first + i] : -1;
          if (snap >= 0)
            for (int64_t j = 0; j < kept; ++j)
              state[(static_cast<int64_t>(snap) * kept + j) * C + c] =
                  floatToHalf(x[static_cast<size_t>(i + 1 + j)]);
        }
        if (slot)
          for (int64_t j = 0; j < kept; ++j)
            slot[j * C + c] = floatToHalf(x[static_cast<size_t>(n + j)]);
      }
    }
  });
}

void gatedDeltaRule(const GatedDeltaRuleParams &p, const uint16_t *qkv, const uint16_t *gates,
                    const uint16_t *z, const float *aLog, const float *dtBias,
                    const uint16_t *normWeight, float *state, const int32_t *seqStarts,
                    const int32_t *contextLens, const int32_t *stateSlots,
                    const int32_t *snapshotSlots, uint16_t *out, ThreadPool &pool) {
  const int64_t Hk = p.keyHeads, Hv = p.valueHeads, dk = p.keyDim, dv = p.valueDim;
  const int64_t rep = Hv / Hk;
  const int64_t width = 2 * Hk * dk + Hv * dv, headState = dk * dv;
  const float qScale = 1.0f / std::sqrt(static_cast<float>(dk));
  const int64_t block = std::min<int64_t>(kKeyBlock, dk);
  // One task per (sequence, value head): each head's state is its own.
  pool.parallelFor(p.seqs * Hv, 1, [&](int64_t begin, int64_t end) {
    // Each thread's buffers, kept across ops (zeroed as new ones would be).
    std::vector<float> &S = detail::threadBuffer(0, headState), &q = detail::threadBuffer(1, dk),
                       &k = detail::threadBuffer(2, dk), &delta = detail::threadBuffer(3, dv),
                       &o = detail::threadBuffer(4, dv), &w = detail::threadBuffer(5, dv),
                       &part = detail::threadBuffer(6, dv);
    for (std::vector<float> *b : {&S, &q, &k, &delta, &o, &w, &part})
      std::fill(b->begin(), b->end(), 0.0f);
    for (int64_t j = 0; j < dv; ++j)
      w[static_cast<size_t>(j)] = halfToFloat(normWeight[j]);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t s = task / Hv, h = task % Hv, kh = h / rep;
      const SeqState sq = seqState(s, seqStarts, contextLens, stateSlots);
      float *slot =
          sq.slot >= 0 ? state + (static_cast<int64_t>(sq.slot) * Hv + h) * headState : nullptr;
      for (int64_t i = 0; i < headState; ++i)
        S[static_cast<size_t>(i)] = sq.fresh ? 0.0f : slot[i];
      const float A = -std::exp(aLog[h]), bias = dtBias[h];
      for (int32_t t = sq.first; t < sq.last; ++t) {
        const uint16_t *row = qkv + static_cast<int64_t>(t) * width;
        for (int64_t i = 0; i < dk; ++i) {
          q[static_cast<size_t>(i)] = halfToFloat(row[kh * dk + i]);
          k[static_cast<size_t>(i)] = halfToFloat(row[Hk * dk + kh * dk + i]);
        }
        l2Normalize(q.data(), dk);
        l2Normalize(k.data(), dk);
        for (int64_t i = 0; i < dk; ++i)
          q[static_cast<size_t>(i)] *= qScale;
        const uint16_t *v = row + 2 * Hk * dk + h * dv;
        const float beta = sigmoid(halfToFloat(gates[static_cast<int64_t>(t) * 2 * Hv + h]));
        const float a = halfToFloat(gates[static_cast<int64_t>(t) * 2 * Hv + Hv + h]);
        const float decay = std::exp(A * softplus(a + bias));
        for (int64_t i = 0; i < headState; ++i)
          S[static_cast<size_t>(i)] *= decay;
        // delta = beta * (v - S^T k), the sum over the key index in blocks
        // of kKeyBlock, the blocks' sums added in order (the kernel's split).
        for (int64_t j = 0; j < dv; ++j)
          delta[static_cast<size_t>(j)] = 0.0f;
        for (int64_t i0 = 0; i0 < dk; i0 += block) {
          for (int64_t j = 0; j < dv; ++j)
            part[static_cast<size_t>(j)] = 0.0f;
          for (int64_t i = i0; i < i0 + block; ++i) {
            const float ki = k[static_cast<size_t>(i)];
            const float *Si = S.data() + i * dv;
            for (int64_t j = 0; j < dv; ++j)
              part[static_cast<size_t>(j)] += Si[j] * ki;
          }
          for (int64_t j = 0; j < dv; ++j)
            delta[static_cast<size_t>(j)] += part[static_cast<size_t>(j)];
        }
        for (int64_t j = 0; j < dv; ++j)
          delta[static_cast<size_t>(j)] =
              (halfToFloat(v[j]) - delta[static_cast<size_t>(j)]) * beta;
        // S += k (x) delta; o = S^T q, summed in the same blocks.
        for (int64_t j = 0; j < dv; ++j)
          o[static_cast<size_t>(j)] = 0.0f;
        for (int64_t i0 = 0; i0 < dk; i0 += block) {
          for (int64_t j = 0; j < dv; ++j)
            part[static_cast<size_t>(j)] = 0.0f;
          for (int64_t i = i0; i < i0 + block; ++i) {
            const float ki = k[static_cast<size_t>(i)], qi = q[static_cast<size_t>(i)];
            float *Si = S.data() + i * dv;
            for (int64_t j = 0; j < dv; ++j) {
              Si[j] += ki * delta[static_cast<size_t>(j)];
              part[static_cast<size_t>(j)] += Si[j] * qi;
            }
          }
          for (int64_t j = 0; j < dv; ++j)
            o[static_cast<size_t>(j)] += part[static_cast<size_t>(j)];
        }
        // The gated RMSNorm over the head's dv outputs.
        float sum = 0.0f;
        for (int64_t j = 0; j < dv; ++j)
          sum += o[static_cast<size_t>(j)] * o[static_cast<size_t>(j)];
        const float inv = 1.0f / std::sqrt(sum / static_cast<float>(dv) + p.normEps);
        const uint16_t *zr = z + static_cast<int64_t>(t) * Hv * dv + h * dv;
        uint16_t *dst = out + static_cast<int64_t>(t) * Hv * dv + h * dv;
        for (int64_t j = 0; j < dv; ++j)
          dst[j] = floatToHalf(w[static_cast<size_t>(j)] * (o[static_cast<size_t>(j)] * inv) *
                               silu(halfToFloat(zr[j])));
        const int32_t snap = snapshotSlots ? snapshotSlots[t] : -1;
        if (snap >= 0)
          std::copy(S.begin(), S.end(), state + (static_cast<int64_t>(snap) * Hv + h) * headState);
      }
      if (slot)
        for (int64_t i = 0; i < headState; ++i)
          slot[i] = S[static_cast<size_t>(i)];
    }
  });
}

} // namespace volt::cpu
