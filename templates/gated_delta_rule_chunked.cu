// templates/gated_delta_rule_chunked.cu - GatedDeltaRule for steps that
// carry prefill chunks: the chunked (WY) form of the gated delta rule on
// tensor cores (mma.m8n8k4), the same op as gated_delta_rule.cu.
//
// gated_delta_rule.cu walks a sequence's tokens one at a time: six block
// barriers and two serial sums per token, whatever the step. Here a
// sequence's tokens are taken CHUNK at a time. With the chunk's q (L2-normed,
// scaled by 1/sqrt(dk)), k (L2-normed), v, beta, and G_i the cumulative log
// decay of its first i + 1 tokens, the recurrence over the chunk from state
// S (dk x dv) is, exactly:
//
//   L    = -diag(beta) ((K K^T) . Gamma), strictly lower,  Gamma_ij = e^(G_i - G_j)
//   T    = (I - L)^-1                                   (lower triangular)
//   Y_i  = beta_i (v_i - e^(G_i) S^T k_i)
//   U    = T Y                                          (the chunk's corrected values)
//   O    = diag(e^G) Q S + ((Q K^T) . Gamma, lower incl. diagonal) U
//   S'   = e^(G_last) S + (K . e^(G_last - G))^T U
//
// (transformers' torch_chunk_gated_delta_rule computes the same, with
// T (beta K e^G) S in place of T (beta e^G K S)). Every exponent is <= 0, so
// nothing overflows. The products run on mma.m8n8k4 with FP16 operands and
// FP32 accumulation: K K^T, Q K^T, K S, Q S, T Y, P U and the state update;
// T is solved in FP32 (16 x 16 diagonal blocks by one warp each, then the
// blocks below them); S is kept in FP32 in the accumulators of the update
// and given to the products as FP16. So the op is not bit for bit the cpu
// op's, which walks tokens in FP32: tests/unit/codegen (SimtGdnChunked) and
// tests/gpu bound the difference (docs/perf/kernels.md, Tolerances).
//
// A chunk ends after CHUNK tokens, at the sequence's end, or after a token
// whose snapshot slot is set (a speculative verify step's draft-carrying
// tokens: the state after it is copied there), so decode sequences in a
// mixed step and verify steps are chunks of one or a few tokens.
//
// One block per (sequence, value head, DV_SPLIT part), THREADS = 256 (8
// warps); warps take the 16 x 16 units of each product round-robin (their
// quad pairs laid out as in common/gemm.cuh). With DV_SPLIT > 1 each block
// holds dv / DV_SPLIT columns of S, V, U and O (L, T and P it computes as
// the others do): a long prompt of one sequence then keeps DV_SPLIT times
// more SMs busy. The gated RMSNorm of the output is taken over the head's
// dv values: row sums of squares per unit, added in unit order; split, each
// block writes its columns of O unnormed and the last of the head's blocks
// to finish (common/blocks.cuh) norms the rows in place, a warp per token.
// Shared memory (halves unless said; strides padded by 4 halves so that
// the 8-byte fragment loads of 8 rows fall on distinct banks):
//   Q, K [CHUNK][dk + 4]; V^T, then Y^T, then U^T [dv][CHUNK + 4];
//   T, then P [CHUNK][CHUNK + 4]; L and T in FP32 [CHUNK][CHUNK + 1], then
//   S^T [dv][dk + 4]; G, beta, e^(G_last - G), row sums (FP32).
// Constants: KEY_HEADS, VALUE_HEADS, KEY_DIM, VALUE_DIM (multiples of 16,
// at most 128), CHUNK (64), DV_SPLIT (1 when absent) and MAX_SEQS (the
// most sequences of a step: its counters). Launch: grid.x = S, grid.y =
// VALUE_HEADS, grid.z = DV_SPLIT, THREADS = 256, dynamic shared memory as
// gatedDeltaChunkedShape (dialects/Transforms/KernelRules.h) says.
#include "common/blocks.cuh"
#include "common/volt.cuh"

