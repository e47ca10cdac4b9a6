// templates/paged_attention_tiled.cu - Attention over the paged FP16 KV cache
// on tensor cores, for steps that carry prefill chunks (GQA, causal).
//
// paged_attention.cu reads every K and V row of a context once per query
// token; for a prefill chunk that is the whole cost of the op. Here a block
// takes a tile of QUERY_TILE query rows of one kv head, (token, query head)
// pairs: QUERY_TILE / group consecutive tokens of one sequence, each with
// every query head of the kv head's group, so each K and V row staged in
// shared memory serves all the tile's rows, and a decode sequence (one
// token) still fills `group` rows of the MMAs. The block loops over the
// context in tiles of KEY_TILE keys: S = Q K^T and O += P V on
// mma.m8n8k4 (FP16 inputs, FP32 accumulation), with an online softmax in
// FP32 (running max and sum per row) and the causal mask (row of position
// p sees keys 0..p). Each tile's block first writes its tokens' k and v to
// their cache slots (-1: padding, written nowhere); keys and values of the
// step's own tokens are read from qkv, as in paged_attention, so no block
// waits for another.
//
// Warps: warp w owns rows 16w..16w+15 and every key of the tile (S) and
// every dimension of O; its quad pairs form 16 x 16 units as in
// common/gemm.cuh. P leaves the accumulators through shared memory (the
// accumulator layout of mma.m8n8k4 is not its A-operand layout), rounded
// to FP16; the row sums take the unrounded FP32 values. V is stored
// transposed (the B operand wants 4 consecutive keys of one dimension).
// Warps whose rows are all masked for a key tile (the diagonal, a short
// tile) skip its MMAs.
//
// Split-K (MAX_SPLITS > 1), as in paged_attention (common/
// split_attention.cuh): a long decode sequence's tile block takes the first
// chunk of its context and a pool of MAX_SPLITS blocks after the tile
// blocks the others. Without it a long decode in a step with prefill
// chunks would be one block per kv head streaming its whole context while
// the others wait.
//
// Pipeline (Volta has no cp.async): V of key tile j is loaded into
// registers while S_j is computed, K of tile j + 1 while P_j V_j is; each
// is stored to shared memory after the other's MMAs. P shares K's buffer.
// Shared memory (halves): Q [QUERY_TILE][HEAD_DIM + 8], K or P
// max([KEY_TILE][HEAD_DIM + 8], [QUERY_TILE][KEY_TILE + 8]), V^T
// [HEAD_DIM][KEY_TILE + 8]: the 8 halves of padding spread fragment loads
// over the banks.
//
// Constants: HEADS, KV_HEADS, HEAD_DIM (a multiple of 16), BLOCK_SIZE,
// MAX_BLOCKS (block-table width), QUERY_TILE (rows, a multiple of 16, at
// least the group), KEY_TILE (a multiple of 16), SPLIT_K_TOKENS and
// MAX_SPLITS (0 or absent: no split). Workspace (MAX_SPLITS > 1):
// float[2 MAX_SPLITS][HEADS][HEAD_DIM + 2], paged_attention's records;
// without split the launch passes any pointer (unused). Launch: grid.x =
// ceil((T + (tt - 1) S) / tt) + MAX_SPLITS with tt = QUERY_TILE / group
// tokens per tile (blocks past the step's tiles exit), grid.y = KV_HEADS,
// QUERY_TILE * 2 threads, kSharedBytes of dynamic shared memory
// (Launches.cpp computes the same).
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
constexpr int kRows = VOLT_QUERY_TILE;
constexpr int kKeys = VOLT_KEY_TILE;
/// Heads wider than 128 (Qwen3.5/3.6's 256) split their dimensions over two
/// warps per 16 rows: a thread keeping all of O's 256 columns would need
/// 128 accumulators and spill. Each warp of a pair sums Q K^T over its half
/// of the dimensions; the two partial scores meet in shared memory and both
/// warps add them in the same order, so their softmax statistics agree.
constexpr int kDimSplit = kDim > 128 ? 2 : 1;
constexpr int kRowWarps = kRows / 16;
constexpr int kWarps = kRowWarps * kDimSplit;
constexpr int kThreads = kWarps * 32;
constexpr int kPartDim = kDim / kDimSplit;
/// Tokens per tile (their rows; the rest of the tile is empty).
constexpr int kTileTokens = kRows / kGroup;
constexpr int kRow = (VOLT_HEADS + 2 * VOLT_KV_HEADS) * kDim;
constexpr int kSlot = VOLT_KV_HEADS * kDim;
static_assert(VOLT_HEADS % VOLT_KV_HEADS == 0, "query heads must be a multiple of kv heads");
static_assert(kDim % 16 == 0, "HEAD_DIM must be a multiple of 16");
static_assert(kRows % 16 == 0 && kKeys % 16 == 0, "tiles of whole 16 x 16 units");
static_assert(kGroup <= kRows, "a tile holds at least one token's group");
static_assert(VOLT_THREADS == kThreads, "one warp per 16 query rows (two past 128 dims)");
static_assert(kPartDim % 16 == 0 && kPartDim <= 128, "HEAD_DIM at most 256");

