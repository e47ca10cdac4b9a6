//===- DotBlockAvx512.h - the AVX-512 bodies of detail::dotBlock -*- C++ -*-===//
//
// Private to runtime/cpu: called by Kernels.cpp only on CPUs with AVX-512
// F, BW, VL and DQ. Each writes out[r * outStride + t] = the contract's dot
// (Kernels.h) of weight row r (of `rows`, each `cols` long) and activation
// row t (of `tokens`, at x + t * xStride); with `fma`, each product is
// added by a fused multiply-add instead (Numerics::Fast where the CPU has
// no AVX512_BF16: one rounding per product and sum, the same bits where
// the products are exact).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace volt::cpu::detail::avx512 {

void dotBlockF32(const float *w, int64_t rows, int64_t cols, const float *x, int64_t xStride,
                 int64_t tokens, float *out, int64_t outStride, bool fma = false);

void dotBlockF16(const uint16_t *w, int64_t rows, int64_t cols, const float *x, int64_t xStride,
                 int64_t tokens, float *out, int64_t outStride, bool fma = false);

/// FP8 E4M3 rows, each weight read as fp8ToHalfScaled gives it (its value
/// times 2^-8).
void dotBlockFp8(const uint8_t *w, int64_t rows, int64_t cols, const float *x, int64_t xStride,
                 int64_t tokens, float *out, int64_t outStride, bool fma = false);

/// detail::fp8ToHalfScaled, 16 bytes at a time.
void fp8ToHalfScaled(const uint8_t *in, uint16_t *out, int64_t n);

/// `e4m3` is the FP32 value of each E4M3 byte; `cols` a multiple of 16;
/// `xPacked` room for 8 * 16 * ceil(cols / 16) floats, where up to 8 tokens
/// at a time are packed (DotBlockAvx512Body.inc's tokensLoop).
void dotBlockNvfp4(const uint8_t *packed, const uint8_t *scales, const float *e4m3, int64_t rows,
                   int64_t cols, const float *x, int64_t xStride, int64_t tokens, float *out,
                   int64_t outStride, float *xPacked, bool fma = false);

/// decodeNvfp4Row over `rows` consecutive rows into out [rows, cols].
void decodeNvfp4Rows(const uint8_t *packed, const uint8_t *scales, const float *e4m3,
                     int64_t rows, int64_t cols, float *out);

} // namespace volt::cpu::detail::avx512

namespace volt::cpu::detail::avx512vbmi {

/// avx512::dotBlockNvfp4 on CPUs with AVX-512 VBMI too (the same bits).
void dotBlockNvfp4(const uint8_t *packed, const uint8_t *scales, const float *e4m3, int64_t rows,
                   int64_t cols, const float *x, int64_t xStride, int64_t tokens, float *out,
                   int64_t outStride, float *xPacked, bool fma = false);

} // namespace volt::cpu::detail::avx512vbmi