#ifndef VOLT_DV_SPLIT
#define VOLT_DV_SPLIT 1
#endif
#ifndef VOLT_MAX_SEQS
#define VOLT_MAX_SEQS 1
#endif

using namespace volt;

namespace gdc {

constexpr int kHk = VOLT_KEY_HEADS, kHv = VOLT_VALUE_HEADS, kDk = VOLT_KEY_DIM,
              kDv = VOLT_VALUE_DIM, kC = VOLT_CHUNK, kThreads = VOLT_THREADS;
/// Blocks per (sequence, value head), each over kDvs of the value
/// dimensions (its columns of S, V, U and O).
constexpr int kSplit = VOLT_DV_SPLIT, kDvs = kDv / kSplit;
constexpr int kWarps = kThreads / 32, kRep = kHv / kHk;
constexpr int kWidth = 2 * kHk * kDk + kHv * kDv;
constexpr int kQkStride = kDk + 4, kTStride = kC + 4, kSStride = kDk + 4, kAStride = kC + 1;
constexpr int kCUnits = kC / 16, kDkUnits = kDk / 16, kDvUnits = kDvs / 16;
/// Units of the C x dv products (K S, T Y, O) and of the state (dk x dv).
constexpr int kRowUnits = kCUnits * kDvUnits, kStateUnits = kDkUnits * kDvUnits;
constexpr int kRowUnitsPerWarp = (kRowUnits + kWarps - 1) / kWarps;
constexpr int kStateUnitsPerWarp = (kStateUnits + kWarps - 1) / kWarps;
constexpr int kSquareUnits = kCUnits * kCUnits;
constexpr int kSquareUnitsPerWarp = (kSquareUnits + kWarps - 1) / kWarps;
static_assert(kDk % 16 == 0 && kDv % 16 == 0 && kDk <= 128 && kDv <= 128, "head dims");
static_assert(kDv % kSplit == 0 && kDvs % 16 == 0, "value dims split in multiples of 16");
static_assert(kC % 32 == 0 && kC <= 64 && kCUnits <= kWarps, "chunk");
static_assert(kThreads == 256, "the launch's shape");

constexpr int kQBytes = kC * kQkStride * 2, kVBytes = kDvs * kTStride * 2,
              kTBytes = kC * kTStride * 2;
constexpr int kABytes = kC * kAStride * 4, kSBytes = kDvs * kSStride * 2;
constexpr int kXBytes = kABytes > kSBytes ? kABytes : kSBytes;
/// FP32 scalars: G, beta, e^(G_last - G), then the row sums [C][dv units].
constexpr int kSmallFloats = 3 * kC + kC * kDvUnits;

/// The warp's 16 x 16 unit of C += A B over K: `a` is the unit's first row
/// of A (row-major, `lda` halves), `bt` the unit's first column of B stored
/// as a row of B^T (`ldb` halves); `k0`..`k1` (multiples of 4) the range.
VOLT_DEVICE void unitMma(float (&c)[8], const u16 *a, int lda, const u16 *bt, int ldb, int k0,
                         int k1) {
  const int lane = static_cast<int>(laneId());
  const int quadPair = (lane >> 2) & 3, inPair = (lane & 3) + ((lane >> 4) << 2);
  const u16 *af = a + ((quadPair & 1) * 8 + inPair) * lda;
  const u16 *bf = bt + ((quadPair >> 1) * 8 + inPair) * ldb;
  for (int k = k0; k < k1; k += 4) {
    const u32 *pa = reinterpret_cast<const u32 *>(af + k);
    const u32 *pb = reinterpret_cast<const u32 *>(bf + k);
    mma884(c, pa[0], pa[1], pb[0], pb[1]);
  }
}

/// Row (within its unit) of this lane's accumulator element i.
VOLT_DEVICE int unitRow(int lane, int i) { return ((lane >> 2) & 1) * 8 + mmaRow(lane, i); }
/// Column (within its unit) of this lane's accumulator element i.
VOLT_DEVICE int unitCol(int lane, int i) { return ((lane >> 3) & 1) * 8 + mmaCol(lane, i); }

VOLT_DEVICE void zero(float (&c)[8]) {
#pragma unroll
  for (int i = 0; i < 8; ++i)
    c[i] = 0.0f;
}

/// Blocks of a (sequence, value head) done, for the last to normalize.
__device__ u32 arrivals[kSplit > 1 ? VOLT_MAX_SEQS * kHv : 1];

} // namespace gdc

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    gated_delta_rule_chunked(const u16 *qkv, const u16 *gates, const u16 *z, const float *aLog,
                             const float *dtBias, const u16 *normWeight, float *state,
                             const int *seqStarts, const int *contextLens,
                             const int *stateSlots, const int *snapshotSlots, u16 *out, int seqs,
                             float eps) {
  using namespace gdc;
  const int s = blockIdx.x, h = blockIdx.y, kh = h / kRep, j0 = blockIdx.z * kDvs;
  // (A step holds at most max_num_seqs sequences, the counters' count.)
  if (s >= seqs || (kSplit > 1 && s >= VOLT_MAX_SEQS))
    return;
  VOLT_DYNAMIC_SHARED(u8, smem);
  u16 *qs = reinterpret_cast<u16 *>(smem);
  u16 *ks = reinterpret_cast<u16 *>(smem + kQBytes);
  u16 *vt = reinterpret_cast<u16 *>(smem + 2 * kQBytes);
  u16 *tp = reinterpret_cast<u16 *>(smem + 2 * kQBytes + kVBytes);
  u8 *x = smem + 2 * kQBytes + kVBytes + kTBytes;
  float *lt = reinterpret_cast<float *>(x); // L, then T, in FP32
  u16 *st = reinterpret_cast<u16 *>(x);     // S^T in FP16
  float *gs = reinterpret_cast<float *>(x + kXBytes);
  float *betas = gs + kC, *tailDecay = betas + kC, *rowSquares = tailDecay + kC;
  float *scratch = reinterpret_cast<float *>(tp); // T's blocks below the diagonal, before T

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(laneId());
  const int first = seqStarts[s], last = seqStarts[s + 1], slot = stateSlots[s];
  const bool fresh = contextLens[s] - (last - first) == 0 || slot < 0;
  float *kept = slot >= 0 ? state + (static_cast<i64>(slot) * kHv + h) * kDk * kDv : nullptr;
  const float decayRate = -expf(aLog[h]), bias = dtBias[h];
  const float qScale = 1.0f / sqrtf(static_cast<float>(kDk));

  // The state, unit u = warp + kWarps * j of S [dk][dv]: rows 16 (u /
  // kDvUnits), columns 16 (u % kDvUnits).
  float S[kStateUnitsPerWarp][8];
#pragma unroll
  for (int j = 0; j < kStateUnitsPerWarp; ++j) {
    const int u = warp + kWarps * j;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int r = (u / kDvUnits) * 16 + unitRow(lane, i), c = (u % kDvUnits) * 16 + unitCol(lane, i);
      S[j][i] = u < kStateUnits && !fresh ? kept[static_cast<i64>(r) * kDv + j0 + c] : 0.0f;
    }
  }

  for (int c0 = first; c0 < last;) {
    // The chunk: up to kC tokens, ending after one whose state is copied.
    int n = 0;
    while (n < kC && c0 + n < last) {
      ++n;
      if (snapshotSlots[c0 + n - 1] >= 0)
        break;
    }

    // q and k, one warp per token: L2 norms in FP32, stored FP16; the
    // gates; v transposed. Rows past n are zeros (they add nothing).
    for (int r = warp; r < kC; r += kWarps) {
      const bool valid = r < n;
      const u16 *row = qkv + static_cast<i64>(c0 + (valid ? r : 0)) * kWidth;
      float q[(kDk + 31) / 32], k[(kDk + 31) / 32], sq = 0.0f, sk = 0.0f;
#pragma unroll
      for (int e = 0; e < (kDk + 31) / 32; ++e) {
        const int i = lane + 32 * e;
        q[e] = valid && i < kDk ? halfToFloat(row[kh * kDk + i]) : 0.0f;
        k[e] = valid && i < kDk ? halfToFloat(row[kHk * kDk + kh * kDk + i]) : 0.0f;
        sq += q[e] * q[e];
        sk += k[e] * k[e];
      }
      sq = warpSum(sq);
      sk = warpSum(sk);
      const float invQ = 1.0f / sqrtf(sq + 1e-6f), invK = 1.0f / sqrtf(sk + 1e-6f);
#pragma unroll
      for (int e = 0; e < (kDk + 31) / 32; ++e) {
        const int i = lane + 32 * e;
        if (i < kDk) {
          qs[r * kQkStride + i] = floatToHalf((q[e] * invQ) * qScale);
          ks[r * kQkStride + i] = floatToHalf(k[e] * invK);
        }
      }
      if (lane == 0) {
        float g = 0.0f, beta = 0.0f;
        if (valid) {
          const i64 t = c0 + r;
          const float b = halfToFloat(gates[t * 2 * kHv + h]);
          float a = halfToFloat(gates[t * 2 * kHv + kHv + h]) + bias;
          a = a > 20.0f ? a : log1pf(expf(a)); // torch's softplus
          g = decayRate * a;
          beta = 1.0f / (1.0f + expf(-b));
        }
        gs[r] = g;
        betas[r] = beta;
      }
    }
    for (int e = threadIdx.x; e < kC * kDvs; e += kThreads) {
      const int r = e / kDvs, j = e % kDvs;
      vt[j * kTStride + r] =
          r < n ? qkv[static_cast<i64>(c0 + r) * kWidth + 2 * kHk * kDk + h * kDv + j0 + j]
                : u16{0};
    }
    __syncthreads();
    // G: the inclusive cumulative sum (warp 0, a Hillis-Steele scan over
    // the kC / 32 pieces), and e^(G_last - G).
    if (warp == 0) {
      float carry = 0.0f;
      for (int p = 0; p < kC / 32; ++p) {
        float v = gs[32 * p + lane];
        for (int d = 1; d < 32; d <<= 1) {
          const float o = shuffle(v, lane >= d ? lane - d : 0);
          if (lane >= d)
            v += o;
        }
        gs[32 * p + lane] = v + carry;
        carry += shuffle(v, 31);
      }
    }
    __syncthreads();
    const float gLast = gs[n - 1];
    for (int r = threadIdx.x; r < kC; r += kThreads)
      tailDecay[r] = expf(gLast - gs[r]);

    // L = -beta_i (k_i . k_j) e^(G_i - G_j), j < i, in FP32.
#pragma unroll
    for (int j = 0; j < kSquareUnitsPerWarp; ++j) {
      const int u = warp + kWarps * j, bi = u / kCUnits, bj = u % kCUnits;
      if (u >= kSquareUnits || bj > bi)
        continue;
      float c[8];
      zero(c);
      unitMma(c, ks + bi * 16 * kQkStride, kQkStride, ks + bj * 16 * kQkStride, kQkStride, 0, kDk);
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int r = bi * 16 + unitRow(lane, i), col = bj * 16 + unitCol(lane, i);
        lt[r * kAStride + col] = col < r ? -betas[r] * c[i] * expf(gs[r] - gs[col]) : 0.0f;
      }
    }
    __syncthreads();

    // T = (I - L)^-1. Diagonal blocks first, one warp each (the other warps
    // repeat one so that the barrier below is reached by all): lane c < 16
    // holds column c of N = T - I, row by row (N_rc = L_rc + sum_j<r L_rj
    // N_jc; N_jc is 0 for j <= c), written over L once every lane has read.
    {
      const int d = (warp % kCUnits) * 16, c = lane & 15;
      float col[16];
#pragma unroll
      for (int r = 0; r < 16; ++r) {
        float v = 0.0f;
#pragma unroll
        for (int j = 0; j < r; ++j)
          v += lt[(d + r) * kAStride + d + j] * col[j];
        col[r] = c < r ? lt[(d + r) * kAStride + d + c] + v : 0.0f;
      }
      __syncthreads();
      if (warp < kCUnits && lane < 16)
#pragma unroll
        for (int r = 0; r < 16; ++r)
          lt[(d + r) * kAStride + d + c] = col[r] + (r == c ? 1.0f : 0.0f);
    }
    __syncthreads();
    // The blocks below the diagonal, a block row at a time: T_ij = T_ii
    // sum_{m=j}^{i-1} L_im T_mj (T_mj of earlier block rows are final).
    for (int bi = 1; bi < kCUnits; ++bi) {
      for (int e = threadIdx.x; e < bi * 256; e += kThreads) {
        const int bj = e / 256, r = (e / 16) % 16, c = e % 16;
        float v = 0.0f;
        for (int m = bj * 16; m < bi * 16; ++m)
          v += lt[(bi * 16 + r) * kAStride + m] * lt[m * kAStride + bj * 16 + c];
        scratch[e] = v;
      }
      __syncthreads();
      for (int e = threadIdx.x; e < bi * 256; e += kThreads) {
        const int bj = e / 256, r = (e / 16) % 16, c = e % 16;
        float v = 0.0f;
        for (int m = 0; m <= r; ++m)
          v += lt[(bi * 16 + r) * kAStride + bi * 16 + m] * scratch[bj * 256 + m * 16 + c];
        lt[(bi * 16 + r) * kAStride + bj * 16 + c] = v;
      }
      __syncthreads();
    }
    // T to FP16 (zeros above the diagonal), then S^T to FP16 over L's
    // bytes.
    for (int e = threadIdx.x; e < kC * kC; e += kThreads) {
      const int r = e / kC, c = e % kC;
      tp[r * kTStride + c] = c <= r ? floatToHalf(lt[r * kAStride + c]) : u16{0};
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kStateUnitsPerWarp; ++j) {
      const int u = warp + kWarps * j;
      if (u < kStateUnits)
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const int r = (u / kDvUnits) * 16 + unitRow(lane, i),
                    c = (u % kDvUnits) * 16 + unitCol(lane, i);
          st[c * kSStride + r] = floatToHalf(S[j][i]);
        }
    }
    __syncthreads();

    // Y^T over V^T: Y_i = beta_i (v_i - e^(G_i) (K S)_i); each element is
    // read and written by the thread that owns it.
