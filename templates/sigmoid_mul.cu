// templates/sigmoid_mul.cu - SigmoidMul: out = fp16(x * (1 / (1 + exp(-g))))
// elementwise (gated attention's output gate).
// Constants: DIM. Launch: grid.x = rows, THREADS.
#include "common/volt.cuh"

using namespace volt;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    sigmoid_mul(const u16 *in, const u16 *gate, u16 *out, int rows) {
  const int r = blockIdx.x;
  if (r >= rows)
    return;
  const i64 base = static_cast<i64>(r) * VOLT_DIM;
  for (int i = threadIdx.x; i < VOLT_DIM; i += VOLT_THREADS) {
    const float x = halfToFloat(in[base + i]), g = halfToFloat(gate[base + i]);
    out[base + i] = floatToHalf(x * (1.0f / (1.0f + expf(-g))));
  }
}
