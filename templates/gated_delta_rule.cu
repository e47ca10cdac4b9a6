// templates/gated_delta_rule.cu - GatedDeltaRule: the gated delta rule of
// each sequence's tokens in order, then the gated RMSNorm (the cpu op:
// gatedDeltaRule in runtime/cpu/GatedDeltaNet.h, bit for bit on the same
// libm). One block per (sequence, value head); the head's FP32 state S
// [KEY_DIM, VALUE_DIM] lives in registers, thread (p, j) holding rows
// p * KEY_BLOCK .. + KEY_BLOCK of column j, read from the sequence's slot
// once and written back once per step (and copied after each token whose
// snapshot slot is set). Its sums over the key index are
// per block, the blocks' sums added in order through shared memory (the
// cpu op's order); the sums over a head's vector (the L2 norms of q and k,
// the output's RMS) are taken by thread 0 in index order.
// Constants: KEY_HEADS, VALUE_HEADS, KEY_DIM, VALUE_DIM, KEY_BLOCK (32, or
// KEY_DIM when smaller). Launch: grid.x = S, grid.y = VALUE_HEADS, THREADS
// = VALUE_DIM * KEY_DIM / KEY_BLOCK.
#include "common/volt.cuh"

using namespace volt;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    gated_delta_rule(const u16 *qkv, const u16 *gates, const u16 *z, const float *aLog,
                     const float *dtBias, const u16 *normWeight, float *state,
                     const int *seqStarts, const int *contextLens, const int *stateSlots,
                     const int *snapshotSlots, u16 *out, int seqs, float eps) {
  constexpr int kHk = VOLT_KEY_HEADS, kHv = VOLT_VALUE_HEADS, kDk = VOLT_KEY_DIM,
                kDv = VOLT_VALUE_DIM, kBlock = VOLT_KEY_BLOCK, kParts = kDk / kBlock,
                kRep = kHv / kHk;
  constexpr int kWidth = 2 * kHk * kDk + kHv * kDv;
  static_assert(kDk % kBlock == 0 && VOLT_THREADS == kDv * kParts, "the launch's shape");
  const int s = blockIdx.x, h = blockIdx.y, kh = h / kRep;
  const int j = threadIdx.x % kDv, part = threadIdx.x / kDv, i0 = part * kBlock;
  if (s >= seqs)
    return;
  __shared__ float q[kDk], k[kDk], partial[kParts][kDv], o[kDv], shared[4];
  const int first = seqStarts[s], last = seqStarts[s + 1], slot = stateSlots[s];
  const bool fresh = contextLens[s] - (last - first) == 0 || slot < 0;
  float *kept = slot >= 0 ? state + (static_cast<i64>(slot) * kHv + h) * kDk * kDv : nullptr;
  float S[kBlock];
#pragma unroll
  for (int i = 0; i < kBlock; ++i)
    S[i] = fresh ? 0.0f : kept[static_cast<i64>(i0 + i) * kDv + j];
  const float A = -expf(aLog[h]), bias = dtBias[h];
  const float qScale = 1.0f / sqrtf(static_cast<float>(kDk));
  for (int t = first; t < last; ++t) {
    const u16 *row = qkv + static_cast<i64>(t) * kWidth;
    for (int i = threadIdx.x; i < kDk; i += VOLT_THREADS) {
      q[i] = halfToFloat(row[kh * kDk + i]);
      k[i] = halfToFloat(row[kHk * kDk + kh * kDk + i]);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      float sq = 0.0f, sk = 0.0f;
      for (int i = 0; i < kDk; ++i)
        sq += q[i] * q[i];
      for (int i = 0; i < kDk; ++i)
        sk += k[i] * k[i];
      const float b = halfToFloat(gates[static_cast<i64>(t) * 2 * kHv + h]);
      float a = halfToFloat(gates[static_cast<i64>(t) * 2 * kHv + kHv + h]) + bias;
      a = a > 20.0f ? a : log1pf(expf(a)); // torch's softplus
      shared[0] = 1.0f / sqrtf(sq + 1e-6f);
      shared[1] = 1.0f / sqrtf(sk + 1e-6f);
      shared[2] = 1.0f / (1.0f + expf(-b));
      shared[3] = expf(A * a);
    }
    __syncthreads();
    const float invQ = shared[0], invK = shared[1], beta = shared[2], decay = shared[3];
    // S^T k over this thread's block, then over the blocks in order.
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kBlock; ++i) {
      S[i] *= decay;
      sum += S[i] * (k[i0 + i] * invK);
    }
    partial[part][j] = sum;
    __syncthreads();
    float kv = 0.0f;
#pragma unroll
    for (int p = 0; p < kParts; ++p)
      kv += partial[p][j];
    const float v = halfToFloat(row[2 * kHk * kDk + h * kDv + j]);
    const float delta = (v - kv) * beta;
    __syncthreads(); // partial is rewritten
    sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kBlock; ++i) {
      S[i] += (k[i0 + i] * invK) * delta;
      sum += S[i] * ((q[i0 + i] * invQ) * qScale);
    }
    partial[part][j] = sum;
    __syncthreads();
    if (part == 0) {
      float oj = 0.0f;
#pragma unroll
      for (int p = 0; p < kParts; ++p)
        oj += partial[p][j];
      o[j] = oj;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      float squares = 0.0f;
      for (int i = 0; i < kDv; ++i)
        squares += o[i] * o[i];
      shared[0] = 1.0f / sqrtf(squares / static_cast<float>(kDv) + eps);
    }
    __syncthreads();
    if (part == 0) {
      const i64 at = (static_cast<i64>(t) * kHv + h) * kDv + j;
      const float zj = halfToFloat(z[at]);
      out[at] = floatToHalf(halfToFloat(normWeight[j]) * (o[j] * shared[0]) *
                            (zj / (1.0f + expf(-zj))));
    }
    const int snap = snapshotSlots[t];
    if (snap >= 0) { // a copy of the state after this token
      float *copy = state + (static_cast<i64>(snap) * kHv + h) * kDk * kDv;
#pragma unroll
      for (int i = 0; i < kBlock; ++i)
        copy[static_cast<i64>(i0 + i) * kDv + j] = S[i];
    }
    __syncthreads(); // q, k, o and shared are rewritten for the next token
  }
  if (kept)
#pragma unroll
    for (int i = 0; i < kBlock; ++i)
      kept[static_cast<i64>(i0 + i) * kDv + j] = S[i];
}
