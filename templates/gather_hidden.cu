// templates/gather_hidden.cu - GatherHidden: out[t] = hidden[rows[t]] (the
// hidden rows a draft step starts from, read from those the last step
// left). Exact copies. Constants: DIM (FP16 elements per row).
// Launch: grid.x = T, THREADS.
#include "common/volt.cuh"

using namespace volt;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    gather_hidden(const u8 *hidden, const int *rows, u8 *out, int count) {
  const int t = blockIdx.x;
  if (t >= count)
    return;
  constexpr int kBytes = VOLT_DIM * 2;
  copyRow<kBytes, VOLT_THREADS>(hidden + static_cast<i64>(rows[t]) * kBytes,
                                out + static_cast<i64>(t) * kBytes);
}
