// templates/add_rms_norm.cu - AddRmsNorm: residual += in (stored in the
// residual dtype), then RmsNorm of the stored residual.
// Constants: DIM, IN_F32, RES_F32. Launch: grid.x = rows, THREADS.
#include "common/volt.cuh"

using namespace volt;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    add_rms_norm(const void *in, void *residual, const u16 *weight, u16 *out, int rows, float eps) {
  __shared__ float scratch[VOLT_THREADS / 32];
  const int r = blockIdx.x;
  if (r >= rows)
    return;
  const i64 base = static_cast<i64>(r) * VOLT_DIM;
  float sum = 0.0f;
  // Each thread later reads back only the elements it stored itself.
  for (int i = threadIdx.x; i < VOLT_DIM; i += VOLT_THREADS) {
    const float add = VOLT_IN_F32 ? static_cast<const float *>(in)[base + i]
                                  : halfToFloat(static_cast<const u16 *>(in)[base + i]);
    float x;
    if (VOLT_RES_F32) {
      float *res = static_cast<float *>(residual) + base + i;
      x = *res + add;
      *res = x;
    } else {
      u16 *res = static_cast<u16 *>(residual) + base + i;
      const u16 stored = floatToHalf(halfToFloat(*res) + add);
      *res = stored;
      x = halfToFloat(stored);
    }
    sum += x * x;
  }
  sum = blockSum<VOLT_THREADS / 32>(sum, scratch);
  const float inverse = 1.0f / sqrtf(sum / static_cast<float>(VOLT_DIM) + eps);
  for (int i = threadIdx.x; i < VOLT_DIM; i += VOLT_THREADS) {
    const float x = VOLT_RES_F32 ? static_cast<const float *>(residual)[base + i]
                                 : halfToFloat(static_cast<const u16 *>(residual)[base + i]);
    out[base + i] = floatToHalf(x * inverse * halfToFloat(weight[i]));
  }
}
