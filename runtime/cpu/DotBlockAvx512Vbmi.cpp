//===- DotBlockAvx512Vbmi.cpp - NVFP4 dotBlock with AVX-512 VBMI ----------===//
//
// Compiled with the flags of DotBlockAvx512.cpp and -mavx512vbmi, called
// only on CPUs that have VBMI too (Ice Lake and later Xeons, Zen 4):
// vpmultishiftqb turns an NVFP4 block's 8 bytes into the permute's 16
// indices in one instruction where the other body needs four. The same
// templates (DotBlockAvx512Body.inc), the same bits.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/DotBlockAvx512.h"

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#ifndef __AVX512VBMI__
#error "DotBlockAvx512Vbmi.cpp must be compiled with -mavx512vbmi"
#endif

namespace volt::cpu::detail::avx512vbmi {

#include "runtime/cpu/DotBlockAvx512Body.inc"

void dotBlockNvfp4(const uint8_t *packed, const uint8_t *scales, const float *e4m3, int64_t rows,
                   int64_t cols, const float *x, int64_t xStride, int64_t tokens, float *out,
                   int64_t outStride, float *xPacked, bool fma) {
  tokensLoop(Nvfp4Rows{packed, scales, cols, &scaledE2m1(e4m3)}, rows, cols, x, xStride, tokens,
             out, outStride, fma, xPacked);
}

} // namespace volt::cpu::detail::avx512vbmi