#pragma unroll
    for (int j = 0; j < kRowUnitsPerWarp; ++j) {
      const int u = warp + kWarps * j, bi = u / kDvUnits, bj = u % kDvUnits;
      if (u >= kRowUnits)
        continue;
      float c[8];
      zero(c);
      unitMma(c, ks + bi * 16 * kQkStride, kQkStride, st + bj * 16 * kSStride, kSStride, 0, kDk);
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int r = bi * 16 + unitRow(lane, i), col = bj * 16 + unitCol(lane, i);
        u16 &v = vt[col * kTStride + r];
        v = floatToHalf(betas[r] * (halfToFloat(v) - expf(gs[r]) * c[i]));
      }
    }
    __syncthreads();
    // U = T Y over Y^T: warp w takes column blocks w, w + kWarps, ..., each
    // from its last row block up (T is lower: row block bi reads Y's rows
    // up to its own), so each unit is written over Y only once the warp's
    // later units have read it and no other warp reads that column block.
    for (int bj = warp; bj < kDvUnits; bj += kWarps)
      for (int bi = kCUnits - 1; bi >= 0; --bi) {
        float c[8];
        zero(c);
        unitMma(c, tp + bi * 16 * kTStride, kTStride, vt + bj * 16 * kTStride, kTStride, 0,
                (bi + 1) * 16);
#pragma unroll
        for (int i = 0; i < 8; ++i)
          vt[(bj * 16 + unitCol(lane, i)) * kTStride + bi * 16 + unitRow(lane, i)] =
              floatToHalf(c[i]);
      }
    __syncthreads();
    // P = (Q K^T) . Gamma on and below the diagonal, over T.
