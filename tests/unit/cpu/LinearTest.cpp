// Linear and QLinear against double-precision matrix products; QLinear's
// weights are dequantized with runtime/numerics (quantize + dequantizeRow).
#include "runtime/cpu/Linear.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/Matmul.h"
#include "runtime/numerics/Nvfp4.h"

#include "TestUtil.h"

#include <bit>

namespace volt::cpu {
namespace {

using namespace test;

/// out[t, n] of a GEMM in double, with the bound on the FP32 result's error.
struct Expected {
  std::vector<double> value, bound;
};

/// x [T, K] times w [N, K]^T plus bias, and the bound on the FP32 result's
/// error: the dot ((K + 2) u of the absolute products; one more u when the
/// reference weights are themselves FP32-rounded by dequantizeRow), a
/// rounding for the global scale and one for the bias.
Expected referenceGemm(const std::vector<double> &x, const std::vector<double> &w,
                       const std::vector<double> &bias, int64_t tokens, int64_t k, int64_t n,
                       bool weightRounding) {
  Expected e;
  e.value.resize(static_cast<size_t>(tokens * n));
  e.bound.resize(e.value.size());
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t r = 0; r < n; ++r) {
      double sum = 0, abs = 0;
      for (int64_t i = 0; i < k; ++i) {
        double p = x[static_cast<size_t>(t * k + i)] * w[static_cast<size_t>(r * k + i)];
        sum += p;
        abs += std::fabs(p);
      }
      double y = sum + (bias.empty() ? 0.0 : bias[static_cast<size_t>(r)]);
      double bound = dotBound(k + (weightRounding ? 1 : 0), abs);
      bound += kU32 * (std::fabs(sum) + bound) + kU32 * (std::fabs(y) + 2 * bound);
      e.value[static_cast<size_t>(t * n + r)] = y;
      e.bound[static_cast<size_t>(t * n + r)] = bound;
    }
  }
  return e;
}

void expectOutput(const void *out, DType dtype, const Expected &e, const std::string &what) {
  for (size_t i = 0; i < e.value.size(); ++i) {
    double got = dtype == DType::F16 ? h2d(static_cast<const uint16_t *>(out)[i])
                                     : static_cast<double>(static_cast<const float *>(out)[i]);
    double tolerance = dtype == DType::F16 ? f16Tolerance(e.value[i], e.bound[i]) : e.bound[i];
    ASSERT_NEAR(got, e.value[i], tolerance) << what << ", output " << i;
  }
}

TEST(Linear, MatchesDoubleForOddShapesBiasAndOutputTypes) {
  std::mt19937 rng(20);
  ThreadPool pool(3);
  for (int64_t k : {1, 7, 16, 100, 257}) {
    for (int64_t n : {1, 5, 17, 40}) {
      for (int64_t tokens : {1, 3, 9}) {
        for (bool withBias : {false, true}) {
          for (DType outDtype : {DType::F16, DType::F32}) {
            std::vector<uint16_t> x = randomHalf(static_cast<size_t>(tokens * k), rng);
            std::vector<uint16_t> w = randomHalf(static_cast<size_t>(n * k), rng, 0.1f);
            std::vector<uint16_t> bias = randomHalf(static_cast<size_t>(n), rng);
            std::vector<uint8_t> out(static_cast<size_t>(tokens * n) * dtypeSize(outDtype));
            linear({tokens, k, n, outDtype}, x.data(), w.data(), withBias ? bias.data() : nullptr,
                   out.data(), pool);
            Expected e = referenceGemm(toDouble(x), toDouble(w),
                                       withBias ? toDouble(bias) : std::vector<double>{}, tokens, k,
                                       n, false);
            expectOutput(out.data(), outDtype, e,
                         "K " + std::to_string(k) + " N " + std::to_string(n) + " T " +
                             std::to_string(tokens));
          }
        }
      }
    }
  }
}

