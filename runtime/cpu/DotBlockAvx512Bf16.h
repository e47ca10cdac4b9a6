//===- DotBlockAvx512Bf16.h - the BF16 bodies of dotBlockBf16 ---*- C++ -*-===//
//
// Private to runtime/cpu: called by Kernels.cpp only on CPUs with AVX-512
// F, BW, VL, DQ, VBMI and BF16 (Zen 4, Sapphire Rapids and later). Each
// writes out[r * outStride + t] = the sum over i < cols of bf16(w[r, i]) *
// x[t, i] (Kernels.h, dotBlockBf16), for weight row r of `rows` and BF16
// activation row t of `tokens` at x + t * xStride (a multiple of 32 with
// zeros past cols). `scratch` has room for rows * ((cols + 31) / 32 * 32)
// BF16 values when tokens > kRegisterTokens (it holds the decoded rows);
// it may be null otherwise.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace volt::cpu::detail::avx512bf16 {

/// Tokens up to which the weights are decoded in registers, once per group
/// of 4 (a second pass reads them from cache): at 5 to 8 tokens that beat
/// decoding them once into scratch first, whose reads from memory then
/// overlap no products (a prompt's MoE gate|up, NVFP4, 2 threads: 1.26-1.36
/// -> 1.05-1.13 ms; Linear 32,768 x 1024 at 8 tokens 2.25-2.34 -> 1.72-1.87
/// ms).
inline constexpr int64_t kRegisterTokens = 8;

void dotBlockF32(const float *w, int64_t rows, int64_t cols, const uint16_t *x, int64_t xStride,
                 int64_t tokens, float *out, int64_t outStride, uint16_t *scratch);

void dotBlockF16(const uint16_t *w, int64_t rows, int64_t cols, const uint16_t *x, int64_t xStride,
                 int64_t tokens, float *out, int64_t outStride, uint16_t *scratch);

/// FP8 E4M3 rows, each weight its value times 2^-8 (as fp8ToHalfScaled).
void dotBlockFp8(const uint8_t *w, int64_t rows, int64_t cols, const uint16_t *x, int64_t xStride,
                 int64_t tokens, float *out, int64_t outStride, uint16_t *scratch);

/// `e4m3` is the FP32 value of each E4M3 byte; `cols` a multiple of 16.
void dotBlockNvfp4(const uint8_t *packed, const uint8_t *scales, const float *e4m3, int64_t rows,
                   int64_t cols, const uint16_t *x, int64_t xStride, int64_t tokens, float *out,
                   int64_t outStride, uint16_t *scratch);

} // namespace volt::cpu::detail::avx512bf16
