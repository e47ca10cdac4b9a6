// SiluMul and SigmoidGateAdd against double precision.
#include "runtime/cpu/Activation.h"

#include "TestUtil.h"

namespace volt::cpu {
namespace {

using namespace test;

TEST(SiluMul, MatchesDouble) {
  std::mt19937 rng(50);
  ThreadPool pool(2);
  for (int64_t dim : {1, 13, 64, 768}) {
    const int64_t rows = 7;
    std::vector<uint16_t> in = randomHalf(static_cast<size_t>(rows * 2 * dim), rng, 4.0f);
    // Large gates: silu saturates to g, or to -0 through exp overflow.
    in[0] = floatToHalf(-100.0f);
    in[1 % (2 * dim)] = floatToHalf(30.0f);
    std::vector<uint16_t> out(static_cast<size_t>(rows * dim));
    siluMul({rows, dim}, in.data(), out.data(), pool);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < dim; ++i) {
        double g = h2d(in[static_cast<size_t>(r * 2 * dim + i)]);
        double u = h2d(in[static_cast<size_t>(r * 2 * dim + dim + i)]);
        double want = g / (1.0 + std::exp(-g)) * u;
        // exp (1 ulp), the sum, the quotient and the product.
        double bound = 6 * kU32 * std::fabs(want);
        ASSERT_NEAR(h2d(out[static_cast<size_t>(r * dim + i)]), want, f16Tolerance(want, bound))
            << "dim " << dim << " row " << r << " i " << i;
      }
    }
  }
}

TEST(SigmoidGateAdd, MatchesDoubleForF16AndF32Gates) {
  std::mt19937 rng(51);
  ThreadPool pool(2);
  for (DType gateDtype : {DType::F16, DType::F32}) {
    const int64_t tokens = 5, dim = 37;
    std::vector<uint16_t> out = randomHalf(static_cast<size_t>(tokens * dim), rng);
    std::vector<uint16_t> before = out, value = randomHalf(out.size(), rng);
    std::vector<uint16_t> gateHalf = randomHalf(static_cast<size_t>(tokens), rng, 3.0f);
    std::vector<float> gateFloat(static_cast<size_t>(tokens));
    for (auto &g : gateFloat)
      g = std::normal_distribution<float>(0.0f, 3.0f)(rng);
    const void *gate = gateDtype == DType::F16 ? static_cast<const void *>(gateHalf.data())
                                               : static_cast<const void *>(gateFloat.data());
    sigmoidGateAdd({tokens, dim, gateDtype}, out.data(), value.data(), gate, pool);
    for (int64_t t = 0; t < tokens; ++t) {
      double g = gateDtype == DType::F16 ? h2d(gateHalf[static_cast<size_t>(t)])
                                         : gateFloat[static_cast<size_t>(t)];
      double sigmoid = 1.0 / (1.0 + std::exp(-g));
      for (int64_t i = 0; i < dim; ++i) {
        size_t at = static_cast<size_t>(t * dim + i);
        double product = sigmoid * h2d(value[at]);
        double want = h2d(before[at]) + product;
        double bound = 6 * kU32 * std::fabs(product) + kU32 * std::fabs(want);
        ASSERT_NEAR(h2d(out[at]), want, f16Tolerance(want, bound)) << "token " << t << " i " << i;
      }
    }
  }
}

} // namespace
} // namespace volt::cpu
