//===- Kernels.h - the inner loops every cpu op is built from ---*- C++ -*-===//
//
// Private to runtime/cpu. These loops fix the order of every FP32 sum the
// ops compute (docs/design/cpu-backend.md, "Summation order"), so that the
// results are the same on every x86-64 CPU, with any thread count, whatever
// the compiler vectorises: a sum is 16 strided lanes (lane l takes the
// elements i with i % 16 == l, in order), then the lanes are folded pairwise
// (l += l + 8, l += l + 4, l += l + 2, l += l + 1). Products and sums are
// separately rounded (the library is built with -ffp-contract=off).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace volt::cpu::detail {

/// Lanes of every reduction.
inline constexpr int kLanes = 16;

/// silu(g) * u = g / (1 + exp(-g)) * u, as SiluMul and the GEMMs' fused
/// SiluMul epilogue both compute it.
inline float siluTimes(float g, float u) { return g / (1.0f + std::exp(-g)) * u; }

/// FP16 bits to FP32, exactly (the same values as volt::halfToFloat).
void halfToFloat(const uint16_t *in, float *out, int64_t n);

/// FP32 to FP16 bits, round to nearest even (volt::floatToHalf).
void floatToHalf(const float *in, uint16_t *out, int64_t n);

/// sum over i < n of a[i] * b[i], in the lane order above.
float dot(const float *a, const float *b, int64_t n);

/// out[r] = dot(x + r * stride, w, n) for r < rows: one weight row against
/// several activation rows, bit-identical to calling dot() per row.
void dotRows(const float *w, const float *x, int64_t stride, int64_t rows, int64_t n, float *out);

/// y[i] += a * x[i] for i < n (each element its own running sum).
void axpy(float a, const float *x, float *y, int64_t n);

/// sum over i < n of a[i] * a[i], in the lane order above.
float sumSquares(const float *a, int64_t n);

/// Decodes one NVFP4 row of `cols` elements (a multiple of 16) into FP32:
/// out[i] = e2m1(element i) * e4m3(scale of block i / 16), which is exact.
void decodeNvfp4Row(const uint8_t *packed, const uint8_t *scales, int64_t cols, float *out);

/// The version of decodeNvfp4Row that CPUs without AVX-512 run (visible so
/// that it is tested on any machine).
void decodeNvfp4RowWithTable(const uint8_t *packed, const uint8_t *scales, int64_t cols,
                             float *out);

/// FP8 E4M3 bytes as the FP16 bits of e4m3 x 2^-8 (sign to bit 15, the
/// other seven bits to bits 7-13: E4M3's exponent bias is FP16's minus 8),
/// exact for every finite E4M3 value, subnormals included.
void fp8ToHalfScaled(const uint8_t *in, uint16_t *out, int64_t n);

/// What an FP8 row's sums must be multiplied by, after fp8ToHalfScaled.
inline constexpr float kFp8RowsBias = 256.0f;

/// Weight rows of a GEMM in one of the plan's weight formats: row r of an
/// F32 or F16 matrix at data + r * cols, of an NVFP4 matrix at packed + r
/// * cols / 2 with scales + r * cols / 16 (`cols` a multiple of 16), or of
/// an FP8 E4M3 matrix at data + r * cols, read as fp8ToHalfScaled gives it
/// (its dots are 2^-8 x the E4M3 values' exactly; the caller applies
/// kFp8RowsBias with the row scales).
struct WeightRows {
  enum class Format : uint8_t { F32, F16, Nvfp4, Fp8 };
  Format format = Format::F32;
  const void *data = nullptr;
  const uint8_t *scales = nullptr;
  int64_t cols = 0;

  static WeightRows f32(const float *w, int64_t cols) { return {Format::F32, w, nullptr, cols}; }
  static WeightRows f16(const uint16_t *w, int64_t cols) { return {Format::F16, w, nullptr, cols}; }
  static WeightRows nvfp4(const uint8_t *packed, const uint8_t *scales, int64_t cols) {
    return {Format::Nvfp4, packed, scales, cols};
  }
  static WeightRows fp8(const uint8_t *bytes, int64_t cols) {
    return {Format::Fp8, bytes, nullptr, cols};
  }
  /// The rows from `first` on.
  WeightRows from(int64_t first) const;
  /// Bytes of one row (NVFP4: its packed codes and block scales).
  int64_t rowBytes() const {
    switch (format) {
    case Format::F32:
      return 4 * cols;
    case Format::F16:
      return 2 * cols;
    case Format::Fp8:
      return cols;
    case Format::Nvfp4:
      break;
    }
    return cols / 2 + cols / 16;
  }
};