#pragma unroll
    for (int j = 0; j < kSquareUnitsPerWarp; ++j) {
      const int u = warp + kWarps * j, bi = u / kCUnits, bj = u % kCUnits;
      if (u >= kSquareUnits)
        continue;
      float c[8];
      zero(c);
      if (bj <= bi)
        unitMma(c, qs + bi * 16 * kQkStride, kQkStride, ks + bj * 16 * kQkStride, kQkStride, 0,
                kDk);
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int r = bi * 16 + unitRow(lane, i), col = bj * 16 + unitCol(lane, i);
        tp[r * kTStride + col] = col <= r ? floatToHalf(c[i] * expf(gs[r] - gs[col])) : u16{0};
      }
    }
    __syncthreads();

    // O = e^G (Q S) + P U, its rows' sums of squares per unit (over the 4
    // lanes of a row: lane bits 1 and 3), then the gated RMSNorm.
    float O[kRowUnitsPerWarp][8];
#pragma unroll
    for (int j = 0; j < kRowUnitsPerWarp; ++j) {
      const int u = warp + kWarps * j, bi = u / kDvUnits, bj = u % kDvUnits;
      zero(O[j]);
      if (u >= kRowUnits)
        continue;
      unitMma(O[j], qs + bi * 16 * kQkStride, kQkStride, st + bj * 16 * kSStride, kSStride, 0, kDk);
#pragma unroll
      for (int i = 0; i < 8; ++i)
        O[j][i] *= expf(gs[bi * 16 + unitRow(lane, i)]);
      unitMma(O[j], tp + bi * 16 * kTStride, kTStride, vt + bj * 16 * kTStride, kTStride, 0,
              (bi + 1) * 16);
      float squares[2] = {0.0f, 0.0f};
#pragma unroll
      for (int i = 0; i < 8; ++i)
        squares[(i >> 1) & 1] += O[j][i] * O[j][i];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        squares[half] += shuffleXor(squares[half], 2);
        squares[half] += shuffleXor(squares[half], 8);
      }
      if ((lane & 10) == 0)
