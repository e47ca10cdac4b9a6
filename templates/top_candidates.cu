// templates/top_candidates.cu - TopCandidates: the K largest logits of each
// sequence's row and the row's normalisers, so that a step's sampling needs
// K (id, logit) pairs per sequence instead of the whole vocabulary row.
//
// Per row r (one block each), from logits f32[S, VOCAB] and the sequences'
// temperatures f32[S]:
//   ids[r][0..K), values[r][0..K)  the K largest logits, largest first,
//                                  equal logits by lower id first (NaN never
//                                  taken: id -1, value NaN, only in a row
//                                  with fewer than K non-NaN logits);
//   stats[r] = (M, sum e^(x - M), sum e^((x - M) / T_r))   over the non-NaN
//                                  logits, M their largest; the last is 1
//                                  when T_r <= 0 (greedy).
// The host then samples exactly whenever the request's filters keep only
// candidates (top_k <= K, or a top_p / min_p set inside them) and reports
// logprobs from the normalisers; runtime/cpu/TopCandidates.h is the
// reference.
//
// Selection is a radix select on order-preserving 32-bit keys: four passes
// of 256-bin shared-memory histograms find the K-th largest key tau and how
// many keys equal to it to take; one more pass takes every key above tau
// (atomic slots, any order) and the lowest-id keys equal to tau (a block-wide
// scan in id order), and a bitonic sort of the K pairs orders them. The
// row is read seven times (max, sums, four digits, gather), which for a
// 151,936-entry row is 4 MB of mostly L2 traffic per block, against 600 KB
// crossing PCIe per row without it.
//
// Constants: VOCAB, K (a power of two, at most THREADS and 256). Launch:
// grid.x = S, THREADS threads (a multiple of 32, at most 1024).
#include "common/volt.cuh"

using namespace volt;

