//===- DotBlockAvx512.cpp - dotBlock with AVX-512 registers ---------------===//
//
// This file is compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq and
// only called after the CPU said it has them (Kernels.cpp). It includes no
// header with inline functions other than the intrinsics, so nothing compiled
// here for AVX-512 can be picked by the linker for code that runs elsewhere.
// The templates are in DotBlockAvx512Body.inc.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/DotBlockAvx512.h"

// GCC 12's AVX-512 headers trip its own uninitialised-value warnings (the
// headers start some casts from _mm512_undefined_* values).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace volt::cpu::detail::avx512 {

#include "runtime/cpu/DotBlockAvx512Body.inc"

void dotBlockF32(const float *w, int64_t rows, int64_t cols, const float *x, int64_t xStride,
                 int64_t tokens, float *out, int64_t outStride, bool fma) {
  tokensLoop(F32Rows{w, cols}, rows, cols, x, xStride, tokens, out, outStride, fma);
}

void dotBlockF16(const uint16_t *w, int64_t rows, int64_t cols, const float *x, int64_t xStride,
                 int64_t tokens, float *out, int64_t outStride, bool fma) {
  tokensLoop(F16Rows{w, cols}, rows, cols, x, xStride, tokens, out, outStride, fma);
}

void dotBlockFp8(const uint8_t *w, int64_t rows, int64_t cols, const float *x, int64_t xStride,
                 int64_t tokens, float *out, int64_t outStride, bool fma) {
  tokensLoop(Fp8Rows{w, cols}, rows, cols, x, xStride, tokens, out, outStride, fma);
}

void fp8ToHalfScaled(const uint8_t *in, uint16_t *out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i),
                        fp8ToHalves(_mm_loadu_si128(reinterpret_cast<const __m128i *>(in + i))));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm256_mask_storeu_epi16(out + i, m, fp8ToHalves(_mm_maskz_loadu_epi8(m, in + i)));
  }
}

void dotBlockNvfp4(const uint8_t *packed, const uint8_t *scales, const float *e4m3, int64_t rows,
                   int64_t cols, const float *x, int64_t xStride, int64_t tokens, float *out,
                   int64_t outStride, float *xPacked, bool fma) {
  tokensLoop(Nvfp4Rows{packed, scales, cols, &scaledE2m1(e4m3)}, rows, cols, x, xStride, tokens,
             out, outStride, fma, xPacked);
}

void decodeNvfp4Rows(const uint8_t *packed, const uint8_t *scales, const float *e4m3,
                     int64_t rows, int64_t cols, float *out) {
  const __m512 e2m1 = e2m1Values();
  const int64_t blocks = rows * (cols / 16);
  for (int64_t b = 0; b < blocks; ++b)
    _mm512_storeu_ps(out + 16 * b, decodeNvfp4Block(packed + 8 * b, e4m3[scales[b]], e2m1));
}

} // namespace volt::cpu::detail::avx512
