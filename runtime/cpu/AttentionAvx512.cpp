//===- AttentionAvx512.cpp ------------------------------------------------===//
//
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq (and, like all of
// runtime/cpu, -ffp-contract=off: the value sums round each product).
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/AttentionAvx512.h"

// GCC 12's masked intrinsics read an undefined vector they then ignore.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512DQ__)
#error "AttentionAvx512.cpp must be compiled with AVX-512 F, BW and DQ"
#endif

namespace volt::cpu::detail::avx512 {
namespace {

/// The lanes summed as Kernels.cpp's foldLanes does: halves, then quarters,
/// then pairs.
inline float fold(__m512 a) {
  __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  __m128 s1 = _mm_add_ss(s2, _mm_movehdup_ps(s2));
  return _mm_cvtss_f32(s1);
}

/// fold() of 16 vectors at once: lane k of the result is fold(a[k]), each
/// lane's sums paired exactly as fold pairs them (halves, quarters, pairs,
/// then the last two), four vectors' worth of shuffles for sixteen folds.
inline __m512 fold16(const __m512 (&a)[16]) {
  // Halves: b[m] holds a[2m]'s 8 partials, then a[2m + 1]'s.
  __m512 b[8];
  for (int m = 0; m < 8; ++m)
    b[m] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * m], a[2 * m + 1], 0x44),
                         _mm512_shuffle_f32x4(a[2 * m], a[2 * m + 1], 0xEE));
  // Quarters: quarter i of c[n] holds a[4n + i]'s 4 partials.
  __m512 c[4];
  for (int n = 0; n < 4; ++n)
    c[n] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * n], b[2 * n + 1], 0x88),
                         _mm512_shuffle_f32x4(b[2 * n], b[2 * n + 1], 0xDD));
  // Pairs: quarter i of d[o] holds a[8o + i]'s 2 partials, then a[8o + 4 + i]'s.
  __m512 d[2];
  for (int o = 0; o < 2; ++o)
    d[o] = _mm512_add_ps(_mm512_shuffle_ps(c[2 * o], c[2 * o + 1], 0x44),
                         _mm512_shuffle_ps(c[2 * o], c[2 * o + 1], 0xEE));
  // The last two: lane 4i + r holds fold(a[4r + i]).
  const __m512 e =
      _mm512_add_ps(_mm512_shuffle_ps(d[0], d[1], 0x88), _mm512_shuffle_ps(d[0], d[1], 0xDD));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, e);
}

inline __mmask16 lanes(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

/// 16 FP16 values (fewer at a row's end: zeros after them) as FP32.
inline __m512 loadHalves(const uint16_t *p, int64_t left) {
  return left >= 16 ? _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)))
                    : _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(lanes(left), p));
}

/// The value sums of G heads (G <= 8) over one 16-wide chunk of dims.
template <int G>
void accumulateChunk(const uint16_t *v, int64_t vStride, int64_t n, const float *p, int64_t pStride,
                     int64_t dim, int64_t d, float *acc) {
  const int64_t left = dim - d;
  const __mmask16 m = left >= 16 ? static_cast<__mmask16>(0xffff) : lanes(left);
  __m512 sums[G];
  for (int g = 0; g < G; ++g)
    sums[g] = _mm512_maskz_loadu_ps(m, acc + g * dim + d);
  for (int64_t j = 0; j < n; ++j) {
    const __m512 x = loadHalves(v + j * vStride + d, left);
    for (int g = 0; g < G; ++g)
      sums[g] = _mm512_add_ps(sums[g], _mm512_mul_ps(_mm512_set1_ps(p[g * pStride + j]), x));
  }
  for (int g = 0; g < G; ++g)
    _mm512_mask_storeu_ps(acc + g * dim + d, m, sums[g]);
}

template <int G>
void accumulateHeads(const uint16_t *v, int64_t vStride, int64_t n, const float *p, int64_t pStride,
                     int64_t dim, float *acc) {
  for (int64_t d = 0; d < dim; d += 16)
    accumulateChunk<G>(v, vStride, n, p, pStride, dim, d, acc);
}

} // namespace

