// RmsNorm and AddRmsNorm against a double-precision implementation.
#include "runtime/cpu/Norm.h"

#include "TestUtil.h"

namespace volt::cpu {
namespace {

using namespace test;

/// Exact normalisation of x with weight w, and the bound on the FP32
/// computation's error: the sum of squares has relative error (dim + 2) u,
/// of which the inverse square root keeps half; mean, eps, sqrt, reciprocal
/// and the two products add a rounding each.
void referenceNorm(const std::vector<double> &x, const std::vector<double> &w, double eps,
                   std::vector<double> &y, std::vector<double> &bound) {
  size_t dim = x.size();
  double ss = 0;
  for (double v : x)
    ss += v * v;
  double inverse = 1.0 / std::sqrt(ss / static_cast<double>(dim) + eps);
  double relative = (static_cast<double>(dim) + 2) / 2 * kU32 + 8 * kU32;
  y.resize(dim);
  bound.resize(dim);
  for (size_t i = 0; i < dim; ++i) {
    y[i] = x[i] * inverse * w[i];
    bound[i] = relative * std::fabs(y[i]);
  }
}

TEST(RmsNorm, MatchesDoubleForF16AndF32Inputs) {
  std::mt19937 rng(10);
  ThreadPool pool(2);
  for (int64_t dim : {1, 7, 64, 130, 2048}) {
    for (DType inDtype : {DType::F16, DType::F32}) {
      const int64_t rows = 5;
      std::vector<uint16_t> inHalf = randomHalf(static_cast<size_t>(rows * dim), rng, 3.0f);
      std::vector<float> inFloat(inHalf.size());
      std::normal_distribution<float> dist(0.0f, 3.0f);
      for (auto &v : inFloat)
        v = dist(rng);
      std::vector<uint16_t> weight = randomHalf(static_cast<size_t>(dim), rng);
      std::vector<uint16_t> out(inHalf.size());
      RmsNormParams params{rows, dim, 1e-5f, inDtype};
      const void *in = inDtype == DType::F16 ? static_cast<const void *>(inHalf.data())
                                             : static_cast<const void *>(inFloat.data());
      rmsNorm(params, in, weight.data(), out.data(), pool);

      std::vector<double> w = toDouble(weight), y, bound;
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<double> x(static_cast<size_t>(dim));
        for (int64_t i = 0; i < dim; ++i)
          x[static_cast<size_t>(i)] = inDtype == DType::F16
                                          ? h2d(inHalf[static_cast<size_t>(r * dim + i)])
                                          : inFloat[static_cast<size_t>(r * dim + i)];
        referenceNorm(x, w, static_cast<double>(1e-5f), y, bound);
        for (int64_t i = 0; i < dim; ++i) {
          double got = h2d(out[static_cast<size_t>(r * dim + i)]);
          ASSERT_NEAR(got, y[static_cast<size_t>(i)],
                      f16Tolerance(y[static_cast<size_t>(i)], bound[static_cast<size_t>(i)]))
              << "dim " << dim << " row " << r << " element " << i;
        }
      }
    }
  }
}

TEST(RmsNorm, WorksInPlace) {
  std::mt19937 rng(11);
  ThreadPool pool(1);
  std::vector<uint16_t> in = randomHalf(120, rng), weight = randomHalf(40, rng);
  std::vector<uint16_t> separate(in.size()), inPlace = in;
  RmsNormParams params{3, 40, 1e-6f, DType::F16};
  rmsNorm(params, in.data(), weight.data(), separate.data(), pool);
  rmsNorm(params, inPlace.data(), weight.data(), inPlace.data(), pool);
  EXPECT_EQ(separate, inPlace);
}

TEST(RmsNorm, EpsilonKeepsZeroRowsFinite) {
  ThreadPool pool(1);
  std::vector<uint16_t> in(16, 0), weight(16, floatToHalf(1.0f)), out(16, 0xFFFF);
  rmsNorm({1, 16, 1e-6f, DType::F16}, in.data(), weight.data(), out.data(), pool);
  for (uint16_t v : out)
    EXPECT_EQ(v, 0);
}

TEST(AddRmsNorm, UpdatesTheResidualAndNormalisesTheStoredValue) {
  std::mt19937 rng(12);
  ThreadPool pool(2);
  for (int64_t dim : {3, 64, 200}) {
    for (DType residualDtype : {DType::F16, DType::F32}) {
      const int64_t tokens = 4;
      const size_t n = static_cast<size_t>(tokens * dim);
      std::vector<uint16_t> in = randomHalf(n, rng),
                            weight = randomHalf(static_cast<size_t>(dim), rng);
      std::vector<uint16_t> resHalf = randomHalf(n, rng, 4.0f);
      std::vector<float> resFloat(n);
      for (size_t i = 0; i < n; ++i)
        resFloat[i] = halfToFloat(resHalf[i]) * 1.001f;
      std::vector<uint16_t> resHalfBefore = resHalf;
      std::vector<float> resFloatBefore = resFloat;
      void *residual = residualDtype == DType::F16 ? static_cast<void *>(resHalf.data())
                                                   : static_cast<void *>(resFloat.data());
      std::vector<uint16_t> out(n);
      AddRmsNormParams params{tokens, dim, 1e-6f, DType::F16, residualDtype};
      addRmsNorm(params, in.data(), residual, weight.data(), out.data(), pool);

      std::vector<double> w = toDouble(weight), y, bound;
      for (int64_t t = 0; t < tokens; ++t) {
        std::vector<double> stored(static_cast<size_t>(dim));
        for (int64_t i = 0; i < dim; ++i) {
          size_t at = static_cast<size_t>(t * dim + i);
          // The stored residual is the FP32 sum (the exact sum rounded to
          // FP32) rounded to the residual's type.
          if (residualDtype == DType::F16) {
            double sum = h2d(resHalfBefore[at]) + h2d(in[at]);
            ASSERT_EQ(resHalf[at], floatToHalf(static_cast<float>(sum))) << "element " << at;
            stored[static_cast<size_t>(i)] = h2d(resHalf[at]);
          } else {
            double sum = static_cast<double>(resFloatBefore[at]) + h2d(in[at]);
            ASSERT_EQ(resFloat[at], static_cast<float>(sum)) << "element " << at;
            stored[static_cast<size_t>(i)] = resFloat[at];
          }
        }
        referenceNorm(stored, w, static_cast<double>(1e-6f), y, bound);
        for (int64_t i = 0; i < dim; ++i) {
          double got = h2d(out[static_cast<size_t>(t * dim + i)]);
          ASSERT_NEAR(got, y[static_cast<size_t>(i)],
                      f16Tolerance(y[static_cast<size_t>(i)], bound[static_cast<size_t>(i)]))
              << "dim " << dim << " token " << t << " element " << i;
        }
      }
    }
  }
}

} // namespace
} // namespace volt::cpu
