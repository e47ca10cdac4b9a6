// templates/common/split_attention.cuh - split-K over long decode contexts,
// shared by paged_attention (CUDA cores) and paged_attention_tiled (tensor
// cores).
//
// A decode sequence (one new token) whose context is longer than the
// step's chunk c is cut into n = ceil(context / c) chunks: the block that
// serves its token takes the first, and a pool of `pool` blocks launched
// after the step's own blocks takes the others. c = max(min_tokens,
// ceil(sum of the step's decode contexts / pool)), so that the extra
// chunks, sum(n - 1) < sum(context) / c, fit the pool, and the records,
// sum(n), number fewer than 2 pool. Each chunk's block writes its record
// (the unnormalised weighted V, the running max m and the sum l of each
// query head of its group) to the workspace and counts itself
// (common/blocks.cuh); the last of a sequence's n blocks merges the
// records exactly: out = sum_i o_i e^(m_i - M) / sum_i l_i e^(m_i - M),
// M = max_i m_i. Record layout: float[2 pool][heads][head_dim + 2].
#pragma once

#include "common/blocks.cuh"
#include "common/volt.cuh"

namespace volt {

#if defined(__CUDACC__) || defined(VOLT_SIMT)

/// A block's chunk of a split decode sequence's context.
struct SplitChunk {
  /// The sequence (-1: none), the chunk (0 .. splits - 1) of its splits
  /// chunks of `chunk` positions, its first record and its counter.
  int seq, split, splits, chunk, record, counter;
};

/// Chunks of sequence s's context when it splits (a decode sequence longer
/// than one chunk), else 0.
VOLT_DEVICE int splitChunksOf(int s, int seqs, int chunk, const int *seqStarts,
                              const int *contextLens) {
  if (s < 0 || s >= seqs || seqStarts[s + 1] - seqStarts[s] != 1)
    return 0;
  const int context = contextLens[s];
  return context > chunk ? (context + chunk - 1) / chunk : 0;
}

/// The step's chunk length for a pool of `pool` (> 0) blocks and chunks of
/// at least `minTokens`. Called by a whole warp; every lane gets it.
VOLT_DEVICE int splitChunkLength(int pool, int minTokens, int seqs, const int *seqStarts,
                                 const int *contextLens) {
  // The step's decode contexts fit in the KV cache, so their sum in an int.
  int decode = 0;
  for (int s = static_cast<int>(laneId()); s < seqs; s += 32)
    if (seqStarts[s + 1] - seqStarts[s] == 1)
      decode += contextLens[s];
  decode = shuffle(warpPrefixSum(decode), 31);
  return max(minTokens, (decode + pool - 1) / pool);
}

/// The chunk a block takes. A block serving sequence ownSeq's token (>= 0)
/// takes its first chunk; a pool block (ownSeq < 0) the extraChunk-th extra
/// chunk of the step, counting the split sequences' chunks 1..n-1 in
/// sequence order. seq -1: nothing (ownSeq does not split, or the pool
/// block is beyond the step's extra chunks). Called by a whole warp.
VOLT_DEVICE SplitChunk findSplitChunk(int ownSeq, int extraChunk, int chunk, int seqs,
                                      const int *seqStarts, const int *contextLens) {
  const int lane = static_cast<int>(laneId());
  int extraBefore = 0, recordsBefore = 0, splitBefore = 0;
  for (int first = 0; first < seqs; first += 32) {
    const int s = first + lane;
    const int n = splitChunksOf(s, seqs, chunk, seqStarts, contextLens);
    const int extra = n > 0 ? n - 1 : 0;
    const int extraEnd = warpPrefixSum(extra), records = warpPrefixSum(n),
              split = warpPrefixSum(n > 0 ? 1 : 0);
    const int extraFirst = extraBefore + extraEnd - extra;
    const bool mine =
        n > 0 &&
        (ownSeq >= 0 ? s == ownSeq : extraFirst <= extraChunk && extraChunk < extraFirst + extra);
    const u32 hit = warpBallot(mine);
    if (hit != 0) {
      const int from = __ffs(hit) - 1;
      SplitChunk c;
      c.seq = shuffle(s, from);
      c.splits = shuffle(n, from);
      c.split = ownSeq >= 0 ? 0 : 1 + extraChunk - shuffle(extraFirst, from);
      c.chunk = chunk;
      c.record = recordsBefore + shuffle(records - n, from);
      c.counter = splitBefore + shuffle(split - 1, from);
      return c;
    }
    extraBefore += shuffle(extraEnd, 31);
    recordsBefore += shuffle(records, 31);
    splitBefore += shuffle(split, 31);
  }
  return SplitChunk{-1, 0, 1, 0, 0, 0};
}

/// The last block's merge of a sequence's `splits` records, for the Group
/// query heads of one kv head: `records` points at this kv head's part of
/// the first record (records of Heads x (Dim + 2) floats), `out` at the
/// token's output for the group's heads, `scratch` at Group x (Pool + 1)
/// shared floats. Every thread of a block of Threads calls it; the counter
/// goes back to zero for the next launch.
template <int Group, int Dim, int Heads, int Pool, int Threads>
VOLT_DEVICE void mergeSplitRecords(const float *records, int splits, u16 *out, float *scratch,
                                   u32 *counter) {
  constexpr int kHeadRecord = Dim + 2, kRecord = Heads * kHeadRecord, kWarps = Threads / 32;
  const int lane = static_cast<int>(laneId()), warp = threadIdx.x / 32;
  // scratch = weights[Group][Pool] (e^(m_i - M)), then sums[Group].
  float *weights = scratch, *sums = scratch + Group * Pool;
  for (int g = warp; g < Group; g += kWarps) {
    const float *head = records + g * kHeadRecord;
    float mMax = -3.402823466e38f;
    for (int i = lane; i < splits; i += 32)
      mMax = fmaxf(mMax, loadCoherent(head + static_cast<i64>(i) * kRecord + Dim));
    mMax = warpMax(mMax);
    float sum = 0.0f;
    for (int i = lane; i < splits; i += 32) {
      const float *chunk = head + static_cast<i64>(i) * kRecord;
      const float f = expf(loadCoherent(chunk + Dim) - mMax);
      weights[g * Pool + i] = f;
      sum += loadCoherent(chunk + Dim + 1) * f;
    }
    sum = warpSum(sum);
    if (lane == 0)
      sums[g] = sum;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < Group * Dim; i += Threads) {
    const int g = i / Dim;
    const float *head = records + g * kHeadRecord + i % Dim;
    float o = 0.0f;
    for (int c = 0; c < splits; ++c)
      o += loadCoherent(head + static_cast<i64>(c) * kRecord) * weights[g * Pool + c];
    out[i] = floatToHalf(o / sums[g]);
  }
  if (threadIdx.x == 0)
    *counter = 0;
}

#endif

} // namespace volt