void convertRows(const uint16_t *k, int64_t kStride, int64_t n, int64_t dim, float *out) {
  const int64_t stride = paddedDim(dim);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t d = 0; d < dim; d += 16)
      _mm512_storeu_ps(out + j * stride + d, loadHalves(k + j * kStride + d, dim - d));
}

namespace {

/// Chunk d of q (16 values; fewer at the end, zeros after them).
inline __m512 loadQuery(const float *q, int64_t dim, int64_t d) {
  const int64_t left = dim - d;
  return left >= 16 ? _mm512_loadu_ps(q + d) : _mm512_maskz_loadu_ps(lanes(left), q + d);
}

/// One row's scores for one head.
inline float scoreRow(const float *k, const float *q, int64_t dim, float scale) {
  __m512 sum = _mm512_setzero_ps();
  for (int64_t d = 0; d < dim; d += 16)
    sum = _mm512_fmadd_ps(_mm512_loadu_ps(k + d), loadQuery(q, dim, d), sum);
  return fold(sum) * scale;
}

} // namespace

void scoreRows(const float *k, int64_t n, const float *q, int64_t group, int64_t dim, float scale,
               float *scores, int64_t scoresStride) {
  const int64_t stride = paddedDim(dim);
  const __m512 scales = _mm512_set1_ps(scale);
  // Sixteen rows against one head at a time, their lane sums folded
  // together; the q chunk is loaded once for the sixteen. (Eight rows
  // against pairs of heads, each K chunk loaded once for two, measured
  // slower here.)
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const float *rows = k + j * stride;
    for (int64_t g = 0; g < group; ++g) {
      const float *qg = q + g * dim;
      __m512 sums[16];
      for (int r = 0; r < 16; ++r)
        sums[r] = _mm512_setzero_ps();
      for (int64_t d = 0; d < dim; d += 16) {
        const __m512 y = loadQuery(qg, dim, d);
        // An FP16 value times an FP16 value is exact in FP32: fusing the
        // product into its sum rounds once where dot() rounds the sum.
        for (int r = 0; r < 16; ++r)
          sums[r] = _mm512_fmadd_ps(_mm512_loadu_ps(rows + r * stride + d), y, sums[r]);
      }
      _mm512_storeu_ps(scores + g * scoresStride + j, _mm512_mul_ps(fold16(sums), scales));
    }
  }
  for (; j < n; ++j)
    for (int64_t g = 0; g < group; ++g)
      scores[g * scoresStride + j] = scoreRow(k + j * stride, q + g * dim, dim, scale);
}

float maxOf(const float *s, int64_t n) {
  __m512 m = _mm512_set1_ps(s[0]);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    m = _mm512_max_ps(m, _mm512_loadu_ps(s + j));
  if (j < n)
    m = _mm512_mask_max_ps(m, lanes(n - j), m, _mm512_maskz_loadu_ps(lanes(n - j), s + j));
  return _mm512_reduce_max_ps(m);
}

void accumulateValues(const uint16_t *v, int64_t vStride, int64_t n, const float *p,
                      int64_t pStride, int64_t group, int64_t dim, float *acc) {
  int64_t g = 0;
  for (; g + 8 <= group; g += 8)
    accumulateHeads<8>(v, vStride, n, p + g * pStride, pStride, dim, acc + g * dim);
  // The last group - g (< 8) heads.
  using Heads =
      void (*)(const uint16_t *, int64_t, int64_t, const float *, int64_t, int64_t, float *);
  static constexpr Heads kRest[8] = {nullptr,
                                     accumulateHeads<1>,
                                     accumulateHeads<2>,
                                     accumulateHeads<3>,
                                     accumulateHeads<4>,
                                     accumulateHeads<5>,
                                     accumulateHeads<6>,
                                     accumulateHeads<7>};
  if (g < group)
    kRest[group - g](v, vStride, n, p + g * pStride, pStride, dim, acc + g * dim);
}

} // namespace volt::cpu::detail::avx512
