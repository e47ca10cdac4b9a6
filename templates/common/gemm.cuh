// templates/common/gemm.cuh - the prefill-size GEMM shared by nvfp4_gemm,
// dense_gemm and their MoE forms.
//
// Above a few dozen tokens a linear layer is bound by the tensor cores, not
// by HBM. A block computes a tile of TileN weight rows x TileM tokens over
// K in steps of 64: each step's weight tile is read from global memory
// (NVFP4: dequantized on the way, E2M1 x E4M3 in FP16, exact) and stored to
// shared memory as FP16 with the step's activation tile; warps then run
// mma.m8n8k4 on fragments read from shared memory. Volta has no cp.async,
// so the next step's global loads are issued into registers before the
// current step's MMAs, and stored to the other shared-memory stage after
// them (two stages when shared memory allows, one otherwise).
//
// Warp layout: a warp owns 64 weight rows x 32 tokens (64 FP32 accumulators
// per thread; 64 x 64 spills on sm_70), or 32 rows for 32-token tiles. Its quad pairs form 16 x 16
// units (quad pair q covers rows 8 (q & 1) and tokens 8 (q >> 1) of the unit), so that one fragment
// load of A serves two MMAs and one of B serves another two.
//
// K order inside a step. NVFP4's bit-trick decoder yields element pairs
// (i, i + 4) of each group of 8; the weight tile is stored in that order and
// the activation tile is stored with the same permutation, so both operands
// of every MMA agree (a sum does not care about the order of its terms).
//
// Fused SiluMul: the first half of each warp's rows are gate rows and the
// second half the matching up rows, so a thread holds gate and up of the
// same output in its accumulators.
#pragma once

#include "common/nvfp4.cuh"

namespace volt::gemm {

template <bool Nvfp4_, int K_, int N_, int TileM_, int TileN_, int Stages_, bool Silu_,
          bool OutF32_, bool HasBias_, int Parts_, int PartEnd0_, int PartEnd1_, int PartEnd2_,
          bool Fp8_ = false>
struct Config {
  static constexpr bool Nvfp4 = Nvfp4_;
  /// FP8 E4M3 weights (one byte each) with a scale per row (fp8_gemm).
  static constexpr bool Fp8 = Fp8_;
  static constexpr int K = K_;
  static constexpr int N = N_;
  static constexpr int TileM = TileM_;
  static constexpr int TileN = TileN_;
  static constexpr int Stages = Stages_;
  static constexpr bool Silu = Silu_;
  static constexpr bool OutF32 = OutF32_;
  static constexpr bool HasBias = HasBias_;
  static constexpr int Parts = Parts_;
  static constexpr int PartEnd0 = PartEnd0_, PartEnd1 = PartEnd1_, PartEnd2 = PartEnd2_;

  static constexpr int TileK = 64;
  /// Shared-memory row stride in halves: 8 halves of padding spread the rows
  /// of a fragment load over the banks.
  static constexpr int Stride = TileK + 8;
  /// Narrow token tiles get narrower warps, so that more threads share the
  /// tile's loads (a 2-warp block would stage too much in registers).
  static constexpr int WarpRows = TileM >= 64 ? 64 : 32;
  static constexpr int WarpTokens = 32;
  static constexpr int WarpsN = TileN / WarpRows;
  static constexpr int WarpsM = TileM / WarpTokens;
  static constexpr int Warps = WarpsN * WarpsM;
  static constexpr int Threads = Warps * 32;
  static constexpr int RowUnits = WarpRows / 16;
  static constexpr int TokenUnits = WarpTokens / 16;
  static constexpr int Steps = (K + TileK - 1) / TileK;
  /// Output columns of a block tile.
  static constexpr int TileColumns = Silu ? TileN / 2 : TileN;
  static constexpr int OutColumns = Silu ? N / 2 : N;
  static constexpr int Tiles = (OutColumns + TileColumns - 1) / TileColumns;
  /// Halves of one shared-memory stage (weights, then activations).
  static constexpr int StageHalves = (TileN + TileM) * Stride;
  static constexpr int SharedBytes = Stages * StageHalves * 2;

