//===- DotBlockAvx512Bf16.cpp - Numerics::Fast's dotBlock (vdpbf16ps) -----===//
//
// Compiled with the flags of DotBlockAvx512Vbmi.cpp and -mavx512bf16, called
// only on CPUs that have them all. The weights are decoded to FP32 by the
// loaders of DotBlockAvx512Body.inc (exact), 32 at a time rounded to BF16 by
// vcvtne2ps2bf16 (exact for NVFP4 and FP8 values, which have at most 6
// significant bits), NVFP4 pairs of blocks straight to the same BF16 values
// by one permute of a BF16 table, and multiplied with BF16 activations by
// vdpbf16ps: 32 products per instruction into 16 FP32 lanes, where the
// reference issues a vmulps and a vaddps per 16. With more than
// kRegisterTokens tokens the rows are decoded once into scratch and every
// group of 4 tokens reads them.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/DotBlockAvx512Bf16.h"

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#if !defined(__AVX512BF16__) || !defined(__AVX512VBMI__)
#error "DotBlockAvx512Bf16.cpp must be compiled with -mavx512bf16 -mavx512vbmi"
#endif

namespace volt::cpu::detail::avx512bf16 {

#include "runtime/cpu/DotBlockAvx512Body.inc"

namespace {

constexpr int64_t kPair = 32;

inline int64_t paddedCols(int64_t cols) { return (cols + kPair - 1) / kPair * kPair; }

inline __mmask16 lowLanes(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

/// 32 weights of a row of `Rows` (one of the Body's FP32 loaders) as BF16:
/// pair p is elements [32p, 32p + 32); `rest` (1..31) elements of a last,
/// partial pair, zeros after them.
template <typename Rows> struct Bf16Of {
  Rows rows;
  [[gnu::always_inline]] void prefetch(int64_t r, int64_t p) const {
    rows.prefetch(r, 2 * p);
    rows.prefetch(r, 2 * p + 1);
  }
  __m512bh pair(int64_t r, int64_t p) const {
    return _mm512_cvtne2ps_pbh(rows.load(r, 2 * p + 1), rows.load(r, 2 * p));
  }
  __m512bh pairTail(int64_t r, int64_t p, int64_t rest) const {
    const __m512 lo = rest >= 16 ? rows.load(r, 2 * p) : rows.loadTail(r, 2 * p, lowLanes(rest));
    const __m512 hi =
        rest > 16 ? rows.loadTail(r, 2 * p + 1, lowLanes(rest - 16)) : _mm512_setzero_ps();
    return _mm512_cvtne2ps_pbh(hi, lo);
  }
  Bf16Of advance(int64_t by) const { return {volt::cpu::detail::avx512bf16::advance(rows, by)}; }
};

/// The Body's scaled E2M1 table in BF16: the top half of each FP32 value,
/// which is exact (a value has at most 5 significant bits).
struct ScaledE2m1Bf16 {
  alignas(32) uint16_t rows[256][16];
  explicit ScaledE2m1Bf16(const ScaledE2m1 &f32) {
    for (int s = 0; s < 256; ++s)
      for (int i = 0; i < 16; ++i) {
        uint32_t bits;
        __builtin_memcpy(&bits, &f32.rows[s][i], 4);
        rows[s][i] = static_cast<uint16_t>(bits >> 16);
      }
  }
};

const ScaledE2m1Bf16 &scaledE2m1Bf16(const float *e4m3) {
  static const ScaledE2m1Bf16 table(scaledE2m1(e4m3));
  return table;
}

/// NVFP4 rows straight to BF16: a pair's two blocks by one vpermw from
/// their scales' rows of ScaledE2m1Bf16 side by side (the same values, so
/// the same bits, as decoding to FP32 and rounding, in about half the
/// instructions).
template <> struct Bf16Of<Nvfp4Rows> {
  Nvfp4Rows rows;
  const ScaledE2m1Bf16 *table;
  [[gnu::always_inline]] void prefetch(int64_t r, int64_t p) const { rows.prefetch(r, 2 * p); }
  __m512bh pair(int64_t r, int64_t p) const {
    const uint8_t *scale = rows.scales + r * (rows.cols / 16) + 2 * p;
    const __m512i values = _mm512_inserti64x4(
        _mm512_castsi256_si512(
            _mm256_load_si256(reinterpret_cast<const __m256i *>(table->rows[scale[0]]))),
        _mm256_load_si256(reinterpret_cast<const __m256i *>(table->rows[scale[1]])), 1);
    // The pair's 16 bytes, bytes 0-7 in qwords 0-3 and 8-15 in qwords 4-7;
    // word 4k + m takes the nibble at bit 16 (k % 4) + 4m of its qword
    // (element 4k + m), then bit 4 says which block (scale row) it is in.
    const __m128i bytes = _mm_loadu_si128(
        reinterpret_cast<const __m128i *>(rows.packed + r * (rows.cols / 2) + 16 * p));
    const __m512i spread = _mm512_permutexvar_epi64(_mm512_set_epi64(1, 1, 1, 1, 0, 0, 0, 0),
                                                    _mm512_castsi128_si512(bytes));
    const __m512i offsets = _mm512_set_epi64(
        0x3C3C383834343030LL, 0x2C2C282824242020LL, 0x1C1C181814141010LL, 0x0C0C080804040000LL,
        0x3C3C383834343030LL, 0x2C2C282824242020LL, 0x1C1C181814141010LL, 0x0C0C080804040000LL);
    const __m512i nibbles = _mm512_multishift_epi64_epi8(offsets, spread);
    // (nibbles & 0x000F) | block bit: ternary-logic function 0xEA.
    const __m512i index = _mm512_ternarylogic_epi32(
        nibbles, _mm512_set1_epi16(0x000F),
        _mm512_set_epi64(0x0010001000100010LL, 0x0010001000100010LL, 0x0010001000100010LL,
                         0x0010001000100010LL, 0, 0, 0, 0),
        0xEA);
    return (__m512bh)_mm512_permutexvar_epi16(index, values);
  }
  // A last pair of one block (cols is a multiple of 16).
  __m512bh pairTail(int64_t r, int64_t p, int64_t) const {
    return _mm512_cvtne2ps_pbh(_mm512_setzero_ps(), rows.load(r, 2 * p));
  }
  Bf16Of advance(int64_t by) const {
    return {volt::cpu::detail::avx512bf16::advance(rows, by), table};
  }
};

/// Rows already in BF16, `stride` (a multiple of 32) apart, zero-padded.
struct Bf16Rows {
  const uint16_t *base;
  int64_t stride;
  void prefetch(int64_t, int64_t) const {}
  __m512bh pair(int64_t r, int64_t p) const {
    return (__m512bh)_mm512_loadu_si512(base + r * stride + kPair * p);
  }
  __m512bh pairTail(int64_t r, int64_t p, int64_t) const { return pair(r, p); }
  Bf16Rows advance(int64_t by) const { return {base + by * stride, stride}; }
};

/// out[r * outStride + t] for R rows and T tokens.
template <int R, int T, typename Rows>
void kernel(const Rows &rows, int64_t cols, const uint16_t *x, int64_t xStride, float *out,
            int64_t outStride) {
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      acc[r][t] = _mm512_setzero_ps();
  const int64_t pairs = cols / kPair, rest = cols % kPair;
  auto step = [&](int64_t p, const __m512bh(&w)[R]) {
    for (int t = 0; t < T; ++t) {
      const __m512bh xv = (__m512bh)_mm512_loadu_si512(x + t * xStride + kPair * p);
      for (int r = 0; r < R; ++r)
        acc[r][t] = _mm512_dpbf16_ps(acc[r][t], w[r], xv);
    }
  };
  for (int64_t p = 0; p < pairs; ++p) {
    __m512bh w[R];
    for (int r = 0; r < R; ++r) {
      if constexpr (T >= 2) // as the Body's kernel
        rows.prefetch(r, p);
      w[r] = rows.pair(r, p);
    }
    step(p, w);
  }
  if (rest) {
    __m512bh w[R];
    for (int r = 0; r < R; ++r)
      w[r] = rows.pairTail(r, pairs, rest);
    step(pairs, w);
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      out[r * outStride + t] = fold(acc[r][t]);
}

/// Kernel row r is row r * span of `rows` (as the Body's Spread: one
/// stream per row).
template <typename Rows> struct SpreadPairs {
  Rows rows;
  int64_t span;
  [[gnu::always_inline]] void prefetch(int64_t r, int64_t p) const { rows.prefetch(r * span, p); }
  __m512bh pair(int64_t r, int64_t p) const { return rows.pair(r * span, p); }
  __m512bh pairTail(int64_t r, int64_t p, int64_t rest) const {
    return rows.pairTail(r * span, p, rest);
  }
  SpreadPairs advance(int64_t by) const { return {rows.advance(by), span}; }
};

/// All rows against T tokens: blocks of RB rows from RB spans far apart
/// (SpreadPairs), then the remainder.
template <int T, typename Rows>
void rowsLoopBf16(const Rows &rows, int64_t count, int64_t cols, const uint16_t *x, int64_t xStride,
                  float *out, int64_t outStride) {
  constexpr int RB = 4;
  const int64_t span = count / RB;
  if (span > 0) {
    const SpreadPairs<Rows> spread{rows, span};
    for (int64_t i = 0; i < span; ++i)
      kernel<RB, T>(spread.advance(i), cols, x, xStride, out + i * outStride, span * outStride);
  }
  const int64_t r = RB * span;
  const Rows tail = rows.advance(r);
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
  default:
    kernel<3, T>(tail, cols, x, xStride, o, outStride);
    break;
  }
}

/// Tokens in groups of 4, then the remainder.
template <typename Rows>
void tokensLoopBf16(const Rows &rows, int64_t count, int64_t cols, const uint16_t *x,
                    int64_t xStride, int64_t tokens, float *out, int64_t outStride) {
  int64_t t = 0;
  for (; t + 4 <= tokens; t += 4)
    rowsLoopBf16<4>(rows, count, cols, x + t * xStride, xStride, out + t, outStride);
  switch (tokens - t) {
  case 1:
    rowsLoopBf16<1>(rows, count, cols, x + t * xStride, xStride, out + t, outStride);
    break;
  case 2:
    rowsLoopBf16<2>(rows, count, cols, x + t * xStride, xStride, out + t, outStride);
    break;
  case 3:
    rowsLoopBf16<3>(rows, count, cols, x + t * xStride, xStride, out + t, outStride);
    break;
  default:
    break;
  }
}

/// A few tokens: each weight decoded in registers where it is used. More:
/// the rows decoded to BF16 once into scratch, then read for every group.
template <typename Rows>
void run(const Bf16Of<Rows> &weights, int64_t rows, int64_t cols, const uint16_t *x,
         int64_t xStride, int64_t tokens, float *out, int64_t outStride, uint16_t *scratch) {
  if (tokens <= kRegisterTokens) {
    tokensLoopBf16(weights, rows, cols, x, xStride, tokens, out, outStride);
    return;
  }
  const int64_t stride = paddedCols(cols), pairs = cols / kPair, rest = cols % kPair;
  for (int64_t r = 0; r < rows; ++r) {
    const Bf16Of<Rows> row = weights.advance(r);
    uint16_t *dst = scratch + r * stride;
    for (int64_t p = 0; p < pairs; ++p)
      _mm512_storeu_si512(dst + kPair * p, (__m512i)row.pair(0, p));
    if (rest)
      _mm512_storeu_si512(dst + kPair * pairs, (__m512i)row.pairTail(0, pairs, rest));
  }
  tokensLoopBf16(Bf16Rows{scratch, stride}, rows, cols, x, xStride, tokens, out, outStride);
}

} // namespace

void dotBlockF32(const float *w, int64_t rows, int64_t cols, const uint16_t *x, int64_t xStride,
                 int64_t tokens, float *out, int64_t outStride, uint16_t *scratch) {
  run(Bf16Of<F32Rows>{{w, cols}}, rows, cols, x, xStride, tokens, out, outStride, scratch);
}

void dotBlockF16(const uint16_t *w, int64_t rows, int64_t cols, const uint16_t *x, int64_t xStride,
                 int64_t tokens, float *out, int64_t outStride, uint16_t *scratch) {
  run(Bf16Of<F16Rows>{{w, cols}}, rows, cols, x, xStride, tokens, out, outStride, scratch);
}

void dotBlockFp8(const uint8_t *w, int64_t rows, int64_t cols, const uint16_t *x, int64_t xStride,
                 int64_t tokens, float *out, int64_t outStride, uint16_t *scratch) {
  run(Bf16Of<Fp8Rows>{{w, cols}}, rows, cols, x, xStride, tokens, out, outStride, scratch);
}

void dotBlockNvfp4(const uint8_t *packed, const uint8_t *scales, const float *e4m3, int64_t rows,
                   int64_t cols, const uint16_t *x, int64_t xStride, int64_t tokens, float *out,
                   int64_t outStride, uint16_t *scratch) {
  run(Bf16Of<Nvfp4Rows>{{packed, scales, cols, &scaledE2m1(e4m3)}, &scaledE2m1Bf16(e4m3)}, rows,
      cols, x, xStride, tokens, out, outStride, scratch);
}

} // namespace volt::cpu::detail::avx512bf16
