// templates/moe_router.cu - MoeRouter: softmax over E FP32 router logits,
// top k (ties to the lower expert index), optional renormalisation, one
// warp per token.
//
// The softmax denominator is a warp sum (the cpu backend sums in expert
// order); exp is expf. Both move a probability by an ulp or so, which can
// swap two experts whose probabilities tie to within that (see
// docs/perf/kernels.md, tolerances). Constants: EXPERTS, TOP_K, RENORMALIZE.
// Launch: grid.x = ceil(T / (THREADS / 32)), THREADS.
#include "common/volt.cuh"

using namespace volt;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    moe_router(const float *logits, int *ids, float *weights, int count) {
  constexpr int kPerLane = (VOLT_EXPERTS + 31) / 32;
  const int lane = static_cast<int>(laneId());
  const int t = blockIdx.x * (VOLT_THREADS / 32) + threadIdx.x / 32;
  if (t >= count)
    return;
  const float *l = logits + static_cast<i64>(t) * VOLT_EXPERTS;
  float p[kPerLane];
  float m = -3.402823466e38f;
  for (int j = 0; j < kPerLane; ++j) {
    const int e = lane + 32 * j;
    p[j] = e < VOLT_EXPERTS ? l[e] : -3.402823466e38f;
    m = fmaxf(m, p[j]);
  }
  m = warpMax(m);
  float sum = 0.0f;
  for (int j = 0; j < kPerLane; ++j) {
    const int e = lane + 32 * j;
    p[j] = e < VOLT_EXPERTS ? expf(p[j] - m) : 0.0f;
    sum += p[j];
  }
  sum = warpSum(sum);
  for (int j = 0; j < kPerLane; ++j)
    p[j] = p[j] / sum;

  // k rounds of a warp arg-max; the winner's value is retired.
  float chosen = 0.0f, selected = 0.0f;
  int chosenId = 0;
  for (int s = 0; s < VOLT_TOP_K; ++s) {
    float best = -1.0f;
    int bestId = VOLT_EXPERTS;
    for (int j = 0; j < kPerLane; ++j) {
      const int e = lane + 32 * j;
      if (e < VOLT_EXPERTS && p[j] > best) {
        best = p[j];
        bestId = e;
      }
    }
    for (int d = 16; d > 0; d >>= 1) {
      const float otherValue = shuffleXor(best, d);
      const int otherId = shuffleXor(bestId, d);
      if (otherValue > best || (otherValue == best && otherId < bestId)) {
        best = otherValue;
        bestId = otherId;
      }
    }
    for (int j = 0; j < kPerLane; ++j)
      if (bestId == lane + 32 * j)
        p[j] = -2.0f;
    selected += best;
    if (lane == s) {
      chosen = best;
      chosenId = bestId;
    }
  }
  if (lane < VOLT_TOP_K) {
    ids[static_cast<i64>(t) * VOLT_TOP_K + lane] = chosenId;
    weights[static_cast<i64>(t) * VOLT_TOP_K + lane] =
        VOLT_RENORMALIZE ? chosen / selected : chosen;
  }
}
