// The inner loops the ops are built from: exact conversions, the documented
// summation order, and NVFP4 decoding against runtime/numerics.
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/Types.h"
#include "runtime/numerics/Nvfp4.h"

#include "TestUtil.h"

#include <bit>

namespace volt::cpu {
namespace {

using namespace test;

TEST(Kernels, HalfToFloatIsExactForEveryCode) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i)
    all[i] = static_cast<uint16_t>(i);
  std::vector<float> got(all.size());
  // An odd start and length exercise the vector loop's edges.
  detail::halfToFloat(all.data(), got.data(), 3);
  detail::halfToFloat(all.data() + 3, got.data() + 3, 65536 - 3);
  for (uint32_t i = 0; i < 65536; ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]),
              std::bit_cast<uint32_t>(halfToFloat(static_cast<uint16_t>(i))))
        << "half 0x" << std::hex << i;
}

TEST(Kernels, FloatToHalfRoundsToNearestEven) {
  std::vector<float> in = {
      0.0f,     -0.0f,    1.0f,     65504.0f,        65520.0f,
      1e-8f,    2.98e-8f, 0x1p-25f, 1.0f + 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-20f,
      -3.14159f};
  std::vector<uint16_t> out(in.size());
  detail::floatToHalf(in.data(), out.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i)
    EXPECT_EQ(out[i], floatToHalf(in[i])) << in[i];
}

