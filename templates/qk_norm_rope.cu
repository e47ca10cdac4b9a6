// templates/qk_norm_rope.cu - QkNormRope: per-head RMSNorm of q and k (when
// norm weights are given), then rotate-half RoPE at each token's position,
// in place on qkv [T, (HEADS + 2 KV_HEADS) * HEAD_DIM]; v is left alone.
//
// The angles are computed as the cpu backend (and Hugging Face) does:
// inv_freq = 1 / float(pow(double(theta), float(2i) / float(D))), angle =
// float(position) * inv_freq in FP32, cos and sin in double rounded to FP32
// (common/math.cuh).
// Constants: HEADS, KV_HEADS, HEAD_DIM, HAS_NORM. Launch: grid.x = T,
// grid.y = HEADS + KV_HEADS, THREADS = HEAD_DIM / 2 rounded up to a warp.
#include "common/math.cuh"

using namespace volt;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    qk_norm_rope(u16 *qkv, const int *positions,
#if VOLT_HAS_NORM
                 const u16 *qNorm, const u16 *kNorm,
#endif
                 int count, float eps, float theta) {
  constexpr int kDim = VOLT_HEAD_DIM, kHalf = kDim / 2;
  const int t = blockIdx.x, head = blockIdx.y;
  if (t >= count)
    return;
  u16 *x = qkv + (static_cast<i64>(t) * (VOLT_HEADS + 2 * VOLT_KV_HEADS) + head) * kDim;
  const int i = threadIdx.x;
  float x1 = 0.0f, x2 = 0.0f;
  if (i < kHalf) {
    x1 = halfToFloat(x[i]);
    x2 = halfToFloat(x[i + kHalf]);
  }
#if VOLT_HAS_NORM
  __shared__ float scratch[VOLT_THREADS / 32];
  const u16 *w = head < VOLT_HEADS ? qNorm : kNorm;
  const float sum = blockSum<VOLT_THREADS / 32>(x1 * x1 + x2 * x2, scratch);
  const float inverse = 1.0f / sqrtf(sum / static_cast<float>(kDim) + eps);
  if (i < kHalf) {
    x1 = x1 * inverse * halfToFloat(w[i]);
    x2 = x2 * inverse * halfToFloat(w[i + kHalf]);
  }
#endif
  if (i >= kHalf)
    return;
  const float exponent = static_cast<float>(2 * i) / static_cast<float>(kDim);
  const float power =
      static_cast<float>(pow(static_cast<double>(theta), static_cast<double>(exponent)));
  const float inverseFrequency = 1.0f / power;
  const float angle = static_cast<float>(positions[t]) * inverseFrequency;
  double sine, cosine;
  sinCos(static_cast<double>(angle), sine, cosine);
  const float c = static_cast<float>(cosine), s = static_cast<float>(sine);
  x[i] = floatToHalf(x1 * c - x2 * s);
  x[i + kHalf] = floatToHalf(x2 * c + x1 * s);
}
