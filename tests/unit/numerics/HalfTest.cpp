// FP16/BF16 conversions: exhaustive over all 16-bit patterns where the answer
// is defined by IEEE 754 (every half is exactly a float).
#include "runtime/numerics/Half.h"

#include <cmath>
#include <gtest/gtest.h>

namespace volt {
namespace {

TEST(Half, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = halfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE((h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0);
      continue;
    }
    EXPECT_EQ(floatToHalf(f), h) << std::hex << h;
  }
}

TEST(Half, KnownValues) {
  EXPECT_EQ(halfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00) << "halfway to 65536 rounds to even (inf)";
  EXPECT_EQ(floatToHalf(1e-9f), 0x0000);
  EXPECT_EQ(floatToHalf(-1e-9f), 0x8000);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000) << "tie to even";
  EXPECT_EQ(floatToHalf(std::ldexp(1.5f, -24)), 0x0002) << "tie to even";
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00) << "tie to even";
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(3.0f, -11)), 0x3C02);
}

TEST(Half, Bf16) {
  EXPECT_EQ(bf16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(floatToBf16(1.0f), 0x3F80);
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float f = bf16ToFloat(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      EXPECT_EQ(floatToBf16(f), b);
    }
  }
}

} // namespace
} // namespace volt
