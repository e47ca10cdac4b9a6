//===- DotBlockAvx512.cpp - dotBlock with AVX-512 registers ---------------===//
//
// This file is compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq and
// only called after the CPU said it has them (Kernels.cpp). It includes no
// header with inline functions other than the intrinsics, so nothing compiled
// here for AVX-512 can be picked by the linker for code that runs elsewhere.
//
// Each accumulator is one 512-bit register holding the 16 lane sums of the
// contract (Kernels.h): lane l of block b adds x[16b + l] * w[16b + l], a
// product and a sum each rounded (vmulps, vaddps; no FMA), and the lanes are
// folded 8, 4, 2, 1 at the end, so every dot has the bits of detail::dot. The
// weights are decoded in registers: an FP16 row by vcvtph2ps (exact), an
// NVFP4 block's 16 nibbles by a permute of the 16 E2M1 values times the
// block's E4M3 scale (exact in FP32), so nothing is written back to memory
// at decode (one token or a few), where reading the weights is the cost.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/DotBlockAvx512.h"

// GCC 12's AVX-512 headers trip its own uninitialised-value warnings (the
// headers start some casts from _mm512_undefined_* values).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace volt::cpu::detail::avx512 {
namespace {

inline float fold(__m512 a) {
  __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  __m128 s1 = _mm_add_ss(s2, _mm_movehdup_ps(s2));
  return _mm_cvtss_f32(s1);
}

struct F32Rows {
  const float *base;
  int64_t stride;
  void prefetch(int, int64_t, int) const {}
  __m512 load(int r, int64_t b) const { return _mm512_loadu_ps(base + r * stride + 16 * b); }
  __m512 loadTail(int r, int64_t b, __mmask16 m) const {
    return _mm512_maskz_loadu_ps(m, base + r * stride + 16 * b);
  }
};

struct F16Rows {
  const uint16_t *base;
  int64_t stride;
  /// The same element `ahead` rows on (a hint: the next row block).
  void prefetch(int r, int64_t b, int ahead) const {
    if ((b & 1) == 0)
      _mm_prefetch(reinterpret_cast<const char *>(base + (r + ahead) * stride + 16 * b),
                   _MM_HINT_T0);
  }
  __m512 load(int r, int64_t b) const {
    return _mm512_cvtph_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(base + r * stride + 16 * b)));
  }
  __m512 loadTail(int r, int64_t b, __mmask16 m) const {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, base + r * stride + 16 * b));
  }
};

/// 16 E4M3 bytes to the FP16 bits fp8ToHalfScaled gives them (the value
/// times 2^-8, exact): the sign to bit 15, exponent and mantissa from bit 7.
inline __m256i fp8ToHalves(__m128i bytes) {
  const __m256i b = _mm256_cvtepu8_epi16(bytes);
  return _mm256_or_si256(
      _mm256_and_si256(_mm256_slli_epi16(b, 8), _mm256_set1_epi16(static_cast<int16_t>(0x8000))),
      _mm256_and_si256(_mm256_slli_epi16(b, 7), _mm256_set1_epi16(0x3f80)));
}

/// FP8 E4M3 rows decoded in registers: one byte per weight streams.
struct Fp8Rows {
  const uint8_t *base;
  int64_t stride;
  void prefetch(int r, int64_t b, int ahead) const {
    if ((b & 3) == 0)
      _mm_prefetch(reinterpret_cast<const char *>(base + (r + ahead) * stride + 16 * b),
                   _MM_HINT_T0);
  }
  __m512 load(int r, int64_t b) const {
    return _mm512_cvtph_ps(fp8ToHalves(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(base + r * stride + 16 * b))));
  }
  __m512 loadTail(int r, int64_t b, __mmask16 m) const {
    return _mm512_cvtph_ps(fp8ToHalves(_mm_maskz_loadu_epi8(m, base + r * stride + 16 * b)));
  }
};

