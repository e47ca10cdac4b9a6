// templates/silu_mul.cu - SiluMul: out = fp16(silu(g) * u) for in = [g | u].
// Constants: DIM (I, half the input row). Launch: grid.x = rows, THREADS.
#include "common/volt.cuh"

using namespace volt;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    silu_mul(const u16 *in, u16 *out, int rows) {
  const int r = blockIdx.x;
  if (r >= rows)
    return;
  const u16 *gate = in + static_cast<i64>(r) * 2 * VOLT_DIM;
  const u16 *up = gate + VOLT_DIM;
  u16 *dst = out + static_cast<i64>(r) * VOLT_DIM;
  for (int i = threadIdx.x; i < VOLT_DIM; i += VOLT_THREADS)
    dst[i] = floatToHalf(siluTimes(halfToFloat(gate[i]), halfToFloat(up[i])));
}
