// templates/fp8_moe_gemv.cu - MoeGroupedLinear at decode sizes over FP8
// experts: every active expert's GEMV in one launch, each expert's weight
// E4M3 [N, K] (one byte per weight) with an F32 scale per row (an
// FP8-dynamic export's experts, scaled per channel or per tensor). Each
// byte becomes an exact FP16 (x 2^-8) in registers; 2^8 x the row's scale
// multiplies the FP32 sum, the gate's and the up's each their own before
// SiluMul. Launch and constants as dense_moe_gemv.
#include "common/gemv.cuh"
#include "common/moe.cuh"

using namespace volt;
using Config =
    gemv::Config<false, VOLT_K, VOLT_N, VOLT_WARPS, VOLT_SILU, false, false, 1, 0, 0, 0, true>;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    fp8_moe_gemv(const u16 *in, const int *order, const int *expertStarts, const u8 *weight,
                 const float *rowScales, u16 *out, int tokens) {
  __shared__ float partial[Config::Warps > 1 ? Config::Warps * 64 : 1];
  gemv::TileIo io;
  if (!moe::gemvGroup<VOLT_EXPERTS, Config::K, VOLT_TOP_K, VOLT_GATHER>(in, order, expertStarts,
                                                                         io))
    return;
  io.weights = weight;
  io.blockScales = nullptr;
  io.rowScales = rowScales + static_cast<i64>(io.expert) * Config::N;
  gemv::runTile<Config>(blockIdx.x, io, gemv::NoScales(), nullptr, out, partial);
}
