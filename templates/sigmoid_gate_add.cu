// templates/sigmoid_gate_add.cu - SigmoidGateAdd (Qwen2-MoE's shared expert):
// out = fp16(out + (1 / (1 + exp(-gate))) * value).
// Constants: DIM, GATE_F32. Launch: grid.x = rows, THREADS.
#include "common/volt.cuh"

using namespace volt;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    sigmoid_gate_add(u16 *out, const u16 *value, const void *gate, int rows) {
  const int r = blockIdx.x;
  if (r >= rows)
    return;
  const float g = VOLT_GATE_F32 ? static_cast<const float *>(gate)[r]
                                : halfToFloat(static_cast<const u16 *>(gate)[r]);
  const float sigmoid = 1.0f / (1.0f + expf(-g));
  const i64 base = static_cast<i64>(r) * VOLT_DIM;
  for (int i = threadIdx.x; i < VOLT_DIM; i += VOLT_THREADS)
    out[base + i] =
        floatToHalf(halfToFloat(out[base + i]) + sigmoid * halfToFloat(value[base + i]));
}
