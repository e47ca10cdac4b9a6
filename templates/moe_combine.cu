// templates/moe_combine.cu - MoeCombine: out[t] = fp16(base + sum over slots
// 0..k-1 of weights[t, slot] * in[row of (t, slot)]), the sum in slot order
// in FP32, base the old out with ACCUMULATE, else 0.
//
// The op's operands give `order` (sorted row -> pair) but not its inverse,
// so a block of TOKENS tokens scans `order` once for the rows of its pairs
// (T * k reads per block: negligible at decode sizes, a few percent of a
// long prefill step's MoE time). Constants: DIM (H), TOP_K, TOKENS,
// ACCUMULATE. Launch: grid.x = ceil(T / TOKENS), THREADS.
#include "common/volt.cuh"

using namespace volt;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    moe_combine(const u16 *in, const int *order, const float *weights, u16 *out, int count) {
  __shared__ int rowOf[VOLT_TOKENS * VOLT_TOP_K];
  const int t0 = blockIdx.x * VOLT_TOKENS;
  const int pairs = count * VOLT_TOP_K;
  const int first = t0 * VOLT_TOP_K;
  const int last = min(t0 + VOLT_TOKENS, count) * VOLT_TOP_K;
  for (int j = threadIdx.x; j < pairs; j += VOLT_THREADS) {
    const int p = order[j];
    if (p >= first && p < last)
      rowOf[p - first] = j;
  }
  __syncthreads();
  const int tokens = min(VOLT_TOKENS, count - t0);
  for (int i = threadIdx.x; i < tokens * VOLT_DIM; i += VOLT_THREADS) {
    const int tt = i / VOLT_DIM, d = i % VOLT_DIM;
    const i64 t = t0 + tt;
    float acc = 0.0f;
    for (int slot = 0; slot < VOLT_TOP_K; ++slot) {
      const int j = rowOf[tt * VOLT_TOP_K + slot];
      acc += weights[t * VOLT_TOP_K + slot] * halfToFloat(in[static_cast<i64>(j) * VOLT_DIM + d]);
    }
    u16 *o = out + t * VOLT_DIM + d;
    *o = floatToHalf(VOLT_ACCUMULATE ? halfToFloat(*o) + acc : acc);
  }
}
