// templates/fp8_gemv.cu - Linear at decode sizes (1-8 tokens) over an FP8
// weight: E4M3 [N, K] (one byte per weight) with an F32 scale per row,
// times FP16 activations [T, K], FP16 or FP32 out, optional bias. Each
// E4M3 byte becomes an exact FP16 (x 2^-8) in registers; 2^8 x the row's
// scale multiplies the FP32 sum (common/nvfp4.cuh). Half the bytes of
// dense_gemv for the same weight.
//
// Constants: K, N, WARPS, OUT_F32, HAS_BIAS. Launch: grid.x = tiles of 8
// rows, WARPS * 32 threads.
#include "common/gemv.cuh"

using namespace volt;
using Config = gemv::Config<false, VOLT_K, VOLT_N, VOLT_WARPS, false, VOLT_OUT_F32, VOLT_HAS_BIAS,
                            1, 0, 0, 0, true>;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    fp8_gemv(const u16 *x, const u8 *weight, const float *rowScales,
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
  io.weights = weight;
  io.blockScales = nullptr;
  io.x = x + static_cast<i64>(column < tokens ? column : 0) * Config::K;
  io.outRow = column < tokens ? column : -1;
  io.expert = 0;
  io.rowScales = rowScales;
  gemv::runTile<Config>(blockIdx.x, io, gemv::NoScales(), bias, out, partial);
}
