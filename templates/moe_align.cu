// templates/moe_align.cu - MoeAlign: the step's (token, slot) pairs grouped
// by expert, stable: a counting sort in one block.
//
// Pairs are placed a block-wide chunk at a time, in order. Within a warp,
// lanes with the same expert find their rank with match.any; across the
// chunk's warps, per-warp counts in shared memory give each warp its
// offset; a running base per expert carries over between chunks. Constants:
// EXPERTS, TOP_K. Launch: one block of THREADS threads.
#include "common/volt.cuh"

using namespace volt;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    moe_align(const int *ids, int *order, int *expertStarts, int count) {
  constexpr int kWarps = VOLT_THREADS / 32;
  __shared__ int base[VOLT_EXPERTS];
  __shared__ int warpCounts[kWarps][VOLT_EXPERTS];
  const int pairs = count * VOLT_TOP_K;
  const int warp = threadIdx.x / 32;
  const int lane = static_cast<int>(laneId());
  for (int e = threadIdx.x; e < VOLT_EXPERTS; e += VOLT_THREADS) {
    base[e] = 0;
    for (int w = 0; w < kWarps; ++w)
      warpCounts[w][e] = 0;
  }
  __syncthreads();
  for (int p = threadIdx.x; p < pairs; p += VOLT_THREADS)
    atomicAdd(&base[ids[p]], 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    int total = 0;
    for (int e = 0; e < VOLT_EXPERTS; ++e) {
      const int n = base[e];
      base[e] = total;
      expertStarts[e] = total;
      total += n;
    }
    expertStarts[VOLT_EXPERTS] = total;
  }
  __syncthreads();
  for (int chunk = 0; chunk < pairs; chunk += VOLT_THREADS) {
    const int p = chunk + threadIdx.x;
    const int e = p < pairs ? ids[p] : -1;
    const u32 peers = matchAny(e);
    const int rank = popCount(peers & lanesBelow());
    if (e >= 0 && rank == 0)
      warpCounts[warp][e] = popCount(peers);
    __syncthreads();
    if (e >= 0) {
      int offset = base[e] + rank;
      for (int w = 0; w < warp; ++w)
        offset += warpCounts[w][e];
      order[offset] = p;
    }
    __syncthreads();
    for (int x = threadIdx.x; x < VOLT_EXPERTS; x += VOLT_THREADS) {
      int n = 0;
      for (int w = 0; w < kWarps; ++w) {
        n += warpCounts[w][x];
        warpCounts[w][x] = 0;
      }
      base[x] += n;
    }
    __syncthreads();
  }
  (void)lane;
}