/// The batch conversion (branch-free, vectorized) gives volt::floatToHalf's
/// bits: every FP32 pattern around the half's subnormal, normal and
/// overflow boundaries and the NaNs' start, both signs, and every 61st
/// pattern elsewhere.
TEST(Kernels, FloatToHalfBatchMatchesTheScalarConversion) {
  std::vector<uint32_t> patterns;
  auto range = [&](uint32_t begin, uint32_t end, uint32_t step) {
    for (uint64_t b = begin; b < end; b += step)
      patterns.push_back(static_cast<uint32_t>(b));
  };
  range(0, 0x7FFFFFFFu, 61);
  range(0x32F00000u, 0x33100000u, 1); // below half the smallest subnormal
  range(0x387F0000u, 0x38810000u, 1); // subnormal to normal
  range(0x477FE000u, 0x47801000u, 1); // 65504, 65520 (to inf), 65536
  range(0x7F7FFF00u, 0x7F800100u, 1); // the largest floats, inf, first NaNs
  range(0x7FFFFF00u, 0x80000000u, 1);
  const size_t half = patterns.size();
  for (size_t i = 0; i < half; ++i)
    patterns.push_back(patterns[i] | 0x80000000u);
  std::vector<float> in(patterns.size());
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = std::bit_cast<float>(patterns[i]);
  std::vector<uint16_t> out(in.size());
  detail::floatToHalf(in.data(), out.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(out[i], floatToHalf(in[i])) << std::hex << "0x" << patterns[i];
}

/// The documented order, spelled out: 16 strided lanes, folded pairwise.
float laneOrderDot(const float *a, const float *b, int64_t n) {
  float lanes[16] = {};
  for (int64_t i = 0; i < n; ++i) {
    volatile float product = a[i] * b[i]; // no contraction into an FMA
    lanes[i % 16] += product;
  }
  for (int width = 8; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l)
      lanes[l] += lanes[l + width];
  return lanes[0];
}

TEST(Kernels, DotFollowsTheDocumentedLaneOrder) {
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  for (int64_t n : {0, 1, 5, 15, 16, 17, 31, 64, 100, 129, 2048, 2049}) {
    std::vector<float> a(static_cast<size_t>(n)), b(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      // Wide magnitudes make the order visible in the result's low bits.
      a[i] = std::ldexp(dist(rng), static_cast<int>(rng() % 20) - 10);
      b[i] = dist(rng);
    }
    float want = laneOrderDot(a.data(), b.data(), n);
    EXPECT_EQ(std::bit_cast<uint32_t>(detail::dot(a.data(), b.data(), n)),
              std::bit_cast<uint32_t>(want))
        << "n = " << n;
    EXPECT_EQ(std::bit_cast<uint32_t>(detail::sumSquares(a.data(), n)),
              std::bit_cast<uint32_t>(laneOrderDot(a.data(), a.data(), n)))
        << "n = " << n;
  }
}

TEST(Kernels, DotRowsMatchesDotBitForBit) {
  std::mt19937 rng(2);
  std::normal_distribution<float> dist;
  for (int64_t n : {1, 16, 37, 256}) {
    for (int64_t rows : {1, 3, 4, 9}) {
      int64_t stride = n + 3;
      std::vector<float> w(static_cast<size_t>(n)), x(static_cast<size_t>(rows * stride));
      for (auto &v : w)
        v = dist(rng);
      for (auto &v : x)
        v = std::ldexp(dist(rng), static_cast<int>(rng() % 16) - 8);
      std::vector<float> out(static_cast<size_t>(rows));
      detail::dotRows(w.data(), x.data(), stride, rows, n, out.data());
      for (int64_t r = 0; r < rows; ++r)
        EXPECT_EQ(std::bit_cast<uint32_t>(out[static_cast<size_t>(r)]),
                  std::bit_cast<uint32_t>(detail::dot(x.data() + r * stride, w.data(), n)))
            << "n = " << n << " row " << r;
    }
  }
}

TEST(Kernels, AxpyIsElementwise) {
  std::vector<float> x = {1.5f, -2.0f, 3.0f}, y = {1.0f, 1.0f, 1.0f};
  detail::axpy(0.5f, x.data(), y.data(), 3);
  EXPECT_EQ(y, (std::vector<float>{1.75f, 0.0f, 2.5f}));
}

TEST(Kernels, Nvfp4RowDecodesEveryElementAndScaleCode) {
  // Every (element, scale) code pair: 256 blocks of 16, block b scaled by
  // code b, element j of each block = code j.
  const int64_t cols = int64_t{256} * 16;
  std::vector<uint8_t> packed(static_cast<size_t>(cols / 2)), scales(256);
  for (int b = 0; b < 256; ++b) {
    scales[static_cast<size_t>(b)] = static_cast<uint8_t>(b);
    for (int j = 0; j < 8; ++j)
      packed[static_cast<size_t>(b) * 8 + static_cast<size_t>(j)] =
          static_cast<uint8_t>((2 * j) | (2 * j + 1) << 4);
  }
  std::vector<float> got(static_cast<size_t>(cols)), table(got.size());
  detail::decodeNvfp4Row(packed.data(), scales.data(), cols, got.data());
  detail::decodeNvfp4RowWithTable(packed.data(), scales.data(), cols, table.data());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_TRUE(std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(table[i]) ||
                (std::isnan(got[i]) && std::isnan(table[i])))
        << "element " << i << ": the two decoders differ";
  for (int b = 0; b < 256; ++b) {
    for (int j = 0; j < 16; ++j) {
      float want =
          nvfp4::decodeE2M1(static_cast<uint8_t>(j)) * nvfp4::decodeE4M3(static_cast<uint8_t>(b));
      float g = got[static_cast<size_t>(b) * 16 + static_cast<size_t>(j)];
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(g)) << "scale code " << b << " element " << j;
      else
        EXPECT_EQ(std::bit_cast<uint32_t>(g), std::bit_cast<uint32_t>(want))
            << "scale code " << b << " element " << j;
    }
  }
}

/// Weights of every format for dotBlock, and each row decoded to FP32 by
/// the documented decoders (the reference the block must match).
struct BlockWeights {
  std::vector<float> f32;
  std::vector<uint16_t> f16;
  std::vector<uint8_t> packed, scales;
  std::vector<float> decoded;

