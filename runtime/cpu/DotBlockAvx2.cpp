//===- DotBlockAvx2.cpp - dotBlock with AVX2 registers --------------------===//
//
// The AVX2 (+F16C) body of detail::dotBlock, for x86-64 CPUs without
// AVX-512 (Haswell to Comet Lake Xeons, the hosts of many V100 servers).
// Compiled with -mavx2 -mf16c and called only after the CPU said it has
// them (Kernels.cpp); like DotBlockAvx512.cpp it includes nothing but the
// intrinsics.
//
// The contract's 16 lane sums of one dot are two 256-bit registers (lanes
// 0-7 and 8-15), each a vmulps then a vaddps (or one vfmadd where the caller
// knows the product exact, the same bits); the fold adds the
// halves (l += l + 8), then 4, 2, 1, so every dot has the bits of
// detail::dot. NVFP4 blocks decode in registers: the low 3 bits of each
// nibble pick the magnitude from an 8-entry table (vpermps), the fourth is
// the sign, times the block's E4M3 scale, all exact.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/DotBlockAvx2.h"

// As in DotBlockAvx512.cpp: GCC 12's intrinsics headers trip its own
// uninitialised-value warnings.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace volt::cpu::detail::avx2 {
namespace {

/// 16 lanes as two halves.
struct Lanes {
  __m256 lo, hi;
};

inline float fold(Lanes a) {
  __m256 s8 = _mm256_add_ps(a.lo, a.hi);
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  __m128 s1 = _mm_add_ss(s2, _mm_movehdup_ps(s2));
  return _mm_cvtss_f32(s1);
}

/// Loads `count` (< 16) floats from p into lanes 0..count-1, zeros above.
inline Lanes loadTailF32(const float *p, int count) {
  float buf[16] = {};
  for (int i = 0; i < count; ++i)
    buf[i] = p[i];
  return {_mm256_loadu_ps(buf), _mm256_loadu_ps(buf + 8)};
}

struct F32Rows {
  const float *base;
  int64_t stride;
  Lanes load(int64_t r, int64_t b) const {
    const float *p = base + r * stride + 16 * b;
    return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)};
  }
  Lanes loadTail(int64_t r, int64_t b, int count) const {
    return loadTailF32(base + r * stride + 16 * b, count);
  }
};

struct F16Rows {
  const uint16_t *base;
  int64_t stride;
  Lanes load(int64_t r, int64_t b) const {
    const uint16_t *p = base + r * stride + 16 * b;
    return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p))),
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p + 8)))};
  }
  Lanes loadTail(int64_t r, int64_t b, int count) const {
    uint16_t buf[16] = {};
    const uint16_t *p = base + r * stride + 16 * b;
    for (int i = 0; i < count; ++i)
      buf[i] = p[i];
    return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(buf))),
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(buf + 8)))};
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

inline Lanes halvesToLanes(__m256i h) {
  return {_mm256_cvtph_ps(_mm256_castsi256_si128(h)),
          _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1))};
}

/// FP8 E4M3 rows decoded in registers: one byte per weight streams.
struct Fp8Rows {
  const uint8_t *base;
  int64_t stride;
  Lanes load(int64_t r, int64_t b) const {
    return halvesToLanes(fp8ToHalves(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(base + r * stride + 16 * b))));
  }
  Lanes loadTail(int64_t r, int64_t b, int count) const {
    uint8_t buf[16] = {};
    const uint8_t *p = base + r * stride + 16 * b;
    for (int i = 0; i < count; ++i)
      buf[i] = p[i];
    return halvesToLanes(fp8ToHalves(_mm_loadu_si128(reinterpret_cast<const __m128i *>(buf))));
  }
};

/// The magnitudes of the E2M1 codes 0..7.
inline __m256 e2m1Magnitudes() {
  return _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
}

