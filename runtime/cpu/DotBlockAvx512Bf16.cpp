//===- DotBlockAvx512Bf16.cpp - Numerics::Fast's dotBlock (vdpbf16ps) -----===//
//
// Compiled with the flags of DotBlockAvx512Vbmi.cpp and -mavx512bf16, called
// only on CPUs that have them all. The weights are decoded to FP32 by the
// loaders of DotBlockAvx512Body.inc (exact), 32 at a time rounded to BF16 by
// vcvtne2ps2bf16 (exact for NVFP4 and FP8 values, which have at most 6
// significant bits), and multiplied with BF16 activations by vdpbf16ps: 32
// products per instruction into 16 FP32 lanes, where the reference issues a
// vmulps and a vaddps per 16. With more than kRegisterTokens tokens the rows
// are decoded once into scratch and every group of 4 tokens reads them.
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

/// Tokens up to which the weights are decoded in registers.
constexpr int64_t kRegisterTokens = 4;

constexpr int64_t kPair = 32;

inline int64_t paddedCols(int64_t cols) { return (cols + kPair - 1) / kPair * kPair; }

inline __mmask16 lowLanes(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

/// 32 weights of a row of `Rows` (one of the Body's FP32 loaders) as BF16:
/// pair p is elements [32p, 32p + 32); `rest` (1..31) elements of a last,
/// partial pair, zeros after them.
template <typename Rows> struct Bf16Of {
  Rows rows;
  void prefetch(int64_t r, int64_t p) const {
    rows.prefetch(r, 2 * p, kPrefetchRows);
    rows.prefetch(r, 2 * p + 1, kPrefetchRows);
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
  void prefetch(int64_t r, int64_t p) const { rows.prefetch(r * span, p); }
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
void run(const Rows &loader, int64_t rows, int64_t cols, const uint16_t *x, int64_t xStride,
         int64_t tokens, float *out, int64_t outStride, uint16_t *scratch) {
  const Bf16Of<Rows> weights{loader};
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
  run(F32Rows{w, cols}, rows, cols, x, xStride, tokens, out, outStride, scratch);
}

void dotBlockF16(const uint16_t *w, int64_t rows, int64_t cols, const uint16_t *x, int64_t xStride,
                 int64_t tokens, float *out, int64_t outStride, uint16_t *scratch) {
  run(F16Rows{w, cols}, rows, cols, x, xStride, tokens, out, outStride, scratch);
}

void dotBlockFp8(const uint8_t *w, int64_t rows, int64_t cols, const uint16_t *x, int64_t xStride,
                 int64_t tokens, float *out, int64_t outStride, uint16_t *scratch) {
  run(Fp8Rows{w, cols}, rows, cols, x, xStride, tokens, out, outStride, scratch);
}

void dotBlockNvfp4(const uint8_t *packed, const uint8_t *scales, const float *e4m3, int64_t rows,
                   int64_t cols, const uint16_t *x, int64_t xStride, int64_t tokens, float *out,
                   int64_t outStride, uint16_t *scratch) {
  run(Nvfp4Rows{packed, scales, cols, &scaledE2m1(e4m3)}, rows, cols, x, xStride, tokens, out,
      outStride, scratch);
}

} // namespace volt::cpu::detail::avx512bf16