  BlockWeights(detail::WeightRows::Format format, int64_t rows, int64_t cols, std::mt19937 &rng) {
    std::normal_distribution<float> dist;
    const size_t n = static_cast<size_t>(rows * cols);
    decoded.resize(n);
    switch (format) {
    case detail::WeightRows::Format::F32:
      f32.resize(n);
      for (auto &v : f32)
        v = std::ldexp(dist(rng), static_cast<int>(rng() % 20) - 10);
      // A signed zero and a subnormal, which a careless tail or fold loses.
      f32[0] = -0.0f;
      f32[n - 1] = 0x1p-140f;
      decoded = f32;
      break;
    case detail::WeightRows::Format::F16:
      f16.resize(n);
      for (auto &v : f16)
        v = floatToHalf(std::ldexp(dist(rng), static_cast<int>(rng() % 20) - 14));
      f16[0] = 0x8000;     // -0
      f16[n - 1] = 0x0003; // subnormal
      detail::halfToFloat(f16.data(), decoded.data(), static_cast<int64_t>(n));
      break;
    case detail::WeightRows::Format::Nvfp4:
      packed.resize(n / 2);
      scales.resize(n / 16);
      for (auto &b : packed)
        b = static_cast<uint8_t>(rng());
      for (auto &b : scales)
        b = static_cast<uint8_t>(rng() % 0x7F); // every finite positive code
      for (int64_t r = 0; r < rows; ++r)
        detail::decodeNvfp4Row(packed.data() + r * cols / 2, scales.data() + r * cols / 16, cols,
                               decoded.data() + r * cols);
      break;
    case detail::WeightRows::Format::Fp8:
      // Every finite E4M3 code of both signs (0x7F and 0xFF are NaN);
      // dotBlock reads them as their values x 2^-8.
      packed.resize(n);
      for (auto &b : packed) {
        b = static_cast<uint8_t>(rng());
        if ((b & 0x7F) == 0x7F)
          b &= 0xFE;
      }
      for (size_t i = 0; i < n; ++i)
        decoded[i] = std::ldexp(nvfp4::decodeE4M3(packed[i]), -8);
      break;
    }
  }

  detail::WeightRows rows(detail::WeightRows::Format format, int64_t cols) const {
    switch (format) {
    case detail::WeightRows::Format::F32:
      return detail::WeightRows::f32(f32.data(), cols);
    case detail::WeightRows::Format::F16:
      return detail::WeightRows::f16(f16.data(), cols);
    case detail::WeightRows::Format::Fp8:
      return detail::WeightRows::fp8(packed.data(), cols);
    case detail::WeightRows::Format::Nvfp4:
      break;
    }
    return detail::WeightRows::nvfp4(packed.data(), scales.data(), cols);
  }
};

/// Every path of dotBlock the CPU can run (AVX-512, AVX2, portable) gives
/// dot() of the decoded row, bit for bit, for every format (FP16
/// activations on the plan formats, whose products are exact, so fusing
/// them changes nothing; any FP32 activations on F32 rows, never fused), row
/// count (blocks of 4 rows and their remainders), token count (blocks of 4
/// and 2, register decode and decode-once for NVFP4) and length (with and
/// without a tail of fewer than 16).
TEST(Kernels, DotBlockMatchesDotOfTheDecodedRowOnEveryPath) {
  using Format = detail::WeightRows::Format;
  std::mt19937 rng(7);
  std::normal_distribution<float> dist;
  using Path = detail::DotBlockPath;
  for (Path limit : {Path::Avx512Vbmi, Path::Avx512, Path::Avx2, Path::Portable}) {
    detail::setDotBlockPathLimit(limit);
    const int path = static_cast<int>(detail::dotBlockPath());
    if (path < static_cast<int>(limit))
      std::printf("dotBlock: this CPU has no %s path; checked its best below it\n",
                  limit == Path::Avx512Vbmi ? "AVX-512 VBMI"
                  : limit == Path::Avx512   ? "AVX-512"
                                            : "AVX2");
    for (Format format : {Format::F32, Format::F16, Format::Nvfp4, Format::Fp8}) {
      std::vector<int64_t> lengths = {16, 64, 1040};
      if (format != Format::Nvfp4)
        lengths = {1, 15, 16, 37, 100, 1041};
      for (int64_t cols : lengths) {
        const int64_t allRows = 21, first = 2;
        BlockWeights w(format, allRows, cols, rng);
        for (int64_t rows : {1, 3, 4, 7, 8, 13, 19}) {
          // NVFP4 rows take up to 8 tokens a pass, 3 or 4 rows a kernel.
          for (int64_t tokens : {1, 2, 3, 4, 5, 6, 7, 8, 9, 17}) {
            const int64_t xStride = cols + 5, outStride = tokens + 2;
            // FP16 values, as every GEMM passes, for the rows whose products
            // are then exact (where dotBlock fuses them); F32 rows with any.
            std::vector<float> x(static_cast<size_t>(tokens * xStride));
            for (auto &v : x) {
              v = std::ldexp(dist(rng), static_cast<int>(rng() % 16) - 8);
              if (format != Format::F32)
                v = halfToFloat(floatToHalf(v));
            }
            x[0] = -0.0f;
            std::vector<float> out(static_cast<size_t>(rows * outStride), 12345.0f), scratch;
            detail::dotBlock(w.rows(format, cols), first, rows, x.data(), xStride, tokens,
                             out.data(), outStride, scratch);
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t t = 0; t < tokens; ++t) {
                float want = detail::dot(w.decoded.data() + (first + r) * cols,
                                         x.data() + t * xStride, cols);
                ASSERT_EQ(std::bit_cast<uint32_t>(out[static_cast<size_t>(r * outStride + t)]),
                          std::bit_cast<uint32_t>(want))
                    << "path " << path << " format " << static_cast<int>(format) << " cols " << cols
                    << " rows " << rows << " tokens " << tokens << " at (" << r << ", " << t << ")";
              }
            // Nothing outside the block is written.
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t t = tokens; t < outStride; ++t)
                ASSERT_EQ(out[static_cast<size_t>(r * outStride + t)], 12345.0f);
          }
        }
      }
    }
  }
  detail::setDotBlockPathLimit(Path::Avx512Vbmi);
}

