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
  int group = 0;
  const int expert = moe::findExpertGroup<VOLT_EXPERTS>(expertStarts, blockIdx.y, 8, group);
  if (expert < 0)
    return;
  const int first = expertStarts[expert] + group * 8;
  const int rows = min(expertStarts[expert + 1] - first, 8);
  const int lane = static_cast<int>(laneId());
  const int column = (lane & 3) + ((lane >> 4) << 2);
  gemv::TileIo io;
  io.weights = reinterpret_cast<const u8 *>(weight);
  io.blockScales = nullptr;
  // A column past the group's pairs reads the group's first pair (rows >= 1).
  const int j = first + (column < rows ? column : 0);
  const int source = VOLT_GATHER ? order[j] / VOLT_TOP_K : j;
  io.x = in + static_cast<i64>(source) * Config::K;
  io.outRow = column < rows ? j : -1;
  io.expert = expert;
  gemv::runTile<Config>(blockIdx.x, io, gemv::NoScales(), nullptr, out, partial);
}
