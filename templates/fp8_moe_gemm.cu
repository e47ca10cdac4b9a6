// templates/fp8_moe_gemm.cu - MoeGroupedLinear at prefill sizes over FP8
// experts (E4M3 [N, K] per expert with an F32 scale per row): the GEMMs of
// all experts in one launch on tensor cores, each weight tile decoded to
// FP16 (x 2^-8, exact) on its way to shared memory, 2^8 x the row's scale
// multiplying the FP32 sum. Launch and constants as dense_moe_gemm.
#include "common/gemm.cuh"
#include "common/moe.cuh"

using namespace volt;
using Config = gemm::Config<false, VOLT_K, VOLT_N, VOLT_TILE_M, VOLT_TILE_N, VOLT_STAGES, VOLT_SILU,
                            false, false, 1, 0, 0, 0, true>;
static_assert(Config::Threads == VOLT_THREADS, "block size");

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    fp8_moe_gemm(const u16 *in, const int *order, const int *expertStarts, const u8 *weight,
                 const float *rowScales, u16 *out, int tokens) {
  VOLT_DYNAMIC_SHARED(u16, shared);
  const moe::GemmGroup g = moe::gemmGroup<VOLT_EXPERTS, Config::TileM>(expertStarts);
  if (g.expert < 0)
    return;
  gemm::TileIo io;
  io.weights = weight;
  io.blockScales = nullptr;
  io.expert = g.expert;
  io.tokens = g.tokens;
  io.rowScales = rowScales + static_cast<i64>(g.expert) * Config::N;
  auto actRow = [=](int m) {
    return moe::pairRow<Config::K, VOLT_TOP_K, VOLT_GATHER>(in, order, g.first + m);
  };
  auto outRow = [=](int m) { return g.first + m; };
  auto noScales = [](int, int) { return 1.0f; };
  gemm::runTile<Config>(blockIdx.x, io, actRow, outRow, noScales, nullptr, out, shared);
}
