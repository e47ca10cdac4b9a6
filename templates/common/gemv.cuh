// templates/common/gemv.cuh - the decode-size GEMM shared by nvfp4_gemv,
// dense_gemv and their MoE forms.
//
// At 1-8 tokens a linear layer is a stream over its weights: every weight
// byte is read once, and the kernel must keep enough 16-byte loads in flight
// to saturate HBM while spending few instructions per weight. Volta's FP32
// units cannot convert FP16 to FP32 at that rate, so the products go to the
// tensor cores: mma.m8n8k4 takes FP16 weights (8 rows) times FP16
// activations (up to 8 tokens) and accumulates in FP32 with exact products,
// which is the cpu backend's arithmetic. Unused token columns cost nothing
// that matters: the tensor cores are idle in a memory-bound kernel anyway.
//
// Work split. A block owns one tile of 8 weight rows (4 gate + 4 up rows for
// the fused SiluMul epilogue) and its `Warps` warps split K. In a warp each
// quad pair (8 lanes) runs its own 8x8x4 MMAs; lane l holds weight row
// (l & 3) + 4 (l >> 4) and token column (l & 3) + 4 (l >> 4), and the four
// quad pairs take consecutive slices of K. One warp load therefore covers 64
// contiguous bytes of each of 8 rows: whole 32-byte sectors, 100 % of them
// used. Partial sums are added across quad pairs with shuffles and across
// warps through shared memory once, after the loop; the main loop touches
// no shared memory.
#pragma once

#include "common/nvfp4.cuh"