#pragma unroll
        for (int half = 0; half < 2; ++half)
          rowSquares[(bi * 16 + unitRow(lane, 2 * half)) * kDvUnits + bj] = squares[half];
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kRowUnitsPerWarp; ++j) {
      const int u = warp + kWarps * j, bi = u / kDvUnits, bj = u % kDvUnits;
      if (u >= kRowUnits)
        continue;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int r = bi * 16 + unitRow(lane, i), col = bj * 16 + unitCol(lane, i);
        if (r >= n)
          continue;
        const i64 at = (static_cast<i64>(c0 + r) * kHv + h) * kDv + j0 + col;
        if (kSplit > 1) {
          // The row's norm needs every block's columns: O as it is, normed
          // by the last block of the (sequence, head) below.
          out[at] = floatToHalf(O[j][i]);
          continue;
        }
        float squares = 0.0f;
        for (int b = 0; b < kDvUnits; ++b)
          squares += rowSquares[r * kDvUnits + b];
        const float inv = 1.0f / sqrtf(squares / static_cast<float>(kDv) + eps);
        const float zj = halfToFloat(z[at]);
        out[at] = floatToHalf(halfToFloat(normWeight[col]) * (O[j][i] * inv) *
                              (zj / (1.0f + expf(-zj))));
      }
    }

    // S' = e^(G_last) S + (K . e^(G_last - G))^T U: A is K^T, 4 tokens of
    // one key row per fragment, each scaled by its decay.
    const float chunkDecay = expf(gLast);
    const int kEnd = (n + 3) & ~3;