/// One NVFP4 block (16 elements, 8 bytes, even element in the low nibble)
/// times its scale. vpermps reads only the low 4 bits of each index, so the
/// indices need no masking: dword 2j holds byte j (low nibble: element 2j)
/// and dword 2j + 1 holds byte j shifted right by 4 (element 2j + 1).
inline __m512 decodeNvfp4Block(const uint8_t *packed, float scale, __m512 e2m1) {
  __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(packed));
  __m512i index = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(v, _mm_srli_epi16(v, 4)));
  return _mm512_mul_ps(_mm512_permutexvar_ps(index, e2m1), _mm512_set1_ps(scale));
}

inline __m512 e2m1Values() {
  return _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f,
                        -2.0f, -3.0f, -4.0f, -6.0f);
}

struct Nvfp4Rows {
  const uint8_t *packed;
  const uint8_t *scales;
  int64_t cols;
  const float *e4m3;
  __m512 e2m1;
  void prefetch(int r, int64_t b, int ahead) const {
    if ((b & 7) == 0)
      _mm_prefetch(reinterpret_cast<const char *>(packed + (r + ahead) * (cols / 2) + 8 * b),
                   _MM_HINT_T0);
  }
  __m512 load(int r, int64_t b) const {
    return decodeNvfp4Block(packed + r * (cols / 2) + 8 * b, e4m3[scales[r * (cols / 16) + b]],
                            e2m1);
  }
  // cols is a multiple of 16: there is no tail.
  __m512 loadTail(int, int64_t, __mmask16) const { return _mm512_setzero_ps(); }
};

/// How many rows ahead the weights are prefetched. The hint may reach past
/// the last row; a prefetch never faults.
constexpr int kPrefetchRows = 16;

