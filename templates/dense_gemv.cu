// templates/dense_gemv.cu - Linear at decode sizes (1-8 tokens): FP16
// weights [N, K] times FP16 activations [T, K], FP16 or FP32 out (the
// router's and the LM head's logits), optional bias.
//
// Constants: K, N, WARPS, OUT_F32, HAS_BIAS. Launch: grid.x = tiles of 8
// rows, WARPS * 32 threads.
#include "common/gemv.cuh"

using namespace volt;
using Config =
    gemv::Config<false, VOLT_K, VOLT_N, VOLT_WARPS, false, VOLT_OUT_F32, VOLT_HAS_BIAS, 1, 0, 0, 0>;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    dense_gemv(const u16 *x, const u16 *weight,
#if VOLT_HAS_BIAS
               const u16 *bias,
#endif
               void *out, int tokens) {
#if !VOLT_HAS_BIAS
  const u16 *bias = nullptr;
#endif
  __shared__ float partial[Config::Warps > 1 ? Config::Warps * 64 : 1];
  const int lane = static_cast<int>(laneId());
  const int column = (lane & 3) + ((lane >> 4) << 2);
  gemv::TileIo io;
  io.weights = reinterpret_cast<const u8 *>(weight);
  io.blockScales = nullptr;
  io.x = x + static_cast<i64>(column < tokens ? column : 0) * Config::K;
  io.outRow = column < tokens ? column : -1;
  io.expert = 0;
  gemv::runTile<Config>(blockIdx.x, io, gemv::NoScales(), bias, out, partial);
}
