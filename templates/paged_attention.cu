// templates/paged_attention.cu - Attention over the paged FP16 KV cache, for
// any mix of decode tokens and prefill chunks in one step (GQA).
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
// Cache layout (the cuda backend's): the KvCache operand of layer l points
// at that layer's K blocks [num_blocks, BLOCK_SIZE, KV_HEADS, HEAD_DIM]; its
// V blocks follow (the launch passes both pointers).
// Constants: HEADS, KV_HEADS, HEAD_DIM (even, up to 256), BLOCK_SIZE,
// MAX_BLOCKS (block-table width). Launch: grid.x = T, grid.y = KV_HEADS,
// THREADS threads.
#include "common/volt.cuh"

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

} // namespace

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    paged_attention(const u16 *qkv, u16 *keyCache, u16 *valueCache, const int *slotMapping,
                    const int *seqStarts, const int *contextLens, const int *blockTables, u16 *out,
                    int count, int seqs) {
  __shared__ float q[kGroup][kDim];
  __shared__ float state[kWarps][kGroup][kDim + 2];
  const int t = blockIdx.x, kvHead = blockIdx.y;
  if (t >= count)
    return;
  const int lane = static_cast<int>(laneId()), warp = threadIdx.x / 32;

  // The token's sequence: the last s with seqStarts[s] <= t.
  int lo = 0, hi = seqs;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (seqStarts[mid] <= t)
      lo = mid;
    else
      hi = mid;
  }
  const int seq = lo;
  const int begin = seqStarts[seq];
  const int firstNew = contextLens[seq] - (seqStarts[seq + 1] - begin);
  const int context = firstNew + (t - begin) + 1;
  const u16 *row = qkv + static_cast<i64>(t) * kRow;

  // This token's key and value go to its slot (a negative slot is padding).
  const int slot = slotMapping[t];
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
  for (int j = warp; j < context; j += kWarps) {
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
  for (int g = 0; g < kGroup; ++g) {
    for (int i = 0; i < kPerLane; ++i)
      if (inRow(lane, i))
        state[warp][g][lane * kPerLane + i] = acc[g][i];
    if (lane == 0) {
      state[warp][g][kDim] = m[g];
      state[warp][g][kDim + 1] = l[g];
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kGroup * kDim; i += VOLT_THREADS) {
    const int g = i / kDim, d = i % kDim;
    float mMax = -3.402823466e38f;
    for (int w = 0; w < kWarps; ++w)
      mMax = fmaxf(mMax, state[w][g][kDim]);
    float sum = 0.0f, o = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
      const float f = expf(state[w][g][kDim] - mMax);
      sum += state[w][g][kDim + 1] * f;
      o += state[w][g][d] * f;
    }
    out[static_cast<i64>(t) * VOLT_HEADS * kDim + (kvHead * kGroup) * kDim + i] =
        floatToHalf(o / sum);
  }
}