#pragma unroll
    for (int j = 0; j < kStateUnitsPerWarp; ++j) {
      const int u = warp + kWarps * j, bi = u / kDvUnits, bj = u % kDvUnits;
      if (u >= kStateUnits)
        continue;
#pragma unroll
      for (int i = 0; i < 8; ++i)
        S[j][i] *= chunkDecay;
      const int quadPair = (lane >> 2) & 3, inPair = (lane & 3) + ((lane >> 4) << 2);
      const int keyRow = bi * 16 + (quadPair & 1) * 8 + inPair;
      const u16 *bf = vt + (bj * 16 + (quadPair >> 1) * 8 + inPair) * kTStride;
      for (int k = 0; k < kEnd; k += 4) {
        u16 a[4];
#pragma unroll
        for (int e = 0; e < 4; ++e)
          a[e] = floatToHalf(halfToFloat(ks[(k + e) * kQkStride + keyRow]) * tailDecay[k + e]);
        const u32 *pb = reinterpret_cast<const u32 *>(bf + k);
        mma884(S[j], static_cast<u32>(a[0]) | (static_cast<u32>(a[1]) << 16),
               static_cast<u32>(a[2]) | (static_cast<u32>(a[3]) << 16), pb[0], pb[1]);
      }
    }
    const int snap = snapshotSlots[c0 + n - 1];
    if (snap >= 0) { // a copy of the state after this chunk's last token
      float *copy = state + (static_cast<i64>(snap) * kHv + h) * kDk * kDv;
#pragma unroll
      for (int j = 0; j < kStateUnitsPerWarp; ++j) {
        const int u = warp + kWarps * j;
        if (u < kStateUnits)
#pragma unroll
          for (int i = 0; i < 8; ++i)
            copy[static_cast<i64>((u / kDvUnits) * 16 + unitRow(lane, i)) * kDv + j0 +
                 (u % kDvUnits) * 16 + unitCol(lane, i)] = S[j][i];
      }
    }
    __syncthreads(); // the chunk's buffers are rewritten by the next
    c0 += n;
  }
  if (kept)
