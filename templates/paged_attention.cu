// templates/paged_attention.cu - Attention over the paged FP16 KV cache, for
// any mix of decode tokens and prefill chunks in one step (GQA), with the
// context of a long decode sequence split across blocks (split-K).
//
// A block serves one (token, kv head) pair and the HEADS / KV_HEADS query
// heads that share the kv head, so each K and V row is read once for the
// whole group. It first writes its token's k and v to the token's cache
// slot; keys and values of the step's own tokens are read from qkv rather
// than from the cache, so no block waits for another's write. Warps split
// the context's positions and each keeps an online softmax (running max,
// sum, weighted V); the warps' states are merged once at the end. This
// rescales as it goes where the cpu backend takes the exact two-pass
// softmax: the difference is a few FP32 roundings per position (see
// docs/perf/kernels.md).
//
// Split-K (MAX_SPLITS > 1). One block per (token, kv head) leaves a lone
// long decode sequence with KV_HEADS blocks; so a decode sequence whose
// context is longer than the step's chunk is cut into chunks, its token's
// block taking the first and a pool of MAX_SPLITS blocks after the T token
// blocks the others, merged exactly by the last to finish
// (common/split_attention.cuh; the warps' states merge the same way).
// Prefill chunks and contexts up to one chunk keep the one-block path.
//
// Cache layout (the cuda backend's): the KvCache operand of layer l points
// at that layer's K blocks [num_blocks, BLOCK_SIZE, KV_HEADS, HEAD_DIM]; its
// V blocks follow (the launch passes both pointers).
// Constants: HEADS, KV_HEADS, HEAD_DIM (even, up to 256), BLOCK_SIZE,
// MAX_BLOCKS (block-table width), SPLIT_K_TOKENS (the shortest chunk) and
// MAX_SPLITS (the pool; 0 or absent: no split). Workspace (MAX_SPLITS > 1):
// float[2 MAX_SPLITS][HEADS][HEAD_DIM + 2], records of (o[HEAD_DIM], m, l)
// per query head; without split the launch passes any pointer (unused).
// Launch: grid.x = T + MAX_SPLITS (T without split), grid.y = KV_HEADS,
// THREADS threads.
#include "common/split_attention.cuh"
#include "common/volt.cuh"

#ifndef VOLT_MAX_SPLITS
#define VOLT_MAX_SPLITS 0
#endif
#ifndef VOLT_SPLIT_K_TOKENS
#define VOLT_SPLIT_K_TOKENS 512
#endif

using namespace volt;

