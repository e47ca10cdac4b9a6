// templates/dense_moe_gemv.cu - MoeGroupedLinear at decode sizes: every
// active expert's FP16 GEMV in one launch (an unquantized MoE checkpoint).
// Launch and constants as nvfp4_moe_gemv, without the epilogue scales.
#include "common/gemv.cuh"
#include "common/moe.cuh"

using namespace volt;
using Config = gemv::Config<false, VOLT_K, VOLT_N, VOLT_WARPS, VOLT_SILU, false, false, 1, 0, 0, 0>;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    dense_moe_gemv(const u16 *in, const int *order, const int *expertStarts, const u16 *weight,
                   u16 *out, int tokens) {
  __shared__ float partial[Config::Warps > 1 ? Config::Warps * 64 : 1];
  gemv::TileIo io;
  if (!moe::gemvGroup<VOLT_EXPERTS, Config::K, VOLT_TOP_K, VOLT_GATHER>(in, order, expertStarts,
                                                                         io))
    return;
  io.weights = reinterpret_cast<const u8 *>(weight);
  io.blockScales = nullptr;
  gemv::runTile<Config>(blockIdx.x, io, gemv::NoScales(), nullptr, out, partial);
}