constexpr int kQStride = kDim + 8;
constexpr int kKStride = kDim + 8;
constexpr int kPStride = kKeys + 8;
constexpr int kVStride = kKeys + 8;
constexpr int kQHalves = kRows * kQStride;
constexpr int kKHalves = kKeys * kKStride > kRows *kPStride ? kKeys *kKStride : kRows *kPStride;
constexpr int kVHalves = kDim * kVStride;
/// Split dimensions: each warp's partial scores, [part][row][key] in FP32.
constexpr int kSStride = kKeys + 1;
constexpr int kSPartFloats = kDimSplit > 1 ? kDimSplit * kRows * kSStride : 0;
/// Dynamic shared memory of a block.
constexpr int kSharedBytes = 2 * (kQHalves + kKHalves + kVHalves) + 4 * kSPartFloats;

/// 16-byte segments (8 halves) of a row, and of a key tile.
constexpr int kSegments = kDim / 8;
constexpr int kTileSegments = kKeys * kSegments;
constexpr int kLoads = (kTileSegments + kThreads - 1) / kThreads;
constexpr int kKeyUnits = kKeys / 16;
/// O's 16-column units a warp holds (its part of the dimensions).
constexpr int kDimUnits = kPartDim / 16;

/// Extra blocks for split chunks (0: no split).
constexpr int kPool = VOLT_MAX_SPLITS > 1 ? VOLT_MAX_SPLITS : 0;
/// A query head's part of a record: o[kDim], m, l; a chunk's record.
constexpr int kHeadRecord = kDim + 2;
constexpr int kRecord = VOLT_HEADS * kHeadRecord;
static_assert(VOLT_SPLIT_K_TOKENS > 0, "SPLIT_K_TOKENS must be positive");
static_assert(kGroup * (kPool + 1) * 4 <= kSharedBytes, "the merge's weights fit shared memory");

/// Chunks written, per (split sequence, kv head); see common/blocks.cuh.
__device__ u32 arrivals[kPool > 0 ? kPool *VOLT_KV_HEADS : 1];

/// A block's tile: sequence (-1: none), first token, tokens; and its chunk
/// of the context (split of splits; 1 split: all of it), the positions per
/// chunk, the sequence's first record and its counter.
struct Tile {
  int seq, first, tokens;
  int split, splits, chunk, record, counter;
};

/// Block b's tile, found by one warp (every lane gets it). A sequence of n
/// new tokens has ceil(n / kTileTokens) tiles, taken last first: the last
/// tile has the longest context, so it starts earliest.
VOLT_DEVICE Tile findTile(int b, int seqs, const int *seqStarts) {
  const int lane = static_cast<int>(laneId());
  int before = 0;
  for (int first = 0; first < seqs; first += 32) {
    const int s = first + lane;
    const int n = s < seqs ? (seqStarts[s + 1] - seqStarts[s] + kTileTokens - 1) / kTileTokens : 0;
    const int end = warpPrefixSum(n);
    const int start = before + end - n;
    const u32 hit = warpBallot(n > 0 && start <= b && b < start + n);
    if (hit != 0) {
      const int from = __ffs(hit) - 1;
      Tile t{0, 0, 0, 0, 1, 0, 0, 0};
      t.seq = shuffle(s, from);
      const int index = shuffle(n, from) - 1 - (b - shuffle(start, from));
      const int begin = seqStarts[t.seq];
      t.first = begin + index * kTileTokens;
      t.tokens = min(kTileTokens, seqStarts[t.seq + 1] - t.first);
      return t;
    }
    before += shuffle(end, 31);
  }
  return Tile{-1, 0, 0, 0, 1, 0, 0, 0};
}

