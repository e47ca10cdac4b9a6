// templates/nvfp4_moe_gemm.cu - MoeGroupedQLinear at prefill sizes: the
// NVFP4 GEMMs of all experts in one launch.
//
// grid.y counts (expert, token tile) groups over the experts in order:
// sum over e of ceil(rows_e / TILE_M) <= (T * TOP_K + EXPERTS * (TILE_M - 1))
// / TILE_M, the grid's bound; blocks past the last group exit. Rows of `out`
// are the sorted pairs; pair j reads in[order[j] / TOP_K] with GATHER,
// in[j] without. Constants: as nvfp4_gemm, plus EXPERTS, TOP_K, GATHER.
#include "common/gemm.cuh"
#include "common/moe.cuh"

using namespace volt;
using Config =
    gemm::Config<true, VOLT_K, VOLT_N, VOLT_TILE_M, VOLT_TILE_N, VOLT_STAGES, VOLT_SILU, false,
                 false, VOLT_PARTS, VOLT_PART_END0, VOLT_PART_END1, VOLT_PART_END2>;
static_assert(Config::Threads == VOLT_THREADS, "block size");

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    nvfp4_moe_gemm(const u16 *in, const int *order, const int *expertStarts, const u8 *packed,
                   const u8 *blockScales, u16 *out, int tokens, const float *__restrict__ scales) {
  VOLT_DYNAMIC_SHARED(u16, shared);
  const moe::GemmGroup g = moe::gemmGroup<VOLT_EXPERTS, Config::TileM>(expertStarts);
  if (g.expert < 0)
    return;
  gemm::TileIo io;
  io.weights = packed;
  io.blockScales = blockScales;
  io.expert = g.expert;
  io.tokens = g.tokens;
  // EXPERTS x PARTS f32 values in the weight entry, after its block scales.
  auto scaleOf = [&](int e, int part) { return scales[e * VOLT_PARTS + part]; };
  auto actRow = [=](int m) {
    return moe::pairRow<Config::K, VOLT_TOP_K, VOLT_GATHER>(in, order, g.first + m);
  };
  auto outRow = [=](int m) { return g.first + m; };
  gemm::runTile<Config>(blockIdx.x, io, actRow, outRow, scaleOf, nullptr, out, shared);
}
