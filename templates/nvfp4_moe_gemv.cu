// templates/nvfp4_moe_gemv.cu - MoeGroupedQLinear at decode sizes: every
// active expert's NVFP4 GEMV in one launch.
//
// At T <= 8 tokens an expert receives at most T pairs, so one GEMV tile of
// 8 token columns serves it. grid.x = row tiles of one expert, grid.y =
// T * TOP_K (an upper bound of the experts with pairs; the extra blocks
// exit). Rows of `out` are the sorted pairs; the input row of pair j is
// in[order[j] / TOP_K] with GATHER, in[j] without.
//
// Constants: as nvfp4_gemv, plus EXPERTS, TOP_K, GATHER; the epilogue
// scales are EXPERTS x PARTS f32 values (2^14 x each expert part's global scale)
// read from the weight entry (WeightEntry.epilogue_offset).
#include "common/gemv.cuh"
#include "common/moe.cuh"

using namespace volt;
using Config = gemv::Config<true, VOLT_K, VOLT_N, VOLT_WARPS, VOLT_SILU, false, false, VOLT_PARTS,
                            VOLT_PART_END0, VOLT_PART_END1, VOLT_PART_END2>;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    nvfp4_moe_gemv(const u16 *in, const int *order, const int *expertStarts, const u8 *packed,
                   const u8 *blockScales, u16 *out, int tokens, const float *__restrict__ scales) {
  __shared__ float partial[Config::Warps > 1 ? Config::Warps * 64 : 1];
  gemv::TileIo io;
  if (!moe::gemvGroup<VOLT_EXPERTS, Config::K, VOLT_TOP_K, VOLT_GATHER>(in, order, expertStarts,
                                                                         io))
    return;
  io.weights = packed;
  io.blockScales = blockScales;
  // EXPERTS x PARTS f32 values in the weight entry, after its block scales.
  auto scaleOf = [&](int e, int part) { return scales[e * VOLT_PARTS + part]; };
  gemv::runTile<Config>(blockIdx.x, io, scaleOf, nullptr, out, partial);
}