/// FP32 to BF16 bits, round to nearest even (finite inputs): the test's
/// own statement of the rounding the fast path is specified with.
uint16_t bf16Bits(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

float bf16Value(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

/// halfToBf16 gives, for every FP16 value, the nearest BF16 value (ties to
/// the even mantissa), keeps infinities and NaNs, and pads with zeros.
TEST(Kernels, HalfToBf16RoundsEveryHalfToNearestEven) {
  std::vector<uint16_t> halves(65536), out(65536 + 7, 0xABCD);
  for (uint32_t h = 0; h < 65536; ++h)
    halves[h] = static_cast<uint16_t>(h);
  detail::halfToBf16(halves.data(), out.data(), 65536, 65536 + 7);
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = halfToFloat(static_cast<uint16_t>(h));
    const uint16_t b = out[h];
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(bf16Value(b))) << h;
      continue;
    }
    if (std::isinf(f)) {
      ASSERT_EQ(bf16Value(b), f) << h;
      continue;
    }
    const double v = bf16Value(b), d = std::fabs(v - f);
    // The two BF16 neighbours of b are no closer, and a tie goes to even.
    for (int step : {-1, 1}) {
      const uint16_t n = static_cast<uint16_t>(b + step);
      if (std::isnan(bf16Value(n)))
        continue; // 0's neighbour below is 0xFFFF
      const double dn = std::fabs(static_cast<double>(bf16Value(n)) - f);
      ASSERT_TRUE(d < dn || (d == dn && (b & 1u) == 0)) << "half " << h << " -> " << b;
    }
    ASSERT_EQ(std::signbit(bf16Value(b)), std::signbit(f)) << h;
  }
  for (int i = 0; i < 7; ++i)
    ASSERT_EQ(out[65536 + static_cast<size_t>(i)], 0);
}

