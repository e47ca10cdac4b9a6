// templates/common/blocks.cuh - blocks of one launch handing work to each
// other: the last block to finish a piece of split work combines it.
//
// The pattern (split-K attention uses it): every block writes its partial
// result to global memory, fences, and counts itself on a counter with one
// atomic add; the block that sees the count complete reads every partial
// back and combines them, then sets the counter back to zero. No block
// waits for another, so nothing depends on which blocks are resident.
//
// Counters live in module memory (`__device__` arrays), which is zero when
// the module is loaded; each launch leaves them zero again. The partials
// may live anywhere a launch owns, such as the plan's kernel workspace,
// whose contents are undefined between ops: they are written before they
// are read, within one launch.
//
// The emulator (VOLT_SIMT) runs blocks one after another, so there the
// fence is nothing and the loads and the add are plain.
#pragma once

#include "common/volt.cuh"

namespace volt {

#if defined(__CUDACC__)

/// Makes this thread's earlier global writes visible to every block of the
/// launch before its later writes and atomics (the PTX of __threadfence).
VOLT_DEVICE void fenceDevice() { asm volatile("membar.gl;" ::: "memory"); }

/// A float another block of the launch wrote: read at L2, never from this
/// SM's L1, which is not coherent with other SMs' writes.
VOLT_DEVICE float loadCoherent(const float *p) {
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
  return v;
}

/// An FP16 value another block of the launch wrote, read at L2.
VOLT_DEVICE u16 loadCoherentHalf(const u16 *p) {
  u16 v;
  asm volatile("ld.global.cg.u16 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
  return v;
}

/// Adds one to `*counter` and returns its value before.
VOLT_DEVICE u32 arrive(u32 *counter) {
  u32 old;
  asm volatile("atom.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(counter) : "memory");
  return old;
}

#elif defined(VOLT_SIMT)

inline void fenceDevice() {}
inline float loadCoherent(const float *p) { return *p; }
inline u16 loadCoherentHalf(const u16 *p) { return *p; }
inline u32 arrive(u32 *counter) { return (*counter)++; }

#endif

#if defined(__CUDACC__) || defined(VOLT_SIMT)

/// After the block wrote its part: counts it on `counter` and says whether
/// it was the last of `parts` blocks (which then combines them). Called by
/// every thread of the block; `flag` is a shared int.
VOLT_DEVICE bool arriveLastOf(u32 *counter, int parts, int *flag) {
  fenceDevice();
  __syncthreads();
  if (threadIdx.x == 0)
    *flag = arrive(counter) == static_cast<u32>(parts - 1);
  __syncthreads();
  const bool last = *flag != 0;
  if (last)
    fenceDevice();
  return last;
}

/// Inclusive prefix sum over the warp's lanes (every lane must call it).
VOLT_DEVICE int warpPrefixSum(int v) {
  const int lane = static_cast<int>(laneId());
  for (int d = 1; d < 32; d <<= 1) {
    const int below = shuffle(v, lane >= d ? lane - d : lane);
    if (lane >= d)
      v += below;
  }
  return v;
}

#endif

} // namespace volt