// FP8 rows: out = dot(x, e4m3 row) * its scale + bias, the scale applied
// to the FP32 sum once (one more rounding in the bound); every E4M3 code of
// both signs; the same bits with 1 and 3 threads.
TEST(Linear, Fp8RowsMatchDoubleAndEveryThreadCount) {
  std::mt19937 rng(21);
  ThreadPool one(1), three(3);
  for (int64_t k : {1, 7, 16, 100, 257}) {
    for (int64_t n : {1, 5, 17, 40}) {
      for (int64_t tokens : {1, 3, 9}) {
        std::vector<uint16_t> x = randomHalf(static_cast<size_t>(tokens * k), rng);
        std::vector<uint16_t> bias = randomHalf(static_cast<size_t>(n), rng);
        std::vector<uint8_t> bytes(static_cast<size_t>(n * k));
        for (auto &b : bytes) {
          b = static_cast<uint8_t>(rng());
          if ((b & 0x7F) == 0x7F)
            b &= 0xFE;
        }
        std::vector<float> scales(static_cast<size_t>(n));
        std::uniform_real_distribution<float> scale(1e-4f, 1e-2f);
        for (float &v : scales)
          v = scale(rng);
        std::vector<double> w(bytes.size());
        for (int64_t r = 0; r < n; ++r)
          for (int64_t i = 0; i < k; ++i)
            w[static_cast<size_t>(r * k + i)] =
                static_cast<double>(nvfp4::decodeE4M3(bytes[static_cast<size_t>(r * k + i)])) *
                scales[static_cast<size_t>(r)];
        Expected e = referenceGemm(toDouble(x), w, toDouble(bias), tokens, k, n, true);
        std::vector<float> out1(static_cast<size_t>(tokens * n)), out3(out1.size());
        const Fp8Matrix m{bytes.data(), scales.data(), n, k};
        fp8Linear({tokens, k, n, DType::F32}, x.data(), m, bias.data(), out1.data(), one);
        fp8Linear({tokens, k, n, DType::F32}, x.data(), m, bias.data(), out3.data(), three);
        expectOutput(out1.data(), DType::F32, e,
                     "K " + std::to_string(k) + " N " + std::to_string(n) + " T " +
                         std::to_string(tokens));
        ASSERT_EQ(out1, out3);
      }
    }
  }
}

TEST(QLinear, MatchesDequantizeThenMatmulWithFusedParts) {
  std::mt19937 rng(21);
  ThreadPool pool(2);
  for (int64_t k : {16, 48, 256}) {
    for (const std::vector<uint32_t> &parts :
         {std::vector<uint32_t>{20}, {8, 3, 3}, {33, 17}, {1, 1, 1}}) {
      for (int64_t tokens : {1, 5, 70}) {
        for (bool withBias : {false, true}) {
          for (DType outDtype : {DType::F16, DType::F32}) {
            TestNvfp4 w = makeNvfp4(parts, k, rng);
            const int64_t n = w.rows;
            std::vector<uint16_t> x = randomHalf(static_cast<size_t>(tokens * k), rng);
            std::vector<uint16_t> bias = randomHalf(static_cast<size_t>(n), rng, 0.01f);
            std::vector<uint8_t> out(static_cast<size_t>(tokens * n) * dtypeSize(outDtype));
            QLinearParams params;
            params.tokens = tokens;
            params.inFeatures = k;
            params.outFeatures = n;
            params.partRows = w.partRows;
            params.globalScales = w.globalScales;
            params.outDtype = outDtype;
            qlinear(params, x.data(), w.view(), withBias ? bias.data() : nullptr, out.data(), pool);
            Expected e = referenceGemm(toDouble(x), w.values,
                                       withBias ? toDouble(bias) : std::vector<double>{}, tokens, k,
                                       n, true);
            expectOutput(out.data(), outDtype, e,
                         "K " + std::to_string(k) + " parts " + std::to_string(parts.size()) +
                             " T " + std::to_string(tokens));
          }
        }
      }
    }
  }
}