/// Numerics::Fast's dotBlockBf16 against the products of the BF16-rounded
/// decoded weights and the BF16 activations summed in double: within FP32
/// summation error of the sum of |products| (a wrong decode, a dropped
/// tail or a misplaced row misses by far more), for every format, row
/// count, token count (register decode and decode-once) and length (with
/// and without partial pairs of 32).
TEST(Kernels, DotBlockBf16MatchesBf16ProductsSummedExactly) {
  if (!fastNumericsAvailable()) {
    std::printf("dotBlockBf16: this CPU lacks AVX512_BF16 or VBMI; Numerics::Fast runs the "
                "reference here (checked by the op tests)\n");
    return;
  }
  using Format = detail::WeightRows::Format;
  std::mt19937 rng(9);
  std::normal_distribution<float> dist;
  for (Format format : {Format::F32, Format::F16, Format::Nvfp4, Format::Fp8}) {
    std::vector<int64_t> lengths = {16, 32, 48, 1040};
    if (format != Format::Nvfp4)
      lengths = {1, 15, 16, 31, 33, 37, 100, 1041};
    for (int64_t cols : lengths) {
      const int64_t allRows = 21, first = 2;
      BlockWeights w(format, allRows, cols, rng);
      for (int64_t rows : {1, 3, 4, 7, 8, 13, 19}) {
        for (int64_t tokens : {1, 2, 3, 4, 5, 9}) {
          const int64_t xStride = detail::bf16Stride(cols) + 32, outStride = tokens + 2;
          std::vector<uint16_t> halves(static_cast<size_t>(cols));
          std::vector<uint16_t> x(static_cast<size_t>(tokens * xStride), 0x7FC0);
          for (int64_t t = 0; t < tokens; ++t) {
            for (auto &h : halves)
              h = floatToHalf(std::ldexp(dist(rng), static_cast<int>(rng() % 16) - 8));
            detail::halfToBf16(halves.data(), x.data() + t * xStride, cols,
                               detail::bf16Stride(cols));
          }
          std::vector<float> out(static_cast<size_t>(rows * outStride), 12345.0f), scratch;
          detail::dotBlockBf16(w.rows(format, cols), first, rows, x.data(), xStride, tokens,
                               out.data(), outStride, scratch);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t t = 0; t < tokens; ++t) {
              double want = 0, magnitude = 0;
              for (int64_t i = 0; i < cols; ++i) {
                const double p =
                    static_cast<double>(bf16Value(bf16Bits(w.decoded[(first + r) * cols + i]))) *
                    bf16Value(x[static_cast<size_t>(t * xStride + i)]);
                want += p;
                magnitude += std::fabs(p);
              }
              const double got = out[static_cast<size_t>(r * outStride + t)];
              const double bound =
                  (static_cast<double>(cols) / 16 + 8) * 0x1p-23 * magnitude + 1e-30;
              ASSERT_LE(std::fabs(got - want), bound)
                  << "format " << static_cast<int>(format) << " cols " << cols << " rows " << rows
                  << " tokens " << tokens << " at (" << r << ", " << t << ")";
            }
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t t = tokens; t < outStride; ++t)
              ASSERT_EQ(out[static_cast<size_t>(r * outStride + t)], 12345.0f);
        }
      }
    }
  }
}

/// NVFP4 rows reach dotBlockBf16's products straight as BF16 (one permute
/// of a BF16 table per pair of blocks): the same bits as the FP32 rows of
/// their decoded values, which take the FP32-then-round route, for every
/// E4M3 scale code, both register decode and decode-once token counts, and
/// an odd number of blocks (a last pair of one).
TEST(Kernels, DotBlockBf16GivesNvfp4RowsTheBitsOfTheirDecodedValues) {
  if (!fastNumericsAvailable()) {
    std::printf("dotBlockBf16: this CPU lacks AVX512_BF16 or VBMI; Numerics::Fast runs the "
                "reference here (checked by the op tests)\n");
    return;
  }
  using Format = detail::WeightRows::Format;
  std::mt19937 rng(12);
  std::normal_distribution<float> dist;
  for (int64_t cols : {16, 48, 1024, 1040}) {
    const int64_t rows = 23;
    BlockWeights w(Format::Nvfp4, rows, cols, rng);
    for (int64_t tokens : {1, 3, 4, 6, 10}) {
      const int64_t xStride = detail::bf16Stride(cols);
      std::vector<uint16_t> halves(static_cast<size_t>(cols));
      std::vector<uint16_t> x(static_cast<size_t>(tokens * xStride), 0);
      for (int64_t t = 0; t < tokens; ++t) {
        for (auto &h : halves)
          h = floatToHalf(dist(rng));
        detail::halfToBf16(halves.data(), x.data() + t * xStride, cols, xStride);
      }
      std::vector<float> fromNvfp4(static_cast<size_t>(rows * tokens)), fromF32(fromNvfp4.size()),
          scratch;
      detail::dotBlockBf16(w.rows(Format::Nvfp4, cols), 0, rows, x.data(), xStride, tokens,
                           fromNvfp4.data(), tokens, scratch);
      detail::dotBlockBf16(detail::WeightRows::f32(w.decoded.data(), cols), 0, rows, x.data(),
                           xStride, tokens, fromF32.data(), tokens, scratch);
      for (size_t i = 0; i < fromF32.size(); ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(fromNvfp4[i]), std::bit_cast<uint32_t>(fromF32[i]))
            << "cols " << cols << " tokens " << tokens << " output " << i;
    }
  }
}