/// Block b's work, found by one warp: tile blocks (b < tiles) take their
/// tile (and the first chunk of a split decode's context); pool blocks take
/// the (b - tiles)-th extra chunk of the step.
VOLT_DEVICE Tile findWork(int b, int tiles, int seqs, const int *seqStarts,
                          const int *contextLens) {
  Tile w = b < tiles ? findTile(b, seqs, seqStarts) : Tile{-1, 0, 0, 0, 1, 0, 0, 0};
  if (kPool == 0 || (b < tiles && w.seq < 0))
    return w;
  const int chunk =
      splitChunkLength(kPool, VOLT_SPLIT_K_TOKENS, seqs, seqStarts, contextLens);
  if (b < tiles && splitChunksOf(w.seq, seqs, chunk, seqStarts, contextLens) == 0)
    return w;
  const SplitChunk c =
      findSplitChunk(b < tiles ? w.seq : -1, b - tiles, chunk, seqs, seqStarts, contextLens);
  if (c.seq < 0)
    return Tile{-1, 0, 0, 0, 1, 0, 0, 0}; // a pool block beyond the step's extra chunks
  w.seq = c.seq;
  w.split = c.split;
  w.splits = c.splits;
  w.chunk = c.chunk;
  w.record = c.record;
  w.counter = c.counter;
  w.first = seqStarts[w.seq];
  w.tokens = 1;
  return w;
}