  /// Global loads per thread per step: weight segments (16 NVFP4 elements
  /// or 8 FP16) and activation segments (8 FP16).
  static constexpr int WeightSegmentElems = Nvfp4 || Fp8 ? 16 : 8;
  static constexpr int WeightSegments = TileN * TileK / WeightSegmentElems;
  static constexpr int WeightLoads = WeightSegments / Threads;
  static constexpr int ActSegments = TileM * TileK / 8;
  static constexpr int ActLoads = ActSegments / Threads;

  static_assert(K % 16 == 0, "K must be a multiple of 16");
  static_assert(TileN % WarpRows == 0 && TileM % WarpTokens == 0, "tile shape");
  static_assert(WeightSegments % Threads == 0 && ActSegments % Threads == 0, "load split");
  static_assert(!Silu || N % 2 == 0, "SiluMul needs gate and up rows of equal count");
};

template <typename C> VOLT_DEVICE int partOf(int row) {
  if (C::Parts <= 1 || row < C::PartEnd0)
    return 0;
  if (C::Parts == 2 || row < C::PartEnd1)
    return 1;
  if (C::Parts == 3 || row < C::PartEnd2)
    return 2;
  return 3;
}

/// The weight row (within one expert) of row `r` of tile `tile`'s weight
/// tile, or -1 past the end.
template <typename C> VOLT_DEVICE int tileRow(int tile, int r) {
  if (C::Silu) {
    constexpr int kHalf = C::WarpRows / 2;
    const int warpGroup = r / C::WarpRows, inWarp = r % C::WarpRows;
    const int column = tile * C::TileColumns + warpGroup * kHalf + inWarp % kHalf;
    if (column >= C::OutColumns)
      return -1;
    return inWarp < kHalf ? column : C::N / 2 + column;
  }
  const int row = tile * C::TileN + r;
  return row < C::N ? row : -1;
}

/// Where a block's rows come from and go.
struct TileIo {
  const u8 *weights;
  const u8 *blockScales;
  int expert;
  /// Tokens of the tile (<= TileM).
  int tokens;
  /// FP8 weights: the F32 scale of each row.
  const float *rowScales = nullptr;
};

/// One step's global data, held in registers between its load and its
/// store to shared memory.
template <typename C> struct Staged {
  u32 weights[C::WeightLoads][C::Nvfp4 ? 2 : 4];
  u32 scales[C::Nvfp4 ? C::WeightLoads : 1];
  u32 act[C::ActLoads][4];
};

template <typename C, typename ActRow>
VOLT_DEVICE void loadStep(Staged<C> &s, const TileIo &io, int tile, int step,
                          const ActRow &actRow) {
  const int k0 = step * C::TileK;
  for (int i = 0; i < C::WeightLoads; ++i) {
    const int segment = threadIdx.x + i * C::Threads;
    const int perRow = C::TileK / C::WeightSegmentElems;
    const int r = segment / perRow;
    const int k = k0 + (segment % perRow) * C::WeightSegmentElems;
    int row = tileRow<C>(tile, r);
    const bool valid = row >= 0 && k < C::K;
    // Every load reads a valid address, and what is not wanted is zeroed
    // after it: the JIT compiler for newer GPUs may issue a read-only load
    // ahead of the branch that guards it (a guarded load through a null
    // row pointer faulted on an H200).
    row = (row < 0 ? 0 : row) + io.expert * C::N;
    const int kk = k < C::K ? k : C::K - C::WeightSegmentElems;
    if (C::Nvfp4) {
      loadReadOnly8(io.weights + static_cast<i64>(row) * (C::K / 2) + kk / 2, s.weights[i][0],
                    s.weights[i][1]);
      s.scales[i] = *(io.blockScales + static_cast<i64>(row) * (C::K / 16) + kk / 16);
      if (!valid)
        s.weights[i][0] = s.weights[i][1] = s.scales[i] = 0;
    } else {
      // FP16: 8 elements; FP8: 16 one-byte elements.
      u32x4 v = C::Fp8 ? loadReadOnly16(io.weights + static_cast<i64>(row) * C::K + kk)
                       : loadReadOnly16(reinterpret_cast<const u16 *>(io.weights) +
                                        static_cast<i64>(row) * C::K + kk);
      if (!valid)
        v = {0, 0, 0, 0};
      s.weights[i][0] = v.x, s.weights[i][1] = v.y, s.weights[i][2] = v.z, s.weights[i][3] = v.w;
    }
  }
  for (int i = 0; i < C::ActLoads; ++i) {
    const int segment = threadIdx.x + i * C::Threads;
    const int m = segment / (C::TileK / 8);
    const int k = k0 + (segment % (C::TileK / 8)) * 8;
    // A row past the tile's tokens reads the tile's last row (io.tokens >= 1),
    // a k past K the row's last 8 elements; both are zeroed after the load.
    const u16 *x = actRow(m < io.tokens ? m : io.tokens - 1);
    u32x4 v = loadReadOnly16(x + (k < C::K ? k : C::K - 8));
    if (m >= io.tokens || k >= C::K)
      v = {0, 0, 0, 0};
    s.act[i][0] = v.x, s.act[i][1] = v.y, s.act[i][2] = v.z, s.act[i][3] = v.w;
  }
}

template <typename C> VOLT_DEVICE void storeStep(const Staged<C> &s, u16 *stage) {
  u16 *weights = stage;
  u16 *act = stage + C::TileN * C::Stride;
  for (int i = 0; i < C::WeightLoads; ++i) {
    const int segment = threadIdx.x + i * C::Threads;
    const int perRow = C::TileK / C::WeightSegmentElems;
    const int r = segment / perRow;
    const int k = (segment % perRow) * C::WeightSegmentElems;
    u32 *dst = reinterpret_cast<u32 *>(weights + r * C::Stride + k);
    if (C::Nvfp4) {
      // 16 elements: two words of 8, one block scale.
      const u32 scale = blockScalePair(s.scales[i]);
      for (int w = 0; w < 2; ++w) {
        u32 h[4];
        decodeE2M1x8(s.weights[i][w], h);
        u32x4 v = {mulHalf2(h[0], scale), mulHalf2(h[1], scale), mulHalf2(h[2], scale),
                   mulHalf2(h[3], scale)};
        // Stored as pairs (0,4) (1,5) (2,6) (3,7) of the group of 8.
        *reinterpret_cast<u32x4 *>(dst + 4 * w) = v;
      }
    } else if (C::Fp8) {
      // 16 elements as FP16 x 2^-8, in k order.
      u32 h[4][2];
      for (int w = 0; w < 4; ++w)
        decodeE4M3x4(s.weights[i][w], h[w]);
      *reinterpret_cast<u32x4 *>(dst) = u32x4{h[0][0], h[0][1], h[1][0], h[1][1]};
      *reinterpret_cast<u32x4 *>(dst + 4) = u32x4{h[2][0], h[2][1], h[3][0], h[3][1]};
    } else {
      *reinterpret_cast<u32x4 *>(dst) =
          u32x4{s.weights[i][0], s.weights[i][1], s.weights[i][2], s.weights[i][3]};
    }
  }
  for (int i = 0; i < C::ActLoads; ++i) {
    const int segment = threadIdx.x + i * C::Threads;
    const int m = segment / (C::TileK / 8);
    const int k = (segment % (C::TileK / 8)) * 8;
    const u32 *a = s.act[i];
    u32x4 v = C::Nvfp4 ? u32x4{lowHalves(a[0], a[2]), highHalves(a[0], a[2]), lowHalves(a[1], a[3]),
                               highHalves(a[1], a[3])}
                       : u32x4{a[0], a[1], a[2], a[3]};
    *reinterpret_cast<u32x4 *>(act + m * C::Stride + k) = v;
  }
}

/// The MMAs of one step from shared memory.
template <typename C>
VOLT_DEVICE void computeStep(float (&acc)[C::RowUnits][C::TokenUnits][8], const u16 *stage,
                             int warpN, int warpM) {
  const int lane = static_cast<int>(laneId());
  const int quadPair = (lane >> 2) & 3;
  const int inPair = (lane & 3) + ((lane >> 4) << 2);
  const u16 *weights = stage + (warpN * C::WarpRows + (quadPair & 1) * 8 + inPair) * C::Stride;
  const u16 *act = stage + C::TileN * C::Stride +
                   (warpM * C::WarpTokens + (quadPair >> 1) * 8 + inPair) * C::Stride;
#pragma unroll
  for (int k = 0; k < C::TileK; k += 4) {
    u32 a[C::RowUnits][2], b[C::TokenUnits][2];
#pragma unroll
    for (int u = 0; u < C::RowUnits; ++u) {
      const u32 *p = reinterpret_cast<const u32 *>(weights + u * 16 * C::Stride + k);
      a[u][0] = p[0], a[u][1] = p[1];
    }
#pragma unroll
    for (int u = 0; u < C::TokenUnits; ++u) {
      const u32 *p = reinterpret_cast<const u32 *>(act + u * 16 * C::Stride + k);
      b[u][0] = p[0], b[u][1] = p[1];
    }
#pragma unroll
    for (int ru = 0; ru < C::RowUnits; ++ru)
#pragma unroll
      for (int tu = 0; tu < C::TokenUnits; ++tu)
        mma884(acc[ru][tu], a[ru][0], a[ru][1], b[tu][0], b[tu][1]);
  }
}

/// The whole tile: main loop and epilogue. `actRow(m)` is the activation
/// row of token m < io.tokens; `outRow(m)` its output row.
template <typename C, typename ActRow, typename OutRow, typename ScaleOf>
VOLT_DEVICE void runTile(int tile, const TileIo &io, const ActRow &actRow, const OutRow &outRow,
                         const ScaleOf &scaleOf, const u16 *bias, void *out, u16 *shared) {
  const int warp = threadIdx.x / 32;
  const int warpN = warp % C::WarpsN, warpM = warp / C::WarpsN;
  float acc[C::RowUnits][C::TokenUnits][8];
#pragma unroll
  for (int ru = 0; ru < C::RowUnits; ++ru)
#pragma unroll
    for (int tu = 0; tu < C::TokenUnits; ++tu)
#pragma unroll
      for (int i = 0; i < 8; ++i)
        acc[ru][tu][i] = 0.0f;

  Staged<C> staged;
  loadStep<C>(staged, io, tile, 0, actRow);
  storeStep<C>(staged, shared);
  __syncthreads();
  for (int step = 0; step < C::Steps; ++step) {
    const bool more = step + 1 < C::Steps;
    if (more)
      loadStep<C>(staged, io, tile, step + 1, actRow);
    const u16 *current = shared + (C::Stages == 2 ? (step & 1) * C::StageHalves : 0);
    computeStep<C>(acc, current, warpN, warpM);
    if (more) {
      if (C::Stages == 1)
        __syncthreads();
      storeStep<C>(staged, shared + (C::Stages == 2 ? ((step + 1) & 1) * C::StageHalves : 0));
    }
    __syncthreads();
  }

  // Epilogue: accumulator element i of unit (ru, tu) is weight-tile row
  // warpN * WarpRows + 16 ru + 8 (q & 1) + mmaRow(i), token warpM * WarpTokens +
  // 16 tu + 8 (q >> 1) + mmaCol(i).
  const int lane = static_cast<int>(laneId());
  const int quadPair = (lane >> 2) & 3;
  const int units = C::Silu ? C::RowUnits / 2 : C::RowUnits;
#pragma unroll
  for (int ru = 0; ru < units; ++ru)
#pragma unroll
    for (int tu = 0; tu < C::TokenUnits; ++tu)
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int r = warpN * C::WarpRows + ru * 16 + (quadPair & 1) * 8 + mmaRow(lane, i);
        const int m = warpM * C::WarpTokens + tu * 16 + (quadPair >> 1) * 8 + mmaCol(lane, i);
        const int row = tileRow<C>(tile, r);
        if (row < 0 || m >= io.tokens)
          continue;
        float y = C::Nvfp4 ? acc[ru][tu][i] * scaleOf(io.expert, partOf<C>(row))
                  : C::Fp8 ? acc[ru][tu][i] * (io.rowScales[row] * kE4M3x4Bias)
                           : acc[ru][tu][i];
        if (C::HasBias)
          y += halfToFloat(bias[row]);
        if (C::Silu) {
          const int up = tileRow<C>(tile, r + C::WarpRows / 2);
          float u = C::Nvfp4  ? acc[ru + units][tu][i] * scaleOf(io.expert, partOf<C>(up))
                    : C::Fp8 ? acc[ru + units][tu][i] * (io.rowScales[up] * kE4M3x4Bias)
                             : acc[ru + units][tu][i];
          if (C::HasBias)
            u += halfToFloat(bias[up]);
          y = siluTimes(y, u);
        }
        const i64 at = static_cast<i64>(outRow(m)) * C::OutColumns + row;
        if (C::OutF32)
          static_cast<float *>(out)[at] = y;
        else
          static_cast<u16 *>(out)[at] = floatToHalf(y);
      }
}

} // namespace volt::gemm