TEST(QLinear, SiluMulEpilogueCombinesGateAndUpBeforeRounding) {
  std::mt19937 rng(22);
  ThreadPool pool(2);
  for (int64_t inter : {1, 16, 19}) {
    for (bool sharedScale : {false, true}) {
      const int64_t k = 64, tokens = 6;
      TestNvfp4 w =
          sharedScale
              ? makeNvfp4({static_cast<uint32_t>(2 * inter)}, k, rng)
              : makeNvfp4({static_cast<uint32_t>(inter), static_cast<uint32_t>(inter)}, k, rng);
      std::vector<uint16_t> x = randomHalf(static_cast<size_t>(tokens * k), rng);
      std::vector<uint16_t> bias = randomHalf(static_cast<size_t>(2 * inter), rng, 0.1f);
      std::vector<uint16_t> out(static_cast<size_t>(tokens * inter));
      QLinearParams params;
      params.tokens = tokens;
      params.inFeatures = k;
      params.outFeatures = 2 * inter;
      params.partRows = w.partRows;
      params.globalScales = w.globalScales;
      params.epilogue = Epilogue::SiluMul;
      qlinear(params, x.data(), w.view(), bias.data(), out.data(), pool);

      Expected e = referenceGemm(toDouble(x), w.values, toDouble(bias), tokens, k, 2 * inter, true);
      for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t c = 0; c < inter; ++c) {
          size_t gi = static_cast<size_t>(t * 2 * inter + c), ui = gi + static_cast<size_t>(inter);
          double g = e.value[gi], u = e.value[ui];
          double sig = 1.0 / (1.0 + std::exp(-g));
          double want = g * sig * u;
          // silu'(g) is within [-0.1, 1.1]; the silu itself adds ~4 roundings.
          double bound = 1.1 * e.bound[gi] * std::fabs(u) + std::fabs(g * sig) * e.bound[ui] +
                         8 * kU32 * std::fabs(want);
          double got = h2d(out[static_cast<size_t>(t * inter + c)]);
          ASSERT_NEAR(got, want, f16Tolerance(want, bound))
              << "I " << inter << " token " << t << " column " << c;
        }
      }
    }
  }
}

TEST(QLinear, GlobalScaleMultipliesTheSum) {
  // One row of K = 16 with all elements 1 (code 2) and block scale 1 (0x38):
  // the output is exactly 16 * x * global scale.
  ThreadPool pool(1);
  std::vector<uint8_t> packed(8, 0x22), scales(1, 0x38);
  std::vector<uint16_t> x(16, floatToHalf(0.5f));
  std::vector<float> global = {0.25f};
  float out = 0;
  QLinearParams params;
  params.tokens = 1;
  params.inFeatures = 16;
  params.outFeatures = 1;
  params.globalScales = global;
  params.outDtype = DType::F32;
  qlinear(params, x.data(), {packed.data(), scales.data(), 1, 16}, nullptr, &out, pool);
  EXPECT_EQ(out, 2.0f);
}

/// x rounded to BF16 as Numerics::Fast reads it (nearest even).
std::vector<double> bf16Rounded(const std::vector<double> &x) {
  std::vector<double> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(x[i]));
    r[i] = std::bit_cast<float>(((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16) << 16);
  }
  return r;
}