VOLT_DEVICE u32 packHalves(float lo, float hi) {
  return static_cast<u32>(floatToHalf(lo)) | static_cast<u32>(floatToHalf(hi)) << 16;
}

} // namespace

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    paged_attention_tiled(const u16 *qkv, u16 *keyCache, u16 *valueCache, const int *slotMapping,
                          const int *seqStarts, const int *contextLens, const int *blockTables,
                          u16 *out, float *workspace, int count, int seqs) {
  VOLT_DYNAMIC_SHARED(u16, shared);
  __shared__ Tile sharedTile;
  __shared__ int last;
  u16 *qs = shared, *ks = shared + kQHalves, *vs = shared + kQHalves + kKHalves;
  float *sPart = reinterpret_cast<float *>(shared + kQHalves + kKHalves + kVHalves);
  const int lane = static_cast<int>(laneId()), warp = threadIdx.x / 32;
  const int kvHead = blockIdx.y;
  if (warp == 0) {
    const Tile found =
        findWork(blockIdx.x, static_cast<int>(gridDim.x) - kPool, seqs, seqStarts, contextLens);
    if (lane == 0)
      sharedTile = found;
  }
  __syncthreads();
  const Tile tile = sharedTile;
  if (tile.seq < 0 || tile.first >= count)
    return;
  const int begin = seqStarts[tile.seq];
  const int firstNew = contextLens[tile.seq] - (seqStarts[tile.seq + 1] - begin);
  // Row r is token r / kGroup of the tile, at position pos0 + r / kGroup.
  const int pos0 = firstNew + (tile.first - begin);
  const int validRows = tile.tokens * kGroup;
  // Keys [from, to): the tile's context, or its chunk of a split decode's.
  const int keyEnd = pos0 + tile.tokens;
  const int from = tile.split * tile.chunk;
  const int to = tile.splits > 1 ? min(keyEnd, from + tile.chunk) : keyEnd;
  const int *table = blockTables + static_cast<i64>(tile.seq) * VOLT_MAX_BLOCKS;

  // The tile's keys and values go to their slots (pool blocks serve a
  // token whose tile block writes them).
  for (int i = threadIdx.x; i < (tile.split == 0 ? tile.tokens : 0) * kSegments; i += kThreads) {
    const int t = tile.first + i / kSegments, c = (i % kSegments) * 8;
    const int slot = slotMapping[t];
    if (slot < 0)
      continue;
    const u16 *row = qkv + static_cast<i64>(t) * kRow;
    const i64 at = static_cast<i64>(slot) * kSlot + kvHead * kDim + c;
    store16(keyCache + at, loadReadOnly16(row + (VOLT_HEADS + kvHead) * kDim + c));
    store16(valueCache + at,
            loadReadOnly16(row + (VOLT_HEADS + VOLT_KV_HEADS + kvHead) * kDim + c));
  }
  // Q, zeros past the tile's rows.
  for (int i = threadIdx.x; i < kRows * kSegments; i += kThreads) {
    const int r = i / kSegments, c = (i % kSegments) * 8;
    u32x4 v = {0, 0, 0, 0};
    if (r < validRows)
      v = loadReadOnly16(qkv + static_cast<i64>(tile.first + r / kGroup) * kRow +
                         (kvHead * kGroup + r % kGroup) * kDim + c);
    *reinterpret_cast<u32x4 *>(qs + r * kQStride + c) = v;
  }

  // Key j's row of K (or V): the cache below the step's new tokens, qkv
  // from there; zeros past the block's last key.
  auto load = [&](int j, bool value, int c) {
    if (j >= to)
      return u32x4{0, 0, 0, 0};
    if (j >= firstNew)
      return loadReadOnly16(qkv + static_cast<i64>(begin + j - firstNew) * kRow +
                            (VOLT_HEADS + (value ? VOLT_KV_HEADS : 0) + kvHead) * kDim + c);
    const i64 at =
        (static_cast<i64>(table[j / VOLT_BLOCK_SIZE]) * VOLT_BLOCK_SIZE + j % VOLT_BLOCK_SIZE) *
            kSlot +
        kvHead * kDim + c;
    return *reinterpret_cast<const u32x4 *>((value ? valueCache : keyCache) + at);
  };
  u32x4 staged[kLoads];
  // K: consecutive threads along a row (coalesced). V: consecutive threads
  // along keys, so that the transposing stores of a warp hit 32 different
  // banks.
  auto loadKeys = [&](int j0) {
    for (int i = 0; i < kLoads; ++i) {
      const int s = threadIdx.x + i * kThreads;
      staged[i] = s < kTileSegments ? load(j0 + s / kSegments, false, (s % kSegments) * 8)
                                    : u32x4{0, 0, 0, 0};
    }
  };
  auto storeKeys = [&] {
    for (int i = 0; i < kLoads; ++i) {
      const int s = threadIdx.x + i * kThreads;
      if (s < kTileSegments)
        *reinterpret_cast<u32x4 *>(ks + (s / kSegments) * kKStride + (s % kSegments) * 8) =
            staged[i];
    }
  };
  auto loadValues = [&](int j0) {
    for (int i = 0; i < kLoads; ++i) {
      const int s = threadIdx.x + i * kThreads;
      staged[i] =
          s < kTileSegments ? load(j0 + s % kKeys, true, (s / kKeys) * 8) : u32x4{0, 0, 0, 0};
    }
  };
  auto storeValues = [&] {
    for (int i = 0; i < kLoads; ++i) {
      const int s = threadIdx.x + i * kThreads;
      if (s >= kTileSegments)
        continue;
      u16 *column = vs + (s / kKeys) * 8 * kVStride + s % kKeys;
      const u32 w[4] = {staged[i].x, staged[i].y, staged[i].z, staged[i].w};
      for (int e = 0; e < 4; ++e) {
        column[(2 * e) * kVStride] = static_cast<u16>(w[e] & 0xFFFFu);
        column[(2 * e + 1) * kVStride] = static_cast<u16>(w[e] >> 16);
      }
    }
  };

  // Fragment rows (common/gemm.cuh): quad pair q reads rows 8 (q & 1) of
  // its warp's 16 and columns 8 (q >> 1) of each 16-column unit.
  const int quadPair = (lane >> 2) & 3;
  const int inPair = (lane & 3) + ((lane >> 4) << 2);
  // Warp w holds rows 16 (w % kRowWarps) and dimensions kPartDim (w /
  // kRowWarps) (all of them without a split).
  const int rowBase = (warp % kRowWarps) * 16, dimPart = warp / kRowWarps;
  const int dimBase = dimPart * kPartDim;
  const u16 *qFrag = qs + (rowBase + (quadPair & 1) * 8 + inPair) * kQStride + dimBase;
  const u16 *kFrag = ks + ((quadPair >> 1) * 8 + inPair) * kKStride + dimBase;
  u16 *ps = ks;
  const u16 *pFrag = ps + (rowBase + (quadPair & 1) * 8 + inPair) * kPStride;
  const u16 *vFrag = vs + (dimBase + (quadPair >> 1) * 8 + inPair) * kVStride;
  // This lane's accumulator rows: element i is on row[(i >> 1) & 1], at
  // column unit * 16 + colBase + mmaCol(lane, i).
  const int row[2] = {rowBase + (quadPair & 1) * 8 + mmaRow(lane, 0),
                      rowBase + (quadPair & 1) * 8 + mmaRow(lane, 2)};
  const int colBase = (quadPair >> 1) * 8;
  const int pos[2] = {row[0] < validRows ? pos0 + row[0] / kGroup : -1,
                      row[1] < validRows ? pos0 + row[1] / kGroup : -1};
  const int warpLast = min(rowBase + 15, validRows - 1);
  const int warpLastPos = rowBase < validRows ? pos0 + warpLast / kGroup : -1;
  const float scale = static_cast<float>(1.0 / sqrt(static_cast<double>(kDim)));
  // Masked scores and the initial maximum: the lowest finite float, so
  // that e^(s - m) is 0 for a masked key once a row has seen its first key
  // (key 0, in the first tile), and rows past the tile's tokens (never
  // written) stay finite.
  constexpr float kLowest = -3.402823466e38f;

  float o[kDimUnits][8];
  for (int u = 0; u < kDimUnits; ++u)
    for (int i = 0; i < 8; ++i)
      o[u][i] = 0.0f;
  float m[2] = {kLowest, kLowest}, l[2] = {0.0f, 0.0f};

  const int keyTiles = (to - from + kKeys - 1) / kKeys;
  loadKeys(from);
  storeKeys();
  loadValues(from);
  __syncthreads();
  for (int kt = 0; kt < keyTiles; ++kt) {
    const int j0 = from + kt * kKeys;
    const bool active = j0 <= warpLastPos;
    float s[kKeyUnits][8];
    if (active) {
#pragma unroll
      for (int u = 0; u < kKeyUnits; ++u)
#pragma unroll
        for (int i = 0; i < 8; ++i)
          s[u][i] = 0.0f;
#pragma unroll
      for (int k = 0; k < kPartDim; k += 4) {
        const u32 *a = reinterpret_cast<const u32 *>(qFrag + k);
        const u32 a0 = a[0], a1 = a[1];
#pragma unroll
        for (int u = 0; u < kKeyUnits; ++u) {
          const u32 *b = reinterpret_cast<const u32 *>(kFrag + u * 16 * kKStride + k);
          mma884(s[u], a0, a1, b[0], b[1]);
        }
      }
    }
    if (kDimSplit > 1) {
      // Each warp's partial scores, then both parts added in part order.
      if (active)
#pragma unroll
        for (int u = 0; u < kKeyUnits; ++u)
#pragma unroll
          for (int i = 0; i < 8; ++i)
            sPart[(dimPart * kRows + row[(i >> 1) & 1]) * kSStride + u * 16 + colBase +
                  mmaCol(lane, i)] = s[u][i];
      __syncthreads();
      if (active)
#pragma unroll
        for (int u = 0; u < kKeyUnits; ++u)
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            const int at = row[(i >> 1) & 1] * kSStride + u * 16 + colBase + mmaCol(lane, i);
            float sum = sPart[at];
            for (int p = 1; p < kDimSplit; ++p)
              sum += sPart[p * kRows * kSStride + at];
            s[u][i] = sum;
          }
    }
    if (active) {
      // Scaled, masked scores; the tile's row maxima over the 4 lanes that
      // share a row (lane bits 1 and 3 pick the columns).
      float tileMax[2] = {kLowest, kLowest};
#pragma unroll
      for (int u = 0; u < kKeyUnits; ++u)
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const int r = (i >> 1) & 1;
          const int key = j0 + u * 16 + colBase + mmaCol(lane, i);
          s[u][i] = key <= pos[r] && key < to ? s[u][i] * scale : kLowest;
          tileMax[r] = fmaxf(tileMax[r], s[u][i]);
        }
      float correction[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        tileMax[r] = fmaxf(tileMax[r], shuffleXor(tileMax[r], 2));
        tileMax[r] = fmaxf(tileMax[r], shuffleXor(tileMax[r], 8));
        const float mNew = fmaxf(m[r], tileMax[r]);
        correction[r] = expf(m[r] - mNew);
        m[r] = mNew;
        l[r] *= correction[r];
      }
#pragma unroll
      for (int u = 0; u < kDimUnits; ++u)
#pragma unroll
        for (int i = 0; i < 8; ++i)
          o[u][i] *= correction[(i >> 1) & 1];
#pragma unroll
      for (int u = 0; u < kKeyUnits; ++u)
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const int r = (i >> 1) & 1;
          s[u][i] = expf(s[u][i] - m[r]);
          l[r] += s[u][i];
        }
    }
    __syncthreads(); // K_j (S) and V_(j-1) (the last PV) are read
    if (active && dimPart == 0) { // the pair's warps hold the same P
#pragma unroll
      for (int u = 0; u < kKeyUnits; ++u)
#pragma unroll
        for (int i = 0; i < 8; i += 2)
          *reinterpret_cast<u32 *>(ps + row[(i >> 1) & 1] * kPStride + u * 16 + colBase +
                                   mmaCol(lane, i)) = packHalves(s[u][i], s[u][i + 1]);
    }
    storeValues();
    const bool more = kt + 1 < keyTiles;
    if (more)
      loadKeys(j0 + kKeys);
    __syncthreads();
    if (active) {
#pragma unroll
      for (int k = 0; k < kKeys; k += 4) {
        const u32 *a = reinterpret_cast<const u32 *>(pFrag + k);
        const u32 a0 = a[0], a1 = a[1];
#pragma unroll
        for (int u = 0; u < kDimUnits; ++u) {
          const u32 *b = reinterpret_cast<const u32 *>(vFrag + u * 16 * kVStride + k);
          mma884(o[u], a0, a1, b[0], b[1]);
        }
      }
    }
    if (more) {
      __syncthreads(); // P (K's buffer) is read
      storeKeys();
      loadValues(j0 + kKeys);
      __syncthreads();
    }
  }

  // Row sums over the 4 lanes of a row, then O / l.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += shuffleXor(l[r], 2);
    l[r] += shuffleXor(l[r], 8);
  }
  if (tile.splits == 1) {
#pragma unroll
    for (int u = 0; u < kDimUnits; ++u)
#pragma unroll
      for (int i = 0; i < 8; i += 2) {
        const int r = (i >> 1) & 1;
        if (row[r] >= validRows)
          continue;
        const int t = tile.first + row[r] / kGroup, head = kvHead * kGroup + row[r] % kGroup;
        const int d = dimBase + u * 16 + colBase + mmaCol(lane, i);
        *reinterpret_cast<u32 *>(out + static_cast<i64>(t) * VOLT_HEADS * kDim + head * kDim + d) =
            packHalves(o[u][i] / l[r], o[u][i + 1] / l[r]);
      }
    return;
  }
  if (kPool == 0)
    return;

  // A chunk of a split decode (one token: rows are its group's heads):
  // its record, then the sequence's last chunk to finish merges them.
  float *record = workspace + static_cast<i64>(tile.record + tile.split) * kRecord +
                  kvHead * kGroup * kHeadRecord;
#pragma unroll
  for (int u = 0; u < kDimUnits; ++u)
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int r = (i >> 1) & 1;
      if (row[r] < validRows)
        record[row[r] * kHeadRecord + dimBase + u * 16 + colBase + mmaCol(lane, i)] = o[u][i];
    }
  if ((lane & 2) == 0 && colBase == 0 && dimPart == 0)
    for (int r = 0; r < 2; ++r)
      if (row[r] < validRows) {
        record[row[r] * kHeadRecord + kDim] = m[r];
        record[row[r] * kHeadRecord + kDim + 1] = l[r];
      }
  u32 *counter = &arrivals[tile.counter * VOLT_KV_HEADS + kvHead];
  if (!arriveLastOf(counter, tile.splits, &last))
    return;
  // Shared memory (free now) holds the merge's weights and sums.
  mergeSplitRecords<kGroup, kDim, VOLT_HEADS, kPool, kThreads>(
      workspace + static_cast<i64>(tile.record) * kRecord + kvHead * kGroup * kHeadRecord,
      tile.splits, out + static_cast<i64>(tile.first) * VOLT_HEADS * kDim + kvHead * kGroup * kDim,
      reinterpret_cast<float *>(shared), counter);
}