namespace {

constexpr int kWarps = VOLT_THREADS / 32;
constexpr int kK = VOLT_K;
static_assert(kK > 0 && (kK & (kK - 1)) == 0 && kK <= VOLT_THREADS && kK <= 256,
              "K must be a power of two, at most THREADS and 256");
static_assert(VOLT_VOCAB >= kK, "the vocabulary must hold K logits");

VOLT_DEVICE u32 bitsOf(float x) {
#if defined(__CUDACC__)
  u32 b;
  asm("mov.b32 %0, %1;" : "=r"(b) : "f"(x));
  return b;
#else
  u32 b;
  __builtin_memcpy(&b, &x, 4);
  return b;
#endif
}

VOLT_DEVICE float floatOf(u32 b) {
#if defined(__CUDACC__)
  float x;
  asm("mov.b32 %0, %1;" : "=f"(x) : "r"(b));
  return x;
#else
  float x;
  __builtin_memcpy(&x, &b, 4);
  return x;
#endif
}

/// A key whose unsigned order is the logits' order (-0 and +0 are one
/// key); NaN is 0, below -inf.
VOLT_DEVICE u32 keyOf(float x) {
  if (!(x == x))
    return 0;
  if (x == 0.0f)
    return 0x80000000u;
  const u32 b = bitsOf(x);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

/// The largest over the block; every thread gets it.
VOLT_DEVICE float blockMax(float v, float *scratch) {
  v = warpMax(v);
  const int warp = threadIdx.x / 32;
  __syncthreads();
  if (laneId() == 0)
    scratch[warp] = v;
  __syncthreads();
  float m = scratch[0];
  for (int w = 1; w < kWarps; ++w)
    m = fmaxf(m, scratch[w]);
  return m;
}

} // namespace

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    top_candidates(const float *logits, const float *temperatures, int *ids, float *values,
                   float *stats, int seqs) {
  __shared__ float scratch[kWarps];
  __shared__ int histogram[256];
  __shared__ u32 prefixKey;
  __shared__ int wanted, above, taken;
  __shared__ int warpCounts[kWarps];
  __shared__ u64 pairs[kK];
  const int r = blockIdx.x;
  if (r >= seqs)
    return;
  const float *row = logits + static_cast<i64>(r) * VOLT_VOCAB;
  const int lane = static_cast<int>(laneId()), warp = threadIdx.x / 32;

  // The largest logit (NaN ignored: fmaxf takes the other operand).
  float m = floatOf(0xff800000u); // -inf
  for (int i = threadIdx.x; i < VOLT_VOCAB; i += VOLT_THREADS)
    m = fmaxf(m, row[i]);
  m = blockMax(m, scratch);

  // The normalisers, each thread's partial sum in id order, warps in order.
  const float t = temperatures[r];
  float sum1 = 0.0f, sumT = 0.0f;
  for (int i = threadIdx.x; i < VOLT_VOCAB; i += VOLT_THREADS) {
    const float x = row[i];
    if (!(x == x))
      continue;
    sum1 += expf(x - m);
    if (t > 0.0f)
      sumT += expf((x - m) / t);
  }
  sum1 = blockSum<kWarps>(sum1, scratch);
  sumT = blockSum<kWarps>(sumT, scratch);

  // Radix select of the K-th largest key, 8 bits at a time from the top.
  if (threadIdx.x == 0) {
    prefixKey = 0;
    wanted = kK;
  }
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < 256; b += VOLT_THREADS)
      histogram[b] = 0;
    __syncthreads();
    const u32 prefix = prefixKey;
    // Keys that agree with the prefix above this digit.
    const u32 high = shift == 24 ? 0u : ~0u << (shift + 8);
    for (int i = threadIdx.x; i < VOLT_VOCAB; i += VOLT_THREADS) {
      const u32 key = keyOf(row[i]);
      if ((key & high) == prefix)
        atomicAdd(&histogram[(key >> shift) & 255u], 1);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      int want = wanted, bin = 255;
      for (; bin > 0 && histogram[bin] < want; --bin)
        want -= histogram[bin];
      prefixKey = prefix | (static_cast<u32>(bin) << shift);
      wanted = want;
    }
    __syncthreads();
  }
  // tau: `wanted` keys equal to it are taken (the lowest ids), every key
  // above it too (K - wanted of them).
  const u32 threshold = prefixKey;
  const int want = wanted;
  if (threadIdx.x == 0) {
    above = 0;
    taken = 0;
  }
  __syncthreads();
  for (int base = 0; base < VOLT_VOCAB; base += VOLT_THREADS) {
    const int i = base + static_cast<int>(threadIdx.x);
    const u32 key = i < VOLT_VOCAB ? keyOf(row[i]) : 0u;
    const bool inRow = i < VOLT_VOCAB;
    if (inRow && key > threshold) {
      const int slot = atomicAdd(&above, 1);
      pairs[slot] = (static_cast<u64>(key) << 32) | static_cast<u32>(~i);
    }
    const u32 equal = warpBallot(inRow && key == threshold);
    if (lane == 0)
      warpCounts[warp] = popCount(equal);
    __syncthreads();
    int rank = taken + popCount(equal & lanesBelow()), tile = 0;
    for (int w = 0; w < kWarps; ++w) {
      if (w < warp)
        rank += warpCounts[w];
      tile += warpCounts[w];
    }
    if (inRow && key == threshold && rank < want)
      pairs[kK - want + rank] = (static_cast<u64>(key) << 32) | static_cast<u32>(~i);
    __syncthreads();
    if (threadIdx.x == 0)
      taken += tile;
  }
  __syncthreads();

  // Largest key first; equal keys: larger ~id, that is lower id, first.
  for (int size = 2; size <= kK; size <<= 1)
    for (int stride = size / 2; stride > 0; stride >>= 1) {
      const int i = static_cast<int>(threadIdx.x), j = i ^ stride;
      if (i < kK && j > i) {
        const u64 a = pairs[i], b = pairs[j];
        const bool descending = (i & size) == 0;
        if (descending ? a < b : a > b) {
          pairs[i] = b;
          pairs[j] = a;
        }
      }
      __syncthreads();
    }

  for (int c = threadIdx.x; c < kK; c += VOLT_THREADS) {
    const u64 p = pairs[c];
    const int id = static_cast<int>(~static_cast<u32>(p));
    const bool valid = static_cast<u32>(p >> 32) != 0;
    ids[static_cast<i64>(r) * kK + c] = valid ? id : -1;
    values[static_cast<i64>(r) * kK + c] = valid ? row[id] : floatOf(0x7fc00000u);
  }
  if (threadIdx.x == 0) {
    stats[static_cast<i64>(r) * 3] = m;
    stats[static_cast<i64>(r) * 3 + 1] = sum1;
    stats[static_cast<i64>(r) * 3 + 2] = t > 0.0f ? sumT : 1.0f;
  }
}
