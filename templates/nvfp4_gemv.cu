// templates/nvfp4_gemv.cu - QLinear at decode sizes (1-8 tokens): NVFP4
// weights [N, K] in the canonical layout (packed E2M1 rows, E4M3 block-scale
// rows) times FP16 activations [T, K].
//
// Constants: K, N (rows of all fused parts), WARPS (split of K per block),
// SILU (gate|up epilogue), OUT_F32, HAS_BIAS, PARTS and PART_END0..2 (row
// where each fused part ends). Launch: grid.x = tiles of 8 rows (4 output
// columns with SILU), WARPS * 32 threads. The global scales arrive as
// 2^14 x the part's scale (the E2M1 conversion's bias goes back in here).
#include "common/gemv.cuh"

using namespace volt;
using Config =
    gemv::Config<true, VOLT_K, VOLT_N, VOLT_WARPS, VOLT_SILU, VOLT_OUT_F32, VOLT_HAS_BIAS,
                 VOLT_PARTS, VOLT_PART_END0, VOLT_PART_END1, VOLT_PART_END2>;

struct EpilogueScales {
  float v[VOLT_PARTS];
};

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    nvfp4_gemv(const u16 *x, const u8 *packed, const u8 *blockScales,
#if VOLT_HAS_BIAS
               const u16 *bias,
#endif
               void *out, int tokens, EpilogueScales scales) {
#if !VOLT_HAS_BIAS
  const u16 *bias = nullptr;
#endif
  __shared__ float partial[Config::Warps > 1 ? Config::Warps * 64 : 1];
  const int lane = static_cast<int>(laneId());
  const int column = (lane & 3) + ((lane >> 4) << 2);
  gemv::TileIo io;
  io.weights = packed;
  io.blockScales = blockScales;
  io.x = x + static_cast<i64>(column < tokens ? column : 0) * Config::K;
  io.outRow = column < tokens ? column : -1;
  io.expert = 0;
  // Parts are few: the scales go to registers and are selected, which keeps
  // the parameter array out of local memory.
  float v[VOLT_PARTS];
#pragma unroll
  for (int p = 0; p < VOLT_PARTS; ++p)
    v[p] = scales.v[p];
  auto scaleOf = [=](int, int part) {
    float s = v[0];
#pragma unroll
    for (int p = 1; p < VOLT_PARTS; ++p)
      s = part == p ? v[p] : s;
    return s;
  };
  gemv::runTile<Config>(blockIdx.x, io, scaleOf, bias, out, partial);
}
