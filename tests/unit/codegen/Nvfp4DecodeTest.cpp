//===- Nvfp4DecodeTest.cpp - the kernels' bit-trick decoders, on the host -===//
//
// templates/common/nvfp4.cuh and common/math.cuh are plain C++ outside their
// few PTX helpers, so the very functions the kernels run are checked here
// against runtime/numerics: every E2M1 code in every nibble position, every
// E4M3 byte, and every element x scale product (all exact in FP16).
//
//===----------------------------------------------------------------------===//
#include "common/math.cuh"
#include "common/nvfp4.cuh"
#include "runtime/numerics/Half.h"
#include "runtime/numerics/Nvfp4.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace volt {
namespace {

float lowHalf(u32 w) { return halfToFloat(static_cast<uint16_t>(w & 0xFFFFu)); }
float highHalf(u32 w) { return halfToFloat(static_cast<uint16_t>(w >> 16)); }

TEST(Nvfp4Decode, E2M1InEveryPositionIsTheValueTimes2ToMinus14) {
  const float twoToMinus14 = std::ldexp(1.0f, -14);
  for (int position = 0; position < 8; ++position)
    for (u32 code = 0; code < 16; ++code) {
      // The other nibbles hold a different code, which must not leak in.
      u32 word = 0x5A3C96E1u;
      word = (word & ~(0xFu << (4 * position))) | (code << (4 * position));
      u32 pairs[4];
      decodeE2M1x8(word, pairs);
      const u32 pair = pairs[position % 4];
      const float got = position < 4 ? lowHalf(pair) : highHalf(pair);
      const float want = nvfp4::decodeE2M1(static_cast<uint8_t>(code)) * twoToMinus14;
      EXPECT_EQ(got, want) << "code " << code << " at nibble " << position;
      EXPECT_EQ(std::signbit(got), (code & 8) != 0) << "code " << code;
    }
}

TEST(Nvfp4Decode, E4M3TimesTwoTo8IsTheScale) {
  for (u32 byte = 0; byte < 256; ++byte) {
    if ((byte & 0x7F) == 0x7F)
      continue; // NaN codes: the conversion gives 480, not NaN (never in valid checkpoints)
    const u32 pair = decodeE4M3Pair(byte);
    EXPECT_EQ(lowHalf(pair), highHalf(pair));
    EXPECT_EQ(lowHalf(pair) * 256.0f, nvfp4::decodeE4M3(static_cast<uint8_t>(byte)))
        << "byte " << byte;
    // x 2^8 is exact in FP16 too (448 is the largest result).
    EXPECT_EQ(halfToFloat(floatToHalf(lowHalf(pair) * 256.0f)), lowHalf(pair) * 256.0f);
  }
}

TEST(Nvfp4Decode, EveryElementTimesScaleProductIsExactInFp16) {
  // The kernels multiply the two in FP16 (mul.rn.f16x2): exact when the
  // real product is an FP16 number, which this checks for every pair.
  const float twoToMinus14 = std::ldexp(1.0f, -14);
  for (u32 code = 0; code < 16; ++code)
    for (u32 byte = 0; byte < 127; ++byte) {
      const float element = nvfp4::decodeE2M1(static_cast<uint8_t>(code)) * twoToMinus14;
      const float scale = nvfp4::decodeE4M3(static_cast<uint8_t>(byte));
      const float product = element * scale; // exact in FP32 (4 x 4 significant bits)
      EXPECT_EQ(halfToFloat(floatToHalf(product)), product)
          << "code " << code << " scale byte " << byte;
      EXPECT_LE(std::fabs(product), 0.1641f);
    }
}

TEST(Nvfp4Decode, ActivationRegroupingMatchesTheElementPairs) {
  // decodeE2M1x8 pairs elements (i, i + 4); lowHalves/highHalves pair the
  // activations the same way, so a dot over the MMA's K slots is the dot in
  // index order. Checked with distinct values per element.
  u32 x[4];
  for (int i = 0; i < 4; ++i)
    x[i] = static_cast<u32>(floatToHalf(static_cast<float>(2 * i))) |
           static_cast<u32>(floatToHalf(static_cast<float>(2 * i + 1))) << 16;
  // x[j] holds elements 2j, 2j + 1. The kernel groups (x0, x2) and (x1, x3).
  EXPECT_EQ(lowHalf(lowHalves(x[0], x[2])), 0.0f);
  EXPECT_EQ(highHalf(lowHalves(x[0], x[2])), 4.0f);
  EXPECT_EQ(lowHalf(highHalves(x[0], x[2])), 1.0f);
  EXPECT_EQ(highHalf(highHalves(x[0], x[2])), 5.0f);
  EXPECT_EQ(lowHalf(lowHalves(x[1], x[3])), 2.0f);
  EXPECT_EQ(highHalf(lowHalves(x[1], x[3])), 6.0f);
  EXPECT_EQ(lowHalf(highHalves(x[1], x[3])), 3.0f);
  EXPECT_EQ(highHalf(highHalves(x[1], x[3])), 7.0f);
  // ... and decodeE2M1x8's pairs are (0,4) (1,5) (2,6) (3,7).
  u32 pairs[4];
  decodeE2M1x8(0x76543210u, pairs); // element i has code i
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(lowHalf(pairs[i]), nvfp4::decodeE2M1(static_cast<uint8_t>(i)) / 16384.0f);
    EXPECT_EQ(highHalf(pairs[i]), nvfp4::decodeE2M1(static_cast<uint8_t>(i + 4)) / 16384.0f);
  }
}

TEST(KernelMath, SinCosRoundsToTheCLibrarysFp32Values) {
  // Angles as RoPE forms them: float(position) * inv_freq, for Qwen3's
  // theta 1e6 and Llama's 5e5 over 128K positions.
  long differ = 0, total = 0;
  for (double theta : {1e6, 5e5, 1e4})
    for (int position = 0; position < 131072; position += 3)
      for (int i = 0; i < 64; i += 5) {
        const float inv =
            1.0f / static_cast<float>(std::pow(theta, static_cast<float>(2 * i) / 128.0f));
        const float angle = static_cast<float>(position) * inv;
        double s, c;
        sinCos(angle, s, c);
        ++total;
        if (static_cast<float>(s) != static_cast<float>(std::sin(static_cast<double>(angle))) ||
            static_cast<float>(c) != static_cast<float>(std::cos(static_cast<double>(angle))))
          ++differ;
        ASSERT_NEAR(s, std::sin(static_cast<double>(angle)), 1e-15);
        ASSERT_NEAR(c, std::cos(static_cast<double>(angle)), 1e-15);
      }
  EXPECT_EQ(differ, 0) << "of " << total;
}

} // namespace
} // namespace volt