/// out[r * outStride + t] for R rows and T tokens.
template <int R, int T, typename Rows>
void kernel(const Rows &rows, int64_t cols, const float *x, int64_t xStride, float *out,
            int64_t outStride) {
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      acc[r][t] = _mm512_setzero_ps();
  const int64_t blocks = cols / 16;
  for (int64_t b = 0; b < blocks; ++b) {
    __m512 w[R];
    for (int r = 0; r < R; ++r) {
      rows.prefetch(r, b, kPrefetchRows);
      w[r] = rows.load(r, b);
    }
    for (int t = 0; t < T; ++t) {
      __m512 xv = _mm512_loadu_ps(x + t * xStride + 16 * b);
      for (int r = 0; r < R; ++r)
        acc[r][t] = _mm512_add_ps(acc[r][t], _mm512_mul_ps(xv, w[r]));
    }
  }
  if (const int64_t rest = cols % 16) {
    const __mmask16 m = static_cast<__mmask16>((1u << rest) - 1u);
    __m512 w[R];
    for (int r = 0; r < R; ++r)
      w[r] = rows.loadTail(r, blocks, m);
    for (int t = 0; t < T; ++t) {
      __m512 xv = _mm512_maskz_loadu_ps(m, x + t * xStride + 16 * blocks);
      // Lanes past the end keep their sums.
      for (int r = 0; r < R; ++r)
        acc[r][t] = _mm512_mask_add_ps(acc[r][t], m, acc[r][t], _mm512_mul_ps(xv, w[r]));
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      out[r * outStride + t] = fold(acc[r][t]);
}

template <typename Rows> Rows advance(const Rows &rows, int64_t by);
template <> F32Rows advance(const F32Rows &rows, int64_t by) {
  return {rows.base + by * rows.stride, rows.stride};
}
template <> F16Rows advance(const F16Rows &rows, int64_t by) {
  return {rows.base + by * rows.stride, rows.stride};
}
template <> Fp8Rows advance(const Fp8Rows &rows, int64_t by) {
  return {rows.base + by * rows.stride, rows.stride};
}
template <> Nvfp4Rows advance(const Nvfp4Rows &rows, int64_t by) {
  return {rows.packed + by * (rows.cols / 2), rows.scales + by * (rows.cols / 16), rows.cols,
          rows.e4m3, rows.e2m1};
}

/// All rows against T tokens; rows in blocks of RB, then the remainder.
template <int T, typename Rows>
void rowsLoop(const Rows &rows, int64_t count, int64_t cols, const float *x, int64_t xStride,
              float *out, int64_t outStride) {
  // One token: 8 independent sums hide the add latency; more tokens reuse
  // each decoded weight vector T times, 4 rows keep T * 4 sums in registers.
  constexpr int RB = T == 1 ? 8 : 4;
  int64_t r = 0;
  for (; r + RB <= count; r += RB)
    kernel<RB, T>(advance(rows, r), cols, x, xStride, out + r * outStride, outStride);
  const Rows tail = advance(rows, r);
  float *o = out + r * outStride;
  switch (count - r) {
  case 0:
    break;
  case 1:
    kernel<1, T>(tail, cols, x, xStride, o, outStride);
    break;
  case 2:
    kernel<2, T>(tail, cols, x, xStride, o, outStride);
    break;
  case 3:
    kernel<3, T>(tail, cols, x, xStride, o, outStride);
    break;
  case 4:
    if constexpr (RB > 4)
      kernel<4, T>(tail, cols, x, xStride, o, outStride);
    break;
  case 5:
    if constexpr (RB > 5)
      kernel<5, T>(tail, cols, x, xStride, o, outStride);
    break;
  case 6:
    if constexpr (RB > 6)
      kernel<6, T>(tail, cols, x, xStride, o, outStride);
    break;
  default:
    if constexpr (RB > 7)
      kernel<7, T>(tail, cols, x, xStride, o, outStride);
    break;
  }
}

/// Tokens in blocks of 4, then the remainder.
template <typename Rows>
void tokensLoop(const Rows &rows, int64_t count, int64_t cols, const float *x, int64_t xStride,
                int64_t tokens, float *out, int64_t outStride) {
  int64_t t = 0;
  for (; t + 4 <= tokens; t += 4)
    rowsLoop<4>(rows, count, cols, x + t * xStride, xStride, out + t, outStride);
  switch (tokens - t) {
  case 1:
    rowsLoop<1>(rows, count, cols, x + t * xStride, xStride, out + t, outStride);
    break;
  case 2:
    rowsLoop<2>(rows, count, cols, x + t * xStride, xStride, out + t, outStride);
    break;
  case 3:
    rowsLoop<3>(rows, count, cols, x + t * xStride, xStride, out + t, outStride);
    break;
  default:
    break;
  }
}

} // namespace

void dotBlockF32(const float *w, int64_t rows, int64_t cols, const float *x, int64_t xStride,
                 int64_t tokens, float *out, int64_t outStride) {
  tokensLoop(F32Rows{w, cols}, rows, cols, x, xStride, tokens, out, outStride);
}

void dotBlockF16(const uint16_t *w, int64_t rows, int64_t cols, const float *x, int64_t xStride,
                 int64_t tokens, float *out, int64_t outStride) {
  tokensLoop(F16Rows{w, cols}, rows, cols, x, xStride, tokens, out, outStride);
}

void dotBlockFp8(const uint8_t *w, int64_t rows, int64_t cols, const float *x, int64_t xStride,
                 int64_t tokens, float *out, int64_t outStride) {
  tokensLoop(Fp8Rows{w, cols}, rows, cols, x, xStride, tokens, out, outStride);
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
                   int64_t outStride) {
  tokensLoop(Nvfp4Rows{packed, scales, cols, e4m3, e2m1Values()}, rows, cols, x, xStride, tokens,
             out, outStride);
}

void decodeNvfp4Rows(const uint8_t *packed, const uint8_t *scales, const float *e4m3,
                     int64_t rows, int64_t cols, float *out) {
  const __m512 e2m1 = e2m1Values();
  const int64_t blocks = rows * (cols / 16);
  for (int64_t b = 0; b < blocks; ++b)
    _mm512_storeu_ps(out + 16 * b, decodeNvfp4Block(packed + 8 * b, e4m3[scales[b]], e2m1));
}

} // namespace volt::cpu::detail::avx512