/// Eight codes (one per dword, in its low 4 bits, higher bits ignored) to
/// their E2M1 values times `scale`.
inline __m256 decodeCodes(__m256i codes, __m256 magnitudes, __m256 scale) {
  __m256 magnitude = _mm256_permutevar8x32_ps(magnitudes, codes);
  __m256i sign = _mm256_slli_epi32(_mm256_and_si256(codes, _mm256_set1_epi32(8)), 28);
  return _mm256_mul_ps(_mm256_xor_ps(magnitude, _mm256_castsi256_ps(sign)), scale);
}

struct Nvfp4Rows {
  const uint8_t *packed;
  const uint8_t *scales;
  int64_t cols;
  const float *e4m3;
  __m256 magnitudes;
  Lanes load(int64_t r, int64_t b) const {
    __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(packed + r * (cols / 2) + 8 * b));
    // Byte 2j: element 2j in its low nibble; byte 2j + 1: element 2j + 1.
    __m128i codes = _mm_unpacklo_epi8(v, _mm_srli_epi16(v, 4));
    __m256 scale = _mm256_set1_ps(e4m3[scales[r * (cols / 16) + b]]);
    return {decodeCodes(_mm256_cvtepu8_epi32(codes), magnitudes, scale),
            decodeCodes(_mm256_cvtepu8_epi32(_mm_srli_si128(codes, 8)), magnitudes, scale)};
  }
  // cols is a multiple of 16: there is no tail.
  Lanes loadTail(int, int64_t, int) const { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
};

/// acc + x * w per lane: the product rounded, then added (the reference),
/// or fused (Fma: Numerics::Fast on CPUs without AVX512_BF16).
template <bool Fma> inline Lanes multiplyAdd(Lanes acc, Lanes x, Lanes w) {
  if constexpr (Fma)
    return {_mm256_fmadd_ps(x.lo, w.lo, acc.lo), _mm256_fmadd_ps(x.hi, w.hi, acc.hi)};
  return {_mm256_add_ps(acc.lo, _mm256_mul_ps(x.lo, w.lo)),
          _mm256_add_ps(acc.hi, _mm256_mul_ps(x.hi, w.hi))};
}