namespace volt::gemv {

/// The constants one instantiation fixes.
template <bool Nvfp4_, int K_, int N_, int Warps_, bool Silu_, bool OutF32_, bool HasBias_,
          int Parts_, int PartEnd0_, int PartEnd1_, int PartEnd2_, bool Fp8_ = false>
struct Config {
  static constexpr bool Nvfp4 = Nvfp4_;
  /// FP8 E4M3 weights (one byte each) with a scale per row (fp8_gemv).
  static constexpr bool Fp8 = Fp8_;
  static constexpr int K = K_;
  /// Rows of the weight (of one expert), all parts together.
  static constexpr int N = N_;
  static constexpr int Warps = Warps_;
  static constexpr bool Silu = Silu_;
  static constexpr bool OutF32 = OutF32_;
  static constexpr bool HasBias = HasBias_;
  static constexpr int Parts = Parts_;
  /// Row where parts 0, 1, 2 end (the last part ends at N).
  static constexpr int PartEnd0 = PartEnd0_, PartEnd1 = PartEnd1_, PartEnd2 = PartEnd2_;
  /// Elements of K one lane covers per chunk: a 16-byte weight load.
  static constexpr int LaneChunk = Nvfp4 ? 32 : Fp8 ? 16 : 8;
  static constexpr int WarpChunk = 4 * LaneChunk;
  static constexpr int Chunks = (K + WarpChunk - 1) / WarpChunk;
  /// Chunks whose loads are issued before any is consumed.
  static constexpr int Unroll = Nvfp4 ? 2 : 4;
  /// Whether every chunk the loop visits lies wholly inside K (the common
  /// shapes): then no lane needs the zeros past K, decided at compile time.
  static constexpr bool EveryChunkFull = K % WarpChunk == 0 && Chunks % (Warps * Unroll) == 0;
  /// Output columns (N, or N / 2 with SiluMul) and rows per block tile.
  static constexpr int OutColumns = Silu ? N / 2 : N;
  static constexpr int TileColumns = Silu ? 4 : 8;
  static constexpr int Tiles = (OutColumns + TileColumns - 1) / TileColumns;
  static_assert(K % 16 == 0, "K must be a multiple of 16");
  static_assert(!Silu || N % 2 == 0, "SiluMul needs gate and up rows of equal count");
};

/// Which part of a weight row `row` (within one expert) belongs to.
template <typename C> VOLT_DEVICE int partOf(int row) {
  if (C::Parts <= 1)
    return 0;
  if (row < C::PartEnd0)
    return 0;
  if (C::Parts == 2 || row < C::PartEnd1)
    return 1;
  if (C::Parts == 3 || row < C::PartEnd2)
    return 2;
  return 3;
}

/// The weight row (within one expert) held by tile row `r` of tile `tile`,
/// or -1 past the end.
template <typename C> VOLT_DEVICE int tileRow(int tile, int r) {
  if (C::Silu) {
    int column = tile * 4 + (r & 3);
    if (column >= C::OutColumns)
      return -1;
    return r < 4 ? column : C::N / 2 + column;
  }
  int row = tile * 8 + r;
  return row < C::N ? row : -1;
}

/// The operands of one chunk, in registers.
struct Chunk {
  u32 w[4];
  u32 scales;
  u32 x[16];
};

/// Loads the weights of `row` and the activations of one token for the
/// lane's slice [k0, k0 + LaneChunk) of K (zeros past K). Registers are
/// zeroed only on the paths that need it: a zeroing per chunk costs the
/// stream instructions it cannot spare.
template <typename C>
VOLT_DEVICE void loadChunk(Chunk &c, const u8 *weights, const u8 *blockScales, int row,
                           const u16 *x, int k0) {
  if (!C::EveryChunkFull && k0 >= C::K) {
    for (int i = 0; i < 4; ++i)
      c.w[i] = 0;
    c.scales = 0;
    for (int i = 0; i < 16; ++i)
      c.x[i] = 0;
    return;
  }
  if (C::Nvfp4) {
    const u8 *w = weights + static_cast<i64>(row) * (C::K / 2) + k0 / 2;
    const u8 *s = blockScales + static_cast<i64>(row) * (C::K / 16) + k0 / 16;
    // k0 is a multiple of 32, so with K one too a chunk inside K is whole.
    const bool full = C::K % 32 == 0 || k0 + 32 <= C::K;
    if (C::K % 32 == 0) {
      u32x4 v = loadReadOnly16(w);
      c.w[0] = v.x, c.w[1] = v.y, c.w[2] = v.z, c.w[3] = v.w;
      c.scales = loadReadOnly2(s);
    } else {
      // Rows are only 8-byte aligned, their scale rows 1-byte aligned.
      loadReadOnly8(w, c.w[0], c.w[1]);
      c.scales = s[0] | (full ? static_cast<u32>(s[1]) << 8 : 0u);
      c.w[2] = c.w[3] = 0;
      if (full)
        loadReadOnly8(w + 8, c.w[2], c.w[3]);
    }
    const u16 *xs = x + k0;
    for (int q = 0; q < 4; ++q) {
      if (q < 2 || full) {
        u32x4 v = loadReadOnly16(xs + 8 * q);
        c.x[4 * q] = v.x, c.x[4 * q + 1] = v.y, c.x[4 * q + 2] = v.z, c.x[4 * q + 3] = v.w;
      } else {
        c.x[4 * q] = c.x[4 * q + 1] = c.x[4 * q + 2] = c.x[4 * q + 3] = 0;
      }
    }
  } else if (C::Fp8) {
    // 16 E4M3 weights and their 16 activations (K is a multiple of 16, so
    // a lane's chunk lies wholly inside K or wholly past it).
    u32x4 v = loadReadOnly16(weights + static_cast<i64>(row) * C::K + k0);
    c.w[0] = v.x, c.w[1] = v.y, c.w[2] = v.z, c.w[3] = v.w;
    for (int q = 0; q < 2; ++q) {
      u32x4 xv = loadReadOnly16(x + k0 + 8 * q);
      c.x[4 * q] = xv.x, c.x[4 * q + 1] = xv.y, c.x[4 * q + 2] = xv.z, c.x[4 * q + 3] = xv.w;
    }
  } else {
    u32x4 v =
        loadReadOnly16(reinterpret_cast<const u16 *>(weights) + static_cast<i64>(row) * C::K + k0);
    c.w[0] = v.x, c.w[1] = v.y, c.w[2] = v.z, c.w[3] = v.w;
    u32x4 xv = loadReadOnly16(x + k0);
    c.x[0] = xv.x, c.x[1] = xv.y, c.x[2] = xv.z, c.x[3] = xv.w;
  }
}

/// Multiplies one chunk into the accumulators.
template <typename C> VOLT_DEVICE void multiplyChunk(float (&acc)[8], const Chunk &c) {
  if (C::Nvfp4) {
    const u32 scale0 = blockScalePair(c.scales & 0xFFu);
    const u32 scale1 = blockScalePair((c.scales >> 8) & 0xFFu);
    for (int m = 0; m < 4; ++m) {
      u32 h[4];
      decodeE2M1x8(c.w[m], h);
      const u32 scale = m < 2 ? scale0 : scale1;
      for (int i = 0; i < 4; ++i)
        h[i] = mulHalf2(h[i], scale);
      // decodeE2M1x8 pairs element i with i + 4; regroup the activations
      // the same way so that both operands agree on the order within K.
      const u32 *x = c.x + 4 * m;
      mma884(acc, h[0], h[1], lowHalves(x[0], x[2]), highHalves(x[0], x[2]));
      mma884(acc, h[2], h[3], lowHalves(x[1], x[3]), highHalves(x[1], x[3]));
    }
  } else if (C::Fp8) {
    // Each word's 4 E4M3 weights as FP16 x 2^-8 (exact), k order kept.
    for (int m = 0; m < 4; ++m) {
      u32 h[2];
      decodeE4M3x4(c.w[m], h);
      mma884(acc, h[0], h[1], c.x[2 * m], c.x[2 * m + 1]);
    }
  } else {
    mma884(acc, c.w[0], c.w[1], c.x[0], c.x[1]);
    mma884(acc, c.w[2], c.w[3], c.x[2], c.x[3]);
  }
}

/// Where a tile's inputs come from and its outputs go.
struct TileIo {
  /// Rows of the weight entry (an expert's rows start at expert * N).
  const u8 *weights;
  const u8 *blockScales;
  /// Activation row of this lane's token column. Never null: a lane whose
  /// column is unused reads a used column's row (the same addresses as its
  /// owner, so no extra bytes move) and its outputs are dropped, which
  /// spares the stream a branch and a zeroing per chunk.
  const u16 *x;
  /// Output row index of this lane's token column (-1: none).
  int outRow;
  int expert;
  /// FP8 weights: the F32 scale of each row.
  const float *rowScales = nullptr;
};

/// Accumulates the tile over K and stores it: the body of every GEMV kernel.
/// `scaleOf(expert, part)` is 2^14 x that part's global scale for NVFP4
/// (unused for dense weights). It is a function, not a pointer, so that the
/// kernel reads its by-value parameter array in place: a pointer to a kernel
/// parameter makes the compiler copy the array to local memory.
template <typename C, typename ScaleOf>
VOLT_DEVICE void runTile(int tile, const TileIo &io, const ScaleOf &scaleOf, const u16 *bias,
                         void *out, float *shared) {
  const int lane = static_cast<int>(laneId());
  const int warp = threadIdx.x / 32;
  const int quadPair = (lane >> 2) & 3;
  const int r = (lane & 3) + ((lane >> 4) << 2);
  int row = tileRow<C>(tile, r);
  const int loadRow = (row < 0 ? 0 : row) + io.expert * C::N;

  float acc[8];
  for (int i = 0; i < 8; ++i)
    acc[i] = 0.0f;
  for (int chunk = warp; chunk < C::Chunks; chunk += C::Warps * C::Unroll) {
    Chunk c[C::Unroll];
    for (int u = 0; u < C::Unroll; ++u) {
      const int k0 = (chunk + u * C::Warps) * C::WarpChunk + quadPair * C::LaneChunk;
      loadChunk<C>(c[u], io.weights, io.blockScales, loadRow, io.x, k0);
    }
    for (int u = 0; u < C::Unroll; ++u)
      multiplyChunk<C>(acc, c[u]);
  }
  // The quad pairs hold partial sums of the same tile over different K.
  for (int i = 0; i < 8; ++i) {
    acc[i] += shuffleXor(acc[i], 4);
    acc[i] += shuffleXor(acc[i], 8);
  }
  if (C::Warps > 1) {
    // shared: [Warps][8 lanes][8] partial tiles.
    if (quadPair == 0)
      for (int i = 0; i < 8; ++i)
        shared[(warp * 8 + r) * 8 + i] = acc[i];
    __syncthreads();
    if (warp != 0)
      return;
    if (quadPair == 0)
      for (int i = 0; i < 8; ++i) {
        float sum = shared[r * 8 + i];
        for (int w = 1; w < C::Warps; ++w)
          sum += shared[(w * 8 + r) * 8 + i];
        acc[i] = sum;
      }
  }
  // Lane l of quad pair 0 holds tile rows mmaRow(l, i) for token columns
  // mmaCol(l, i). The token column of c[i] is not the lane's own column, so
  // fetch the output row of each column from the lane that owns it.
  int outRows[8];
  for (int i = 0; i < 8; ++i) {
    const int col = mmaCol(lane, i);
    outRows[i] = shuffle(io.outRow, (col & 3) + ((col >> 2) << 4));
  }
  float partner[8];
  for (int i = 0; i < 8; ++i)
    partner[i] = C::Silu ? shuffleXor(acc[i], 16) : 0.0f;
  if (quadPair != 0 || (C::Silu && lane >= 16))
    return;
  for (int i = 0; i < 8; ++i) {
    const int rr = mmaRow(lane, i);
    const int wrow = tileRow<C>(tile, rr);
    if (wrow < 0 || outRows[i] < 0)
      continue;
    float y = C::Nvfp4 ? acc[i] * scaleOf(io.expert, partOf<C>(wrow))
              : C::Fp8 ? acc[i] * (io.rowScales[wrow] * kE4M3x4Bias)
                       : acc[i];
    if (C::HasBias)
      y += halfToFloat(bias[wrow]);
    int column = wrow;
    if (C::Silu) {
      const int up = tileRow<C>(tile, rr + 4);
      float u = C::Nvfp4 ? partner[i] * scaleOf(io.expert, partOf<C>(up))
                : C::Fp8 ? partner[i] * (io.rowScales[up] * kE4M3x4Bias)
                         : partner[i];
      if (C::HasBias)
        u += halfToFloat(bias[up]);
      y = siluTimes(y, u);
    }
    const i64 at = static_cast<i64>(outRows[i]) * C::OutColumns + column;
    if (C::OutF32)
      static_cast<float *>(out)[at] = y;
    else
      static_cast<u16 *>(out)[at] = floatToHalf(y);
  }
}

/// scaleOf for weights without global scales.
struct NoScales {
  VOLT_DEVICE float operator()(int, int) const { return 1.0f; }
};

} // namespace volt::gemv