/// out[r * outStride + t] = dot(weight row first + r, x + t * xStride, cols)
/// for r < rows and t < tokens, where the weight row is decoded to FP32 as
/// halfToFloat / decodeNvfp4Row do: bit-identical to dot() on the decoded
/// row, whichever path runs, for F32 rows and any `x`, and for FP16, FP8 and
/// NVFP4 rows when `x` holds FP16 values (as every GEMM's activations do).
/// With AVX-512 or AVX2 the weights are decoded in registers (a few tokens)
/// or once per call into `scratch` (more); other CPUs decode each row into
/// `scratch` and use dotRows. Where fmaDotAvailable(), the register paths
/// add each product of an FP16, FP8 or NVFP4 row with a fused multiply-add:
/// an FP16 value times such a weight is exact in FP32 (at most 11 + 11
/// significant bits, and far from FP32's range limits), so the product
/// dot() rounds is already exact and fusing it changes no bit, in fewer
/// instructions.
void dotBlock(const WeightRows &weights, int64_t first, int64_t rows, const float *x,
              int64_t xStride, int64_t tokens, float *out, int64_t outStride,
              std::vector<float> &scratch);

/// Activation rows rounded to BF16 for dotBlockBf16: row t at t * stride,
/// `stride` a multiple of kBf16Pair with zeros past the row's `cols`.
inline constexpr int64_t kBf16Pair = 32;
inline int64_t bf16Stride(int64_t cols) { return (cols + kBf16Pair - 1) / kBf16Pair * kBf16Pair; }

/// FP16 bits to BF16 bits, round to nearest even (NaN stays NaN): out[i]
/// for i < n, then zeros up to `padTo`.
void halfToBf16(const uint16_t *in, uint16_t *out, int64_t n, int64_t padTo);

/// Numerics::Fast's dotBlock (only where fastNumericsAvailable()):
/// out[r * outStride + t] = the sum over i of bf16(w[r, i]) * x[t, i] in
/// FP32, where bf16() rounds the decoded weight to nearest even (exact for
/// NVFP4, FP8 and BF16-valued FP16) and `x` holds BF16 rows (bf16Stride);
/// products are summed by vdpbf16ps in pairs into 16 lanes, then the lanes
/// folded: another order than dot(), the same for every thread count.
/// `scratch` holds decoded rows when there are more than a few tokens.
void dotBlockBf16(const WeightRows &weights, int64_t first, int64_t rows, const uint16_t *x,
                  int64_t xStride, int64_t tokens, float *out, int64_t outStride,
                  std::vector<float> &scratch);

/// Whether dotBlockFma runs here: an AVX-512 or AVX2 + FMA path not limited
/// below them (setDotBlockPathLimit).
bool fmaDotAvailable();

/// Numerics::Fast's dotBlock where the CPU has no AVX512_BF16 (only where
/// fmaDotAvailable()): dotBlock's loops with every product added by a fused
/// multiply-add (one rounding for both), F32 rows included, FP32
/// activations. Where every product is exact in FP32 (an FP16 activation
/// times an FP16, FP8 or NVFP4 weight) that is dotBlock's bits and code;
/// otherwise each product keeps the bits the reference rounds away. The
/// same for every thread and token count.
void dotBlockFma(const WeightRows &weights, int64_t first, int64_t rows, const float *x,
                 int64_t xStride, int64_t tokens, float *out, int64_t outStride,
                 std::vector<float> &scratch);

/// The instruction sets dotBlock has a body for, in increasing order.
enum class DotBlockPath : uint8_t { Portable, Avx2, Avx512, Avx512Vbmi };

/// The path dotBlock runs on this CPU: the best it has, at most the limit.
DotBlockPath dotBlockPath();

/// Limits dotBlock to `limit` or below (Avx512Vbmi: the CPU's best), so that
/// tests compare every path the CPU can run.
void setDotBlockPathLimit(DotBlockPath limit);

} // namespace volt::cpu::detail
