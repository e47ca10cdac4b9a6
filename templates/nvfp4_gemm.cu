// templates/nvfp4_gemm.cu - QLinear at prefill sizes: NVFP4 weights [N, K]
// (canonical layout) times FP16 activations [T, K] on tensor cores.
//
// Constants: K, N, TILE_M (tokens per block), TILE_N (weight rows per block),
// STAGES (shared-memory stages), SILU, OUT_F32, HAS_BIAS, PARTS,
// PART_END0..2. Launch: grid.x = row tiles, grid.y = ceil(T / TILE_M),
// (TILE_N / 64) * (TILE_M / warp tokens) warps, dynamic shared memory
// STAGES * (TILE_N + TILE_M) * 72 * 2 bytes.
#include "common/gemm.cuh"

using namespace volt;
using Config = gemm::Config<true, VOLT_K, VOLT_N, VOLT_TILE_M, VOLT_TILE_N, VOLT_STAGES, VOLT_SILU,
                            VOLT_OUT_F32, VOLT_HAS_BIAS, VOLT_PARTS, VOLT_PART_END0, VOLT_PART_END1,
                            VOLT_PART_END2>;
static_assert(Config::Threads == VOLT_THREADS, "block size");

struct EpilogueScales {
  float v[VOLT_PARTS];
};

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    nvfp4_gemm(const u16 *x, const u8 *packed, const u8 *blockScales,
#if VOLT_HAS_BIAS
               const u16 *bias,
#endif
               void *out, int tokens, EpilogueScales scales) {
#if !VOLT_HAS_BIAS
  const u16 *bias = nullptr;
#endif
  VOLT_DYNAMIC_SHARED(u16, shared);
  const int m0 = blockIdx.y * Config::TileM;
  gemm::TileIo io;
  io.weights = packed;
  io.blockScales = blockScales;
  io.expert = 0;
  io.tokens = min(tokens - m0, Config::TileM);
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
  auto actRow = [=](int m) { return x + static_cast<i64>(m0 + m) * Config::K; };
  auto outRow = [=](int m) { return m0 + m; };
  gemm::runTile<Config>(blockIdx.x, io, actRow, outRow, scaleOf, bias, out, shared);
}
