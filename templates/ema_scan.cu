// templates/ema_scan.cu - EmaScan: a per-channel moving average over each
// sequence's tokens, s = a * s + (1 - a) * x, out = fp16(s), with the state
// kept per sequence in its slot and copied after each token whose snapshot
// slot is set (the cpu op: runtime/cpu/Ema.h). One thread
// per (sequence, channel) walks the sequence's tokens in order; a warp's
// loads of a token's channels are consecutive.
// Constants: DIM. Launch: grid.x = S, grid.y = ceil(DIM / THREADS), THREADS.
#include "common/volt.cuh"

using namespace volt;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    ema_scan(const u16 *in, const u16 *decay, float *state, const int *seqStarts,
             const int *contextLens, const int *stateSlots, const int *snapshotSlots, u16 *out,
             int seqs) {
  const int s = blockIdx.x;
  const int i = blockIdx.y * VOLT_THREADS + threadIdx.x;
  if (s >= seqs || i >= VOLT_DIM)
    return;
  const int first = seqStarts[s], last = seqStarts[s + 1], slot = stateSlots[s];
  // A sequence whose step starts at position 0 starts from zeros.
  const bool fresh = contextLens[s] - (last - first) == 0;
  float *kept = slot >= 0 ? state + static_cast<i64>(slot) * VOLT_DIM : nullptr;
  const float a = halfToFloat(decay[i]);
  float v = fresh || !kept ? 0.0f : kept[i];
  for (int t = first; t < last; ++t) {
    const i64 at = static_cast<i64>(t) * VOLT_DIM + i;
    v = a * v + (1.0f - a) * halfToFloat(in[at]);
    out[at] = floatToHalf(v);
    if (snapshotSlots[t] >= 0) // a copy of the state after this token
      state[static_cast<i64>(snapshotSlots[t]) * VOLT_DIM + i] = v;
  }
  if (kept)
    kept[i] = v;
}
