//===- VocabMathTest.cpp - vectorized row loops against scalar ones -------===//
#include "runtime/engine/VocabMath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace volt::engine {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> randomRow(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0, 4);
  std::vector<float> x(n);
  for (float &v : x)
    v = normal(rng);
  return x;
}

TEST(VocabMath, ExpMatchesTheLibraryOverItsRange) {
  double worst = 0;
  for (int i = 0; i <= 66915; ++i) {
    float x = -86.99f + float(i) * 0.0013f;
    double want = std::exp(double(x));
    worst = std::max(worst, std::abs(double(expNonPositive(x)) - want) / want);
  }
  EXPECT_LT(worst, 3e-7);
  EXPECT_EQ(expNonPositive(0.0f), 1.0f);
  EXPECT_EQ(expNonPositive(-100.0f), 0.0f);
  EXPECT_EQ(expNonPositive(-kInf), 0.0f);
  EXPECT_EQ(expNonPositive(std::nanf("")), 0.0f);
}

TEST(VocabMath, EveryLengthAgreesWithAScalarLoop) {
  // Lengths around the 8-lane width and the 4096 blocks exercise the tails.
  for (size_t n : {0, 1, 7, 8, 9, 15, 16, 17, 4095, 4096, 4097, 151937}) {
    auto x = randomRow(n, uint32_t(n));
    float wantMax = -kInf;
    for (float v : x)
      wantMax = std::max(wantMax, v);
    EXPECT_EQ(maxOf(x), wantMax) << n;

    std::vector<float> w(n);
    double got = expWeights(x, wantMax, 0.01f, w), want = 0;
    for (size_t i = 0; i < n; ++i) {
      double e = std::exp(double(x[i]) - wantMax);
      double keep = float(e) >= 0.01f ? e : 0.0;
      ASSERT_NEAR(w[i], keep, 1e-6) << n << " at " << i;
      want += w[i];
    }
    EXPECT_NEAR(got, want, 1e-6 * std::max(1.0, want)) << n;
    EXPECT_NEAR(sumOf(w), want, 1e-6 * std::max(1.0, want)) << n;

    int32_t above = 0;
    for (float v : x)
      above += v > 0.5f;
    EXPECT_EQ(countGreater(x, 0.5f), above) << n;
    EXPECT_EQ(anyGreater(x, 0.5f), above > 0) << n;
    EXPECT_EQ(anyGreater(x, wantMax), false) << n;
    EXPECT_EQ(anyAtLeast(x, wantMax), n > 0) << n;

    auto y = x;
    divideAll(y, 0.7f);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(y[i], x[i] / 0.7f);
  }
}

TEST(VocabMath, FusedPassesGiveTheSeparatePassesValuesBitForBit) {
  // The sampler's fused passes must not change a single draw: same weights,
  // same sums, the same gathered set in the same order.
  for (size_t n : {0, 1, 7, 63, 64, 65, 4095, 4096, 4097, 4160, 151936}) {
    auto x = randomRow(n, uint32_t(n) + 7);
    if (n > 100) {
      x[n / 2] = std::nanf("");
      x[n / 3] = -kInf;
    }
    std::vector<float> copy(x.begin(), x.end()), fused(n);
    divideAll(copy, 0.7f);
    const float wantMax = maxOf(copy);
    const float gotMax = divideCopyMax(x, 0.7f, fused);
    EXPECT_EQ(gotMax, wantMax) << n;
    for (size_t i = 0; i < n; ++i)
      ASSERT_TRUE(std::memcmp(&copy[i], &fused[i], 4) == 0) << n << " at " << i;

    const float shift = n > 0 ? wantMax : 0.0f;
    for (float theta : {1e-3f, 0.3f, 0.0f}) {
      std::vector<float> w(n), wFused(n);
      const double want = expWeights(copy, shift, 1e-6f, w);
      std::vector<int32_t> ids, wantIds;
      std::vector<float> gathered, wantGathered;
      double mass = 0, wantMass = 0;
      const double got = expWeightsGather(copy, shift, 1e-6f, wFused, theta, ids, gathered, mass);
      for (size_t i = 0; i < n; ++i)
        if (w[i] > 0 && w[i] >= theta) {
          wantIds.push_back(int32_t(i));
          wantGathered.push_back(w[i]);
          wantMass += w[i];
        }
      EXPECT_EQ(got, want) << n;
      EXPECT_EQ(w, wFused) << n;
      EXPECT_EQ(ids, wantIds) << n << " theta " << theta;
      EXPECT_EQ(gathered, wantGathered) << n;
      EXPECT_EQ(mass, wantMass) << n;
    }
  }
}

TEST(VocabMath, ArgmaxTakesTheFirstMaximumAndSkipsNaN) {
  std::vector<float> x(10000, 1.0f);
  x[7000] = 5.0f;
  x[9000] = 5.0f;
  x[3] = std::nanf("");
  EXPECT_EQ(argmax(x), 7000);
  x[4500] = kInf;
  EXPECT_EQ(argmax(x), 4500);
  std::vector<float> nan(20, std::nanf(""));
  EXPECT_EQ(argmax(nan), -1);
  EXPECT_FALSE(anyGreater(nan, -kInf));
  EXPECT_FALSE(anyAtLeast(nan, -kInf));
  EXPECT_EQ(maxOf(nan), -kInf);
  std::vector<float> empty;
  EXPECT_EQ(argmax(empty), -1);
}

} // namespace
} // namespace volt::engine
