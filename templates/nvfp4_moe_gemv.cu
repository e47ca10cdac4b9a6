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
  int group = 0;
  const int expert = moe::findExpertGroup<VOLT_EXPERTS>(expertStarts, blockIdx.y, 8, group);
  if (expert < 0)
    return;
  const int first = expertStarts[expert] + group * 8;
  const int rows = min(expertStarts[expert + 1] - first, 8);
  const int lane = static_cast<int>(laneId());
  const int column = (lane & 3) + ((lane >> 4) << 2);
  gemv::TileIo io;
  io.weights = packed;
  io.blockScales = blockScales;
  // A column past the group's pairs reads the group's first pair (rows >= 1).
  const int j = first + (column < rows ? column : 0);
  const int source = VOLT_GATHER ? order[j] / VOLT_TOP_K : j;
  io.x = in + static_cast<i64>(source) * Config::K;
  io.outRow = column < rows ? j : -1;
  io.expert = expert;
  // EXPERTS x PARTS f32 values in the weight entry, after its block scales.
  auto scaleOf = [&](int e, int part) { return scales[e * VOLT_PARTS + part]; };
  gemv::runTile<Config>(blockIdx.x, io, scaleOf, nullptr, out, partial);
}