#pragma unroll
    for (int j = 0; j < kStateUnitsPerWarp; ++j) {
      const int u = warp + kWarps * j;
      if (u < kStateUnits)
#pragma unroll
        for (int i = 0; i < 8; ++i)
          kept[static_cast<i64>((u / kDvUnits) * 16 + unitRow(lane, i)) * kDv + j0 +
               (u % kDvUnits) * 16 + unitCol(lane, i)] = S[j][i];
    }
  if (kSplit == 1)
    return;
  // The last of the head's kSplit blocks to finish norms every token's row
  // of O, which the others wrote: a warp per token, sums of squares over
  // the whole row in a fixed order, then the gated RMSNorm in place.
  __shared__ int lastBlock;
  u32 *counter = &arrivals[s * kHv + h];
  if (!arriveLastOf(counter, kSplit, &lastBlock))
    return;
  for (int t = first + warp; t < last; t += kWarps) {
    u16 *row = out + (static_cast<i64>(t) * kHv + h) * kDv;
    float o[(kDv + 31) / 32], squares = 0.0f;
#pragma unroll
    for (int e = 0; e < (kDv + 31) / 32; ++e) {
      const int c = lane + 32 * e;
      o[e] = c < kDv ? halfToFloat(loadCoherentHalf(row + c)) : 0.0f;
      squares += o[e] * o[e];
    }
    squares = warpSum(squares);
    const float inv = 1.0f / sqrtf(squares / static_cast<float>(kDv) + eps);
#pragma unroll
    for (int e = 0; e < (kDv + 31) / 32; ++e) {
      const int c = lane + 32 * e;
      if (c >= kDv)
        continue;
      const float zj = halfToFloat(z[(static_cast<i64>(t) * kHv + h) * kDv + c]);
      row[c] = floatToHalf(halfToFloat(normWeight[c]) * (o[e] * inv) * (zj / (1.0f + expf(-zj))));
    }
  }
  if (threadIdx.x == 0)
    *counter = 0;
}
