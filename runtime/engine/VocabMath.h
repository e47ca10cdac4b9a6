//===- VocabMath.h - loops over a vocabulary-sized row ---------*- C++ -*-===//
//
// The sampler's passes over 150k-entry logit rows, written with explicit
// 8-lane vectors (GCC/Clang vector extensions) so that they run as SIMD on
// any x86-64, with an AVX2 version picked at load time where the CPU has
// it. Private to the engine.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <vector>

namespace volt::engine {

/// exp(x) for x <= 0: x = n ln2 + r with n rounded to nearest, Cephes'
/// expf polynomial for e^r, 2^n from exponent bits. Relative error about
/// 1e-7; 0 below -87 (e^-87 is about 1.6e-38) and for NaN.
inline float expNonPositive(float x) {
  float clamped = x > -87.0f ? x : -87.0f;
  float rounded = (clamped * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = clamped - rounded * 0.693359375f;
  r = r + rounded * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float e = p * r * r + r + 1.0f;
  float scale = std::bit_cast<float>((int32_t(rounded) + 127) << 23);
  return x > -87.0f ? e * scale : 0.0f;
}

/// The largest value, NaN ignored (-inf when there is none).
float maxOf(std::span<const float> x);
/// Sum of the values (non-negative ones: float lanes, then double).
double sumOf(std::span<const float> x);
/// w[i] = expNonPositive(x[i] - shift), or 0 where that is below `floor`;
/// returns the sum of w.
double expWeights(std::span<const float> x, float shift, float floor, std::span<float> w);
/// x[i] /= by.
void divideAll(std::span<float> x, float by);
/// out[i] = x[i] / by, in one pass with the largest result (maxOf(out)).
/// The same values as copying, divideAll and maxOf.
float divideCopyMax(std::span<const float> x, float by, std::span<float> out);
/// expWeights, and in the same pass appends to `ids`/`gathered` every
/// index (ascending) whose weight is at least `theta` (and positive);
/// `mass` gets the sum of those weights, added in index order. The weights
/// and the sum are expWeights' own.
double expWeightsGather(std::span<const float> x, float shift, float floor, std::span<float> w,
                        float theta, std::vector<int32_t> &ids, std::vector<float> &gathered,
                        double &mass);
/// How many values are greater than `than`.
int32_t countGreater(std::span<const float> x, float than);
/// Whether some value is greater than `than` (NaN never is), and whether
/// some value is at least `than`: the sampler skips runs of a row with
/// them before a scalar scan.
bool anyGreater(std::span<const float> x, float than);
bool anyAtLeast(std::span<const float> x, float than);
/// The first index holding the largest value; -1 when all are NaN.
int32_t argmax(std::span<const float> x);

} // namespace volt::engine
