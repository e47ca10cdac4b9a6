// templates/dense_gemm.cu - Linear at prefill sizes: FP16 weights [N, K]
// times FP16 activations [T, K] on tensor cores, FP16 or FP32 out, optional
// bias. Constants and launch as nvfp4_gemm (without parts).
#include "common/gemm.cuh"

using namespace volt;
using Config = gemm::Config<false, VOLT_K, VOLT_N, VOLT_TILE_M, VOLT_TILE_N, VOLT_STAGES, false,
                            VOLT_OUT_F32, VOLT_HAS_BIAS, 1, 0, 0, 0>;
static_assert(Config::Threads == VOLT_THREADS, "block size");

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    dense_gemm(const u16 *x, const u16 *weight,
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
  io.weights = reinterpret_cast<const u8 *>(weight);
  io.blockScales = nullptr;
  io.expert = 0;
  io.tokens = min(tokens - m0, Config::TileM);
  auto actRow = [=](int m) { return x + static_cast<i64>(m0 + m) * Config::K; };
  auto outRow = [=](int m) { return m0 + m; };
  auto noScales = [](int, int) { return 1.0f; };
  gemm::runTile<Config>(blockIdx.x, io, actRow, outRow, noScales, bias, out, shared);
}