/// Numerics::Fast: each GEMM is the double product of the BF16-rounded
/// activations and weights (NVFP4 and FP8 weights are BF16 values already)
/// within FP32 summation error, the same bits with 1 and 3 threads; on a
/// CPU without the BF16 instructions, the reference's bits.
TEST(Linear, FastNumericsIsTheBf16ProductOnEveryFormat) {
  // Each path a CPU may take: BF16 (VBMI + AVX512_BF16: the BF16 products
  // within the FP32 bound); fused multiply-adds (AVX-512 or AVX2 without
  // them) and the portable reference, both the reference's bits: an FP16
  // activation times an FP16, FP8 or NVFP4 weight is exact in FP32, so
  // fusing the product into its sum changes no rounding.
  for (detail::DotBlockPath limit :
       {detail::DotBlockPath::Avx512Vbmi, detail::DotBlockPath::Avx512,
        detail::DotBlockPath::Avx2, detail::DotBlockPath::Portable}) {
    detail::setDotBlockPathLimit(limit);
    const detail::GemmPath path = detail::gemmPath(Numerics::Fast);
    const bool fast = path == detail::GemmPath::Bf16;
    std::mt19937 rng(24);
    ThreadPool one(1), three(3);
    for (int64_t k : {16, 48, 100, 257}) {
      for (int64_t tokens : {1, 3, 9}) {
        const int64_t n = 37;
        std::vector<uint16_t> x = randomHalf(static_cast<size_t>(tokens * k), rng);
        std::vector<uint16_t> bias = randomHalf(static_cast<size_t>(n), rng, 0.1f);
        const std::vector<double> xd = fast ? bf16Rounded(toDouble(x)) : toDouble(x);
        const std::string what = "K " + std::to_string(k) + " T " + std::to_string(tokens);
        auto check = [&](const char *op, auto run, const std::vector<double> &w,
                         auto runReference) {
          std::vector<float> out1(static_cast<size_t>(tokens * n)), out3(out1.size()),
              reference(out1.size());
          run(out1.data(), one);
          run(out3.data(), three);
          ASSERT_EQ(out1, out3) << op << " " << what;
          if (!fast) {
            runReference(reference.data(), one);
            ASSERT_EQ(out1, reference) << op << " " << what;
            return;
          }
          expectOutput(out1.data(), DType::F32,
                       referenceGemm(xd, w, toDouble(bias), tokens, k, n, true),
                       std::string(op) + " " + what);
        };

        // FP16 weights (rounded to BF16 by the fast path).
        std::vector<uint16_t> w16 = randomHalf(static_cast<size_t>(n * k), rng, 0.1f);
        auto linearWith = [&](Numerics numerics) {
          return [&, numerics](float *out, ThreadPool &pool) {
            linear({tokens, k, n, DType::F32, numerics}, x.data(), w16.data(), bias.data(), out,
                   pool);
          };
        };
        check("linear", linearWith(Numerics::Fast),
              fast ? bf16Rounded(toDouble(w16)) : toDouble(w16), linearWith(Numerics::Reference));

        // FP8 rows.
        std::vector<uint8_t> bytes(static_cast<size_t>(n * k));
        for (auto &b : bytes) {
          b = static_cast<uint8_t>(rng());
          if ((b & 0x7F) == 0x7F)
            b &= 0xFE;
        }
        std::vector<float> scales(static_cast<size_t>(n));
        for (float &v : scales)
          v = std::uniform_real_distribution<float>(1e-4f, 1e-2f)(rng);
        std::vector<double> w8(bytes.size());
        for (int64_t r = 0; r < n; ++r)
          for (int64_t i = 0; i < k; ++i)
            w8[static_cast<size_t>(r * k + i)] =
                static_cast<double>(nvfp4::decodeE4M3(bytes[static_cast<size_t>(r * k + i)])) *
                scales[static_cast<size_t>(r)];
        const Fp8Matrix m8{bytes.data(), scales.data(), n, k};
        auto fp8With = [&](Numerics numerics) {
          return [&, numerics](float *out, ThreadPool &pool) {
            fp8Linear({tokens, k, n, DType::F32, numerics}, x.data(), m8, bias.data(), out, pool);
          };
        };
        check("fp8Linear", fp8With(Numerics::Fast), w8, fp8With(Numerics::Reference));

        // NVFP4, three fused parts with their own global scales.
        if (k % 16 != 0)
          continue; // NVFP4 needs K a multiple of 16
        TestNvfp4 w4 = makeNvfp4({20, 9, 8}, k, rng);
        auto qlinearWith = [&](Numerics numerics) {
          return [&, numerics](float *out, ThreadPool &pool) {
            QLinearParams q;
            q.tokens = tokens;
            q.inFeatures = k;
            q.outFeatures = n;
            q.partRows = w4.partRows;
            q.globalScales = w4.globalScales;
            q.outDtype = DType::F32;
            q.numerics = numerics;
            qlinear(q, x.data(), w4.view(), bias.data(), out, pool);
          };
        };
        check("qlinear", qlinearWith(Numerics::Fast), w4.values, qlinearWith(Numerics::Reference));
      }
    }
  }
  detail::setDotBlockPathLimit(detail::DotBlockPath::Avx512Vbmi);
}

} // namespace
} // namespace volt::cpu
