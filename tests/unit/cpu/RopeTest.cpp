// QkNormRope: the rotary tables against double precision, and the op
// against a double implementation that takes its angles the documented way
// (an FP32 product of the position and the FP32 inverse frequency, as HF).
#include "runtime/cpu/Rope.h"

#include "TestUtil.h"

namespace volt::cpu {
namespace {

using namespace test;

TEST(Rope, InverseFrequenciesAreCorrectlyRoundedPowers) {
  for (int64_t dim : {2, 64, 96, 128}) {
    for (float theta : {10000.0f, 1000000.0f, 500000.0f}) {
      std::vector<float> inv = ropeInverseFrequencies(dim, theta);
      ASSERT_EQ(inv.size(), static_cast<size_t>(dim / 2));
      EXPECT_EQ(inv[0], 1.0f);
      for (int64_t i = 0; i < dim / 2; ++i) {
        double want = 1.0 / std::pow(static_cast<double>(theta), 2.0 * i / dim);
        // The FP32 exponent (u relative, times ln(theta) < 15) and two
        // roundings.
        EXPECT_NEAR(inv[static_cast<size_t>(i)], want, want * 20 * kU32)
            << "D " << dim << " theta " << theta << " i " << i;
        if (i > 0) {
          EXPECT_LT(inv[static_cast<size_t>(i)], inv[static_cast<size_t>(i - 1)]);
        }
      }
    }
  }
}

TEST(Rope, CosSinOfTheFp32Angle) {
  std::vector<float> inv = ropeInverseFrequencies(128, 1000000.0f);
  std::vector<float> c(64), s(64);
  for (int64_t position : {0, 1, 17, 4095, 131071}) {
    ropeCosSin(position, inv, c.data(), s.data());
    for (size_t i = 0; i < 64; ++i) {
      float angle = static_cast<float>(position) * inv[i];
      EXPECT_EQ(c[i], static_cast<float>(std::cos(static_cast<double>(angle))));
      EXPECT_EQ(s[i], static_cast<float>(std::sin(static_cast<double>(angle))));
    }
  }
}

struct RopeCase {
  int64_t tokens, heads, kvHeads, dim;
  bool norm;
};

TEST(QkNormRope, MatchesDoubleWithAndWithoutNorms) {
  std::mt19937 rng(30);
  ThreadPool pool(2);
  for (RopeCase c : {RopeCase{3, 4, 2, 8, false}, RopeCase{5, 4, 1, 64, true},
                     RopeCase{2, 2, 2, 128, true}, RopeCase{4, 3, 3, 6, true}}) {
    const int64_t row = (c.heads + 2 * c.kvHeads) * c.dim;
    std::vector<uint16_t> qkv = randomHalf(static_cast<size_t>(c.tokens * row), rng, 2.0f);
    std::vector<uint16_t> before = qkv;
    std::vector<uint16_t> qNorm = randomHalf(static_cast<size_t>(c.dim), rng),
                          kNorm = randomHalf(static_cast<size_t>(c.dim), rng);
    std::vector<int32_t> positions(static_cast<size_t>(c.tokens));
    for (auto &p : positions)
      p = static_cast<int32_t>(rng() % 200000);
    positions[0] = 0;
    QkNormRopeParams params{c.tokens, c.heads, c.kvHeads, c.dim, 1000000.0f, 1e-6f};
    qkNormRope(params, qkv.data(), positions.data(), c.norm ? qNorm.data() : nullptr,
               c.norm ? kNorm.data() : nullptr, pool);

    std::vector<float> inv = ropeInverseFrequencies(c.dim, 1000000.0f);
    const int64_t half = c.dim / 2;
    for (int64_t t = 0; t < c.tokens; ++t) {
      for (int64_t h = 0; h < c.heads + 2 * c.kvHeads; ++h) {
        const size_t base = static_cast<size_t>(t * row + h * c.dim);
        if (h >= c.heads + c.kvHeads) { // v: untouched
          for (int64_t i = 0; i < c.dim; ++i)
            ASSERT_EQ(qkv[base + static_cast<size_t>(i)], before[base + static_cast<size_t>(i)]);
          continue;
        }
        std::vector<double> x(static_cast<size_t>(c.dim));
        for (int64_t i = 0; i < c.dim; ++i)
          x[static_cast<size_t>(i)] = h2d(before[base + static_cast<size_t>(i)]);
        double relative = 0;
        if (c.norm) {
          const std::vector<uint16_t> &w = h < c.heads ? qNorm : kNorm;
          double ss = 0;
          for (double v : x)
            ss += v * v;
          double inverse = 1.0 / std::sqrt(ss / static_cast<double>(c.dim) + 1e-6);
          for (int64_t i = 0; i < c.dim; ++i)
            x[static_cast<size_t>(i)] *= inverse * h2d(w[static_cast<size_t>(i)]);
          relative = (static_cast<double>(c.dim) / 2 + 8) * kU32;
        }
        for (int64_t i = 0; i < half; ++i) {
          float angle =
              static_cast<float>(positions[static_cast<size_t>(t)]) * inv[static_cast<size_t>(i)];
          double cs = std::cos(static_cast<double>(angle)),
                 sn = std::sin(static_cast<double>(angle));
          double x1 = x[static_cast<size_t>(i)], x2 = x[static_cast<size_t>(i + half)];
          double y1 = x1 * cs - x2 * sn, y2 = x2 * cs + x1 * sn;
          // Normalised inputs' error, FP32 cos/sin (u each), two products
          // and a sum.
          double bound = (relative + 4 * kU32) * (std::fabs(x1) + std::fabs(x2));
          ASSERT_NEAR(h2d(qkv[base + static_cast<size_t>(i)]), y1, f16Tolerance(y1, bound))
              << "token " << t << " head " << h << " i " << i;
          ASSERT_NEAR(h2d(qkv[base + static_cast<size_t>(i + half)]), y2, f16Tolerance(y2, bound))
              << "token " << t << " head " << h << " i " << i + half;
        }
      }
    }
  }
}

TEST(QkNormRope, PositionZeroWithoutNormsIsTheIdentity) {
  std::mt19937 rng(31);
  ThreadPool pool(1);
  std::vector<uint16_t> qkv = randomHalf(64, rng), before = qkv;
  std::vector<int32_t> positions = {0};
  qkNormRope({1, 2, 1, 16, 10000.0f, 1e-6f}, qkv.data(), positions.data(), nullptr, nullptr, pool);
  EXPECT_EQ(qkv, before);
}

} // namespace
} // namespace volt::cpu
