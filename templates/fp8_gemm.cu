// templates/fp8_gemm.cu - Linear at prefill sizes over an FP8 weight: E4M3
// [N, K] with an F32 scale per row, times FP16 activations [T, K] on tensor
// cores, FP16 or FP32 out, optional bias. The weight tile is decoded to
// FP16 (x 2^-8, exact) on its way to shared memory; 2^8 x the row's scale
// multiplies the FP32 sum. Constants and launch as dense_gemm.
#include "common/gemm.cuh"

using namespace volt;
using Config = gemm::Config<false, VOLT_K, VOLT_N, VOLT_TILE_M, VOLT_TILE_N, VOLT_STAGES, false,
                            VOLT_OUT_F32, VOLT_HAS_BIAS, 1, 0, 0, 0, true>;
static_assert(Config::Threads == VOLT_THREADS, "block size");

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    fp8_gemm(const u16 *x, const u8 *weight, const float *rowScales,
#if VOLT_HAS_BIAS
             const u16 *bias,
#endif
             void *out, int tokens) {
#if !VOLT_HAS_BIAS
  const u16 *bias = nullptr;
#endif
  VOLT_DYNAMIC_SHARED(u16, shared);
  const int m0 = blockIdx.y * Config::TileM;
  gemm::TileIo io;
  io.weights = weight;
  io.blockScales = nullptr;
  io.expert = 0;
  io.tokens = min(tokens - m0, Config::TileM);
  io.rowScales = rowScales;
  auto actRow = [=](int m) { return x + static_cast<i64>(m0 + m) * Config::K; };
  auto outRow = [=](int m) { return m0 + m; };
  auto noScales = [](int, int) { return 1.0f; };
  gemm::runTile<Config>(blockIdx.x, io, actRow, outRow, noScales, bias, out, shared);
}
