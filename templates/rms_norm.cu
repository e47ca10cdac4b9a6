// templates/rms_norm.cu - RmsNorm: out = fp16(x * (1 / sqrt(mean(x^2) + eps))
// * w) per row, in FP32 with one rounding (docs/design/cpu-backend.md).
// Constants: DIM, IN_F32 (input dtype). Launch: grid.x = rows, THREADS.
#include "common/volt.cuh"

using namespace volt;

VOLT_DEVICE float loadElement(const void *in, i64 i) {
  return VOLT_IN_F32 ? static_cast<const float *>(in)[i]
                     : halfToFloat(static_cast<const u16 *>(in)[i]);
}

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    rms_norm(const void *in, const u16 *weight, u16 *out, int rows, float eps) {
  __shared__ float scratch[VOLT_THREADS / 32];
  const int r = blockIdx.x;
  if (r >= rows)
    return;
  const i64 base = static_cast<i64>(r) * VOLT_DIM;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < VOLT_DIM; i += VOLT_THREADS) {
    const float x = loadElement(in, base + i);
    sum += x * x;
  }
  sum = blockSum<VOLT_THREADS / 32>(sum, scratch);
  const float inverse = 1.0f / sqrtf(sum / static_cast<float>(VOLT_DIM) + eps);
  for (int i = threadIdx.x; i < VOLT_DIM; i += VOLT_THREADS) {
    const float x = loadElement(in, base + i);
    out[base + i] = floatToHalf(x * inverse * halfToFloat(weight[i]));
  }
}