namespace {

constexpr int kDim = VOLT_HEAD_DIM;
constexpr int kGroup = VOLT_HEADS / VOLT_KV_HEADS;
constexpr int kWarps = VOLT_THREADS / 32;
/// Elements of a row each lane holds (the last lanes may hold fewer, or
/// none, when HEAD_DIM is not a multiple of 32).
constexpr int kPerLane = (kDim + 31) / 32;
constexpr int kRow = (VOLT_HEADS + 2 * VOLT_KV_HEADS) * kDim;
constexpr int kSlot = VOLT_KV_HEADS * kDim;
static_assert(kDim % 2 == 0 && kDim <= 256, "HEAD_DIM must be even, at most 256");
static_assert(VOLT_HEADS % VOLT_KV_HEADS == 0, "query heads must be a multiple of kv heads");
static_assert(VOLT_SPLIT_K_TOKENS > 0, "SPLIT_K_TOKENS must be positive");

/// Extra blocks for split chunks (0: no split).
constexpr int kPool = VOLT_MAX_SPLITS > 1 ? VOLT_MAX_SPLITS : 0;
/// A query head's part of a record: o[kDim], m, l.
constexpr int kHeadRecord = kDim + 2;
/// Floats of one chunk's record (every query head).
constexpr int kRecord = VOLT_HEADS * kHeadRecord;
/// Shared scratch: the warps' states, later the merge's weights and sums.
constexpr int kStateFloats = kWarps * kGroup * kHeadRecord;
constexpr int kMergeFloats = kGroup * (kPool + 1);
constexpr int kScratch = kStateFloats > kMergeFloats ? kStateFloats : kMergeFloats;

/// Chunks written, per (split sequence, kv head); see common/blocks.cuh.
__device__ u32 arrivals[kPool > 0 ? kPool * VOLT_KV_HEADS : 1];

/// What one block computes.
struct Work {
  /// The sequence (-1: nothing, a pool block the step does not need) and
  /// the token whose query the block takes.
  int seq, token;
  /// The chunk of the context and the chunks of the sequence (1: all of
  /// it, and the block writes the output itself).
  int split, splits;
  /// Positions per chunk; the sequence's first record; its counter.
  int chunk, record, counter;
};

/// Whether element i of `lane`'s share of a row exists.
VOLT_DEVICE bool inRow(int lane, int i) { return lane * kPerLane + i < kDim; }

/// The lane's share of the row at `row`, as floats (zeros past the row).
VOLT_DEVICE void loadLane(const u16 *row, int lane, float (&out)[kPerLane]) {
  const u16 *p = row + lane * kPerLane;
  if (kPerLane % 2 == 0 && kDim % 32 == 0) {
    for (int i = 0; i < kPerLane; i += 2) {
      const u32 w = *reinterpret_cast<const u32 *>(p + i);
      out[i] = halfToFloat(static_cast<u16>(w & 0xFFFFu));
      out[i + 1] = halfToFloat(static_cast<u16>(w >> 16));
    }
  } else {
    for (int i = 0; i < kPerLane; ++i)
      out[i] = inRow(lane, i) ? halfToFloat(p[i]) : 0.0f;
  }
}

/// Block b's work, found by one warp (every lane gets it): token blocks
/// (b < count) take their token (and the first chunk of a split decode's
/// context); pool blocks take the (b - count)-th extra chunk of the step.
VOLT_DEVICE Work findWork(int b, int count, int seqs, const int *seqStarts,
                          const int *contextLens) {
  Work w{-1, -1, 0, 1, 0, 0, 0};
  if (b < count) {
    // The token's sequence: the last s with seqStarts[s] <= b.
    int lo = 0, hi = seqs;
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      if (seqStarts[mid] <= b)
        lo = mid;
      else
        hi = mid;
    }
    w.seq = lo;
    w.token = b;
  }
  if (kPool == 0)
    return w;
  const int chunk =
      splitChunkLength(kPool, VOLT_SPLIT_K_TOKENS, seqs, seqStarts, contextLens);
  if (b < count && splitChunksOf(w.seq, seqs, chunk, seqStarts, contextLens) == 0)
    return w;
  const SplitChunk c =
      findSplitChunk(b < count ? w.seq : -1, b - count, chunk, seqs, seqStarts, contextLens);
  if (c.seq < 0)
    return Work{-1, -1, 0, 1, 0, 0, 0}; // a pool block beyond the step's extra chunks
  w.seq = c.seq;
  w.split = c.split;
  w.splits = c.splits;
  w.chunk = c.chunk;
  w.record = c.record;
  w.counter = c.counter;
  if (b >= count)
    w.token = seqStarts[w.seq];
  return w;
}

} // namespace

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    paged_attention(const u16 *qkv, u16 *keyCache, u16 *valueCache, const int *slotMapping,
                    const int *seqStarts, const int *contextLens, const int *blockTables, u16 *out,
                    float *workspace, int count, int seqs) {
  __shared__ float q[kGroup][kDim];
  __shared__ float scratch[kScratch];
  __shared__ Work shared;
  __shared__ int last;
  const int b = blockIdx.x, kvHead = blockIdx.y;
  if (b >= count + kPool)
    return;
  const int lane = static_cast<int>(laneId()), warp = threadIdx.x / 32;
  if (warp == 0) {
    const Work found = findWork(b, count, seqs, seqStarts, contextLens);
    if (lane == 0)
      shared = found;
  }
  __syncthreads();
  const Work w = shared;
  if (w.seq < 0)
    return;
  const int seq = w.seq, t = w.token;
  const int begin = seqStarts[seq];
  const int firstNew = contextLens[seq] - (seqStarts[seq + 1] - begin);
  const int context = firstNew + (t - begin) + 1;
  const int from = w.split * w.chunk;
  const int to = w.splits > 1 ? min(context, from + w.chunk) : context;
  const u16 *row = qkv + static_cast<i64>(t) * kRow;

  // This token's key and value go to its slot (a negative slot is padding);
  // pool blocks serve a token whose own block writes them.
  const int slot = b < count ? slotMapping[t] : -1;
  if (slot >= 0)
    for (int d = threadIdx.x; d < kDim; d += VOLT_THREADS) {
      const i64 at = static_cast<i64>(slot) * kSlot + kvHead * kDim + d;
      keyCache[at] = row[(VOLT_HEADS + kvHead) * kDim + d];
      valueCache[at] = row[(VOLT_HEADS + VOLT_KV_HEADS + kvHead) * kDim + d];
    }
  for (int i = threadIdx.x; i < kGroup * kDim; i += VOLT_THREADS)
    q[i / kDim][i % kDim] = halfToFloat(row[(kvHead * kGroup) * kDim + i]);
  __syncthreads();

  const float scale = static_cast<float>(1.0 / sqrt(static_cast<double>(kDim)));
  float qLane[kGroup][kPerLane];
  for (int g = 0; g < kGroup; ++g)
    for (int i = 0; i < kPerLane; ++i)
      qLane[g][i] = inRow(lane, i) ? q[g][lane * kPerLane + i] : 0.0f;
  float m[kGroup], l[kGroup], acc[kGroup][kPerLane];
  for (int g = 0; g < kGroup; ++g) {
    m[g] = -3.402823466e38f;
    l[g] = 0.0f;
    for (int i = 0; i < kPerLane; ++i)
      acc[g][i] = 0.0f;
  }
  const int *table = blockTables + static_cast<i64>(seq) * VOLT_MAX_BLOCKS;
  for (int j = from + warp; j < to; j += kWarps) {
    const u16 *key, *value;
    if (j >= firstNew) {
      const u16 *own = qkv + static_cast<i64>(begin + j - firstNew) * kRow;
      key = own + (VOLT_HEADS + kvHead) * kDim;
      value = own + (VOLT_HEADS + VOLT_KV_HEADS + kvHead) * kDim;
    } else {
      const i64 at =
          (static_cast<i64>(table[j / VOLT_BLOCK_SIZE]) * VOLT_BLOCK_SIZE + j % VOLT_BLOCK_SIZE) *
              kSlot +
          kvHead * kDim;
      key = keyCache + at;
      value = valueCache + at;
    }
    float k[kPerLane], v[kPerLane];
    loadLane(key, lane, k);
    loadLane(value, lane, v);
    for (int g = 0; g < kGroup; ++g) {
      float dot = 0.0f;
      for (int i = 0; i < kPerLane; ++i)
        dot += qLane[g][i] * k[i];
      const float s = warpSum(dot) * scale;
      const float mNew = fmaxf(m[g], s);
      const float correction = expf(m[g] - mNew);
      const float e = expf(s - mNew);
      l[g] = l[g] * correction + e;
      for (int i = 0; i < kPerLane; ++i)
        acc[g][i] = acc[g][i] * correction + e * v[i];
      m[g] = mNew;
    }
  }
  // The warps' states: scratch[warp][g] = (weighted V, m, l).
  for (int g = 0; g < kGroup; ++g) {
    float *state = scratch + (warp * kGroup + g) * kHeadRecord;
    for (int i = 0; i < kPerLane; ++i)
      if (inRow(lane, i))
        state[lane * kPerLane + i] = acc[g][i];
    if (lane == 0) {
      state[kDim] = m[g];
      state[kDim + 1] = l[g];
    }
  }
  __syncthreads();
  // Merged over warps: the block's weighted V, max and sum per query head;
  // the output itself when the block has the whole context.
  for (int i = threadIdx.x; i < kGroup * kDim; i += VOLT_THREADS) {
    const int g = i / kDim, d = i % kDim;
    float mMax = -3.402823466e38f;
    for (int u = 0; u < kWarps; ++u)
      mMax = fmaxf(mMax, scratch[(u * kGroup + g) * kHeadRecord + kDim]);
    float sum = 0.0f, o = 0.0f;
    for (int u = 0; u < kWarps; ++u) {
      const float *state = scratch + (u * kGroup + g) * kHeadRecord;
      const float f = expf(state[kDim] - mMax);
      sum += state[kDim + 1] * f;
      o += state[d] * f;
    }
    if (w.splits == 1) {
      out[static_cast<i64>(t) * VOLT_HEADS * kDim + (kvHead * kGroup) * kDim + i] =
          floatToHalf(o / sum);
    } else {
      float *record = workspace + static_cast<i64>(w.record + w.split) * kRecord +
                      (kvHead * kGroup + g) * kHeadRecord;
      record[d] = o;
      if (d == 0) {
        record[kDim] = mMax;
        record[kDim + 1] = sum;
      }
    }
  }
  if (kPool == 0 || w.splits == 1)
    return;

  // The sequence's last chunk to finish merges all of them.
  u32 *counter = &arrivals[w.counter * VOLT_KV_HEADS + kvHead];
  if (!arriveLastOf(counter, w.splits, &last))
    return;
  mergeSplitRecords<kGroup, kDim, VOLT_HEADS, kPool, VOLT_THREADS>(
      workspace + static_cast<i64>(w.record) * kRecord + kvHead * kGroup * kHeadRecord, w.splits,
      out + static_cast<i64>(t) * VOLT_HEADS * kDim + kvHead * kGroup * kDim, scratch, counter);
}