/// out[r * outStride + t] for R rows and T tokens.
template <int R, int T, bool Fma, typename Rows>
void kernel(const Rows &rows, int64_t cols, const float *x, int64_t xStride, float *out,
            int64_t outStride) {
  Lanes acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      acc[r][t] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  const int64_t blocks = cols / 16;
  for (int64_t b = 0; b < blocks; ++b) {
    Lanes w[R];
    for (int r = 0; r < R; ++r)
      w[r] = rows.load(r, b);
    for (int t = 0; t < T; ++t) {
      const float *xp = x + t * xStride + 16 * b;
      Lanes xv = {_mm256_loadu_ps(xp), _mm256_loadu_ps(xp + 8)};
      for (int r = 0; r < R; ++r)
        acc[r][t] = multiplyAdd<Fma>(acc[r][t], xv, w[r]);
    }
  }
  if (const int rest = static_cast<int>(cols % 16)) {
    // Lanes past the end add 0 * 0 = +0, which leaves a lane sum as it is
    // (a sum that starts at +0 is never -0).
    Lanes w[R];
    for (int r = 0; r < R; ++r)
      w[r] = rows.loadTail(r, blocks, rest);
    for (int t = 0; t < T; ++t) {
      Lanes xv = loadTailF32(x + t * xStride + 16 * blocks, rest);
      for (int r = 0; r < R; ++r)
        acc[r][t] = multiplyAdd<Fma>(acc[r][t], xv, w[r]);
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
          rows.e4m3, rows.magnitudes};
}

/// Kernel row r is row r * span of `rows`: each row of a kernel is its own
/// stream through memory (see DotBlockAvx512Body.inc's Spread).
template <typename Rows> struct Spread {
  Rows rows;
  int64_t span;
  Lanes load(int64_t r, int64_t b) const { return rows.load(r * span, b); }
  Lanes loadTail(int64_t r, int64_t b, int count) const {
    return rows.loadTail(r * span, b, count);
  }
};

template <typename Rows> Spread<Rows> advance(const Spread<Rows> &s, int64_t by) {
  return {advance(s.rows, by), s.span};
}

/// 16 ymm registers: one token takes 4 rows (8 sums), two tokens 2 rows;
/// block i holds rows i, i + span, ... of the first RB * span rows.
template <int T, bool Fma, typename Rows>
void rowsLoop(const Rows &rows, int64_t count, int64_t cols, const float *x, int64_t xStride,
              float *out, int64_t outStride) {
  constexpr int RB = T == 1 ? 4 : 2;
  const int64_t span = count / RB;
  if (span > 0) {
    const Spread<Rows> spread{rows, span};
    for (int64_t i = 0; i < span; ++i)
      kernel<RB, T, Fma>(advance(spread, i), cols, x, xStride, out + i * outStride,
                         span * outStride);
  }
  const int64_t r = RB * span;
  const Rows tail = advance(rows, r);
  float *o = out + r * outStride;
  switch (count - r) {
  case 1:
    kernel<1, T, Fma>(tail, cols, x, xStride, o, outStride);
    break;
  case 2:
    if constexpr (RB > 2)
      kernel<2, T, Fma>(tail, cols, x, xStride, o, outStride);
    break;
  case 3:
    if constexpr (RB > 3)
      kernel<3, T, Fma>(tail, cols, x, xStride, o, outStride);
    break;
  default:
    break;
  }
}

template <bool Fma = false, typename Rows>
void tokensLoop(const Rows &rows, int64_t count, int64_t cols, const float *x, int64_t xStride,
                int64_t tokens, float *out, int64_t outStride) {
  int64_t t = 0;
  for (; t + 2 <= tokens; t += 2)
    rowsLoop<2, Fma>(rows, count, cols, x + t * xStride, xStride, out + t, outStride);
  if (t < tokens)
    rowsLoop<1, Fma>(rows, count, cols, x + t * xStride, xStride, out + t, outStride);
}

/// tokensLoop, fused or not (the entry points' `fma`).
template <typename Rows>
void tokensLoop(const Rows &rows, int64_t count, int64_t cols, const float *x, int64_t xStride,
                int64_t tokens, float *out, int64_t outStride, bool fma) {
  if (fma)
    tokensLoop<true>(rows, count, cols, x, xStride, tokens, out, outStride);
  else
    tokensLoop<false>(rows, count, cols, x, xStride, tokens, out, outStride);
}

} // namespace

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
  for (; i < n; ++i)
    out[i] = static_cast<uint16_t>(((in[i] & 0x80u) << 8) | ((in[i] & 0x7Fu) << 7));
}

void dotBlockNvfp4(const uint8_t *packed, const uint8_t *scales, const float *e4m3, int64_t rows,
                   int64_t cols, const float *x, int64_t xStride, int64_t tokens, float *out,
                   int64_t outStride, bool fma) {
  tokensLoop(Nvfp4Rows{packed, scales, cols, e4m3, e2m1Magnitudes()}, rows, cols, x, xStride,
             tokens, out, outStride, fma);
}

void decodeNvfp4Rows(const uint8_t *packed, const uint8_t *scales, const float *e4m3, int64_t rows,
                     int64_t cols, float *out) {
  const Nvfp4Rows all{packed, scales, cols, e4m3, e2m1Magnitudes()};
  const int64_t blocks = cols / 16;
  for (int64_t r = 0; r < rows; ++r) {
    const Nvfp4Rows row = advance(all, r);
    for (int64_t b = 0; b < blocks; ++b) {
      Lanes w = row.load(0, b);
      _mm256_storeu_ps(out + r * cols + 16 * b, w.lo);
      _mm256_storeu_ps(out + r * cols + 16 * b + 8, w.hi);
    }
  }
}

} // namespace volt::cpu::detail::avx2