/// Numerics::Fast's fused path (CPUs without AVX512_BF16), on every path
/// that has it: within the FP32 summation bound of the exact products, and
/// fused: a product whose rounding the reference loses survives.
TEST(Kernels, DotBlockFmaFusesEachProductOnEveryPath) {
  using Path = detail::DotBlockPath;
  using Format = detail::WeightRows::Format;
  std::mt19937 rng(10);
  std::normal_distribution<float> dist;
  int paths = 0;
  for (Path limit : {Path::Avx512Vbmi, Path::Avx512, Path::Avx2}) {
    detail::setDotBlockPathLimit(limit);
    if (detail::dotBlockPath() != limit || !detail::fmaDotAvailable())
      continue;
    ++paths;
    // Lane 0 holds -(1 + 2^-11) x 1, then (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24:
    // rounded first (the reference) the sum is 0, fused it is 2^-24.
    std::vector<float> w(32, 0.0f), x(32, 0.0f), scratch;
    w[0] = 1.0f;
    x[0] = -(1.0f + 0x1p-11f);
    w[16] = x[16] = 1.0f + 0x1p-12f;
    float fused = -1, reference = -1;
    detail::dotBlockFma(detail::WeightRows::f32(w.data(), 32), 0, 1, x.data(), 32, 1, &fused, 1,
                        scratch);
    detail::dotBlock(detail::WeightRows::f32(w.data(), 32), 0, 1, x.data(), 32, 1, &reference, 1,
                     scratch);
    EXPECT_EQ(fused, 0x1p-24f) << "path " << static_cast<int>(limit);
    EXPECT_EQ(reference, 0.0f);
    for (Format format : {Format::F32, Format::F16, Format::Nvfp4, Format::Fp8}) {
      std::vector<int64_t> lengths = {16, 48, 1040};
      if (format != Format::Nvfp4)
        lengths = {1, 15, 37, 1041};
      for (int64_t cols : lengths) {
        BlockWeights bw(format, 13, cols, rng);
        for (int64_t tokens : {1, 3, 4, 5, 6, 7, 8, 9}) {
          const int64_t xStride = cols + 3, outStride = tokens + 1;
          std::vector<float> xs(static_cast<size_t>(tokens * xStride));
          for (auto &v : xs)
            v = std::ldexp(dist(rng), static_cast<int>(rng() % 16) - 8);
          std::vector<float> out(static_cast<size_t>(11 * outStride), 12345.0f);
          detail::dotBlockFma(bw.rows(format, cols), 2, 11, xs.data(), xStride, tokens, out.data(),
                              outStride, scratch);
          for (int64_t r = 0; r < 11; ++r)
            for (int64_t t = 0; t < tokens; ++t) {
              double want = 0, magnitude = 0;
              for (int64_t i = 0; i < cols; ++i) {
                const double p = static_cast<double>(bw.decoded[(2 + r) * cols + i]) *
                                 xs[static_cast<size_t>(t * xStride + i)];
                want += p;
                magnitude += std::fabs(p);
              }
              // Plus the subnormal results' spacing (F32 weights reach 2^-140).
              const double bound =
                  (static_cast<double>(cols) / 16 + 8) * (0x1p-24 * magnitude + 0x1p-149);
              ASSERT_LE(std::fabs(out[static_cast<size_t>(r * outStride + t)] - want), bound)
                  << "path " << static_cast<int>(limit) << " format " << static_cast<int>(format)
                  << " cols " << cols << " tokens " << tokens << " at (" << r << ", " << t << ")";
            }
          for (int64_t r = 0; r < 11; ++r)
            ASSERT_EQ(out[static_cast<size_t>(r * outStride + tokens)], 12345.0f);
        }
      }
    }
  }
  detail::setDotBlockPathLimit(Path::Avx512Vbmi);
  if (paths == 0)
    std::printf("dotBlockFma: this CPU has neither AVX-512 nor AVX2 with FMA\n");
}

} // namespace
} // namespace volt::cpu
