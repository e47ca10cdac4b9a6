// templates/qk_norm_rope.cu - QkNormRope: per-head RMSNorm of q and k (when
// norm weights are given), then rotate-half RoPE at each token's position,
// in place on qkv [T, (HEADS + 2 KV_HEADS) * HEAD_DIM]; v is left alone.
//
// The angles are computed as the cpu backend (and Hugging Face) does:
// inv_freq = 1 / float(pow(double(theta), float(2i) / float(D))), angle =
// float(position) * inv_freq in FP32, cos and sin in double rounded to FP32
// (common/math.cuh).
// With ROTARY_DIM R < HEAD_DIM (partial RoPE), the pairs (i, i + R/2), i <
// R/2, rotate with the angles of an R-dim head and dims from R on pass
// through (normalised and rounded); the normalised head goes through shared
// memory, since a thread's pair is then not the pair it loaded.
// Constants: HEADS, KV_HEADS, HEAD_DIM, ROTARY_DIM (default HEAD_DIM), HAS_NORM. Launch: grid.x
// = T, grid.y = HEADS + KV_HEADS, THREADS = HEAD_DIM / 2 rounded up to a
// warp.
#include "common/math.cuh"

// Requests that name no rotary_dim rotate the whole head.
#ifndef VOLT_ROTARY_DIM
#define VOLT_ROTARY_DIM VOLT_HEAD_DIM
#endif

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
#if VOLT_ROTARY_DIM != VOLT_HEAD_DIM
  constexpr int kRotary = VOLT_ROTARY_DIM, kRotaryHalf = kRotary / 2;
  __shared__ float normed[kDim];
  if (i < kHalf) {
    normed[i] = x1;
    normed[i + kHalf] = x2;
  }
  __syncthreads();
  if (i >= kHalf)
    return;
  for (int e = i; e < kDim; e += kHalf) {
    if (e >= kRotary) {
      x[e] = floatToHalf(normed[e]);
      continue;
    }
    const int f = e < kRotaryHalf ? e : e - kRotaryHalf; // the pair's angle
    const float exponent = static_cast<float>(2 * f) / static_cast<float>(kRotary);
    const float power =
        static_cast<float>(pow(static_cast<double>(theta), static_cast<double>(exponent)));
    const float angle = static_cast<float>(positions[t]) * (1.0f / power);
    double sine, cosine;
    sinCos(static_cast<double>(angle), sine, cosine);
    const float c = static_cast<float>(cosine), s = static_cast<float>(sine);
    x[e] = e < kRotaryHalf ? floatToHalf(normed[e] * c - normed[e + kRotaryHalf] * s)
                           : floatToHalf(normed[e] * c + normed[e - kRotaryHalf] * s);
  }
#else
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
#endif
}
