// templates/causal_conv1d.cu - CausalConv1d: Gated DeltaNet's depthwise
// causal convolution over q|k|v then SiLU, with each sequence's last
// KERNEL - 1 inputs kept in its state slot, and copied after each token
// whose snapshot slot is set (the cpu op: causalConv1d in
// runtime/cpu/GatedDeltaNet.h). One thread per (sequence, channel) walks
// the sequence's tokens in order with the window in registers; a warp's
// loads of a token's channels are consecutive.
// Constants: DIM, KERNEL. Launch: grid.x = S, grid.y = ceil(DIM / THREADS),
// THREADS.
#include "common/volt.cuh"

using namespace volt;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    causal_conv1d(const u16 *in, const u16 *weight, u16 *state, const int *seqStarts,
                  const int *contextLens, const int *stateSlots, const int *snapshotSlots, u16 *out,
                  int seqs) {
  constexpr int kDim = VOLT_DIM, kKernel = VOLT_KERNEL, kKept = kKernel - 1;
  const int s = blockIdx.x;
  const int c = blockIdx.y * VOLT_THREADS + threadIdx.x;
  if (s >= seqs || c >= kDim)
    return;
  const int first = seqStarts[s], last = seqStarts[s + 1], slot = stateSlots[s];
  // A sequence whose step starts at position 0, or that keeps no slot,
  // starts from zeros.
  const bool fresh = contextLens[s] - (last - first) == 0 || slot < 0;
  u16 *kept = slot >= 0 ? state + static_cast<i64>(slot) * kKept * kDim : nullptr;
  float w[kKernel], window[kKept];
#pragma unroll
  for (int j = 0; j < kKernel; ++j)
    w[j] = halfToFloat(weight[static_cast<i64>(c) * kKernel + j]);
#pragma unroll
  for (int j = 0; j < kKept; ++j)
    window[j] = fresh ? 0.0f : halfToFloat(kept[static_cast<i64>(j) * kDim + c]);
  for (int t = first; t < last; ++t) {
    const i64 at = static_cast<i64>(t) * kDim + c;
    const float x = halfToFloat(in[at]);
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < kKept; ++j)
      acc += w[j] * window[j];
    acc += w[kKept] * x;
    out[at] = floatToHalf(acc / (1.0f + expf(-acc)));
#pragma unroll
    for (int j = 0; j + 1 < kKept; ++j)
      window[j] = window[j + 1];
    window[kKept - 1] = x;
    if (snapshotSlots[t] >= 0) { // a copy of the state after this token
      u16 *copy = state + static_cast<i64>(snapshotSlots[t]) * kKept * kDim;
#pragma unroll
      for (int j = 0; j < kKept; ++j)
        copy[static_cast<i64>(j) * kDim + c] = floatToHalf(window[j]);
    }
  }
  if (kept)
#pragma unroll
    for (int j = 0; j < kKept; ++j)
      kept[static_cast<i64>(j) * kDim + c] = floatToHalf(window[j]);
}
