//===- Attention.cpp ------------------------------------------------------===//
#include "runtime/cpu/Attention.h"

#include "runtime/cpu/Kernels.h"
#ifdef VOLT_CPU_AVX512
#include "runtime/cpu/AttentionAvx512.h"
#endif
#include "runtime/numerics/Half.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <vector>

namespace volt::cpu {
namespace {

struct TokenPlace {
  int64_t seq;
  int64_t position;
};

std::vector<TokenPlace> placeTokens(const AttentionParams &params, const StepBatch &batch,
                                    int64_t blockSize) {
  std::vector<TokenPlace> places(static_cast<size_t>(params.tokens));
  assert(batch.seqStarts[0] == 0 && batch.seqStarts[params.seqs] == params.tokens);
  for (int64_t s = 0; s < params.seqs; ++s) {
    int64_t begin = batch.seqStarts[s], end = batch.seqStarts[s + 1];
    int64_t first = batch.contextLens[s] - (end - begin);
    assert(begin <= end && first >= 0);
    assert(batch.contextLens[s] <= batch.maxBlocksPerSeq * blockSize);
    for (int64_t t = begin; t < end; ++t)
      places[static_cast<size_t>(t)] = {s, first + (t - begin)};
  }
  return places;
}

/// The portable bodies of detail::avx512::scoreKeys and accumulateValues
/// (AttentionAvx512.h), which give their bits: each row converted to FP32,
/// then dotRows for the scores and one axpy per head for the values.
void scoreKeysPortable(const uint16_t *k, int64_t kStride, int64_t n, const float *q,
                       int64_t group, int64_t dim, float scale, float *scores,
                       int64_t scoresStride, float *row, float *dots) {
  for (int64_t j = 0; j < n; ++j) {
    detail::halfToFloat(k + j * kStride, row, dim);
    // dot(k, q[g]) for the whole group at once (the same bits as dot()).
    detail::dotRows(row, q, dim, group, dim, dots);
    for (int64_t g = 0; g < group; ++g)
      scores[g * scoresStride + j] = dots[g] * scale;
  }
}

void accumulateValuesPortable(const uint16_t *v, int64_t vStride, int64_t n, const float *p,
                              int64_t pStride, int64_t group, int64_t dim, float *acc,
                              float *row) {
  for (int64_t j = 0; j < n; ++j) {
    detail::halfToFloat(v + j * vStride, row, dim);
    for (int64_t g = 0; g < group; ++g)
      detail::axpy(p[g * pStride + j], row, acc + g * dim, dim);
  }
}

/// Prefetches `rows` rows of `bytes` at `stride` elements: the next block of
/// the cache, which the block table places where the hardware prefetcher
/// cannot see it coming.
void prefetchRows(const uint16_t *base, int64_t rows, int64_t stride, int64_t bytes) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t offset = 0; offset < bytes; offset += 64)
      __builtin_prefetch(reinterpret_cast<const char *>(base + r * stride) + offset);
}

} // namespace

void attention(const AttentionParams &params, const uint16_t *qkv, const StepBatch &batch,
               const PagedKvCache &cache, uint16_t *out, ThreadPool &pool) {
  const int64_t hq = params.numHeads, hkv = params.numKvHeads, dim = params.headDim;
  assert(hq > 0 && hkv > 0 && hq % hkv == 0 && dim > 0 && cache.blockSize > 0);
  const int64_t group = hq / hkv;
  const int64_t rowElems = (hq + 2 * hkv) * dim;
  const int64_t kvElems = hkv * dim; // one slot of K (or V)
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dim)));
  std::vector<TokenPlace> places = placeTokens(params, batch, cache.blockSize);

  // Every token's k and v must be in the cache before any token of the same
  // prefill chunk reads them.
  pool.parallelFor(params.tokens, 16, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t slot = batch.slotMapping[t];
      if (slot < 0)
        continue;
      assert(slot < cache.numBlocks * cache.blockSize);
      const uint16_t *row = qkv + t * rowElems;
      std::memcpy(cache.k + slot * kvElems, row + hq * dim, kvElems * sizeof(uint16_t));
      std::memcpy(cache.v + slot * kvElems, row + (hq + hkv) * dim, kvElems * sizeof(uint16_t));
    }
  });

  // One work item per (token, kv head): the group's q heads share each K
  // and V row as it is converted. The context is walked a block of the
  // cache at a time (rows of one kv head at a stride of kvElems), the next
  // block prefetched.
#ifdef VOLT_CPU_AVX512
  const bool avx512 = detail::dotBlockPath() >= detail::DotBlockPath::Avx512;
#else
  const bool avx512 = false;
#endif
  const int64_t bs = cache.blockSize;
  pool.parallelFor(params.tokens * hkv, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> q(static_cast<size_t>(group * dim)), kv(static_cast<size_t>(dim)),
        acc(static_cast<size_t>(group * dim)), sums(static_cast<size_t>(group)),
        dots(static_cast<size_t>(group)), scores;
    for (int64_t item = begin; item < end; ++item) {
      int64_t t = item / hkv, kvHead = item % hkv;
      const TokenPlace place = places[static_cast<size_t>(t)];
      const int64_t context = place.position + 1;
      const int64_t blocks = (context + bs - 1) / bs;
      const int32_t *table = batch.blockTables + place.seq * batch.maxBlocksPerSeq;
      scores.resize(static_cast<size_t>(group * context));
      detail::halfToFloat(qkv + t * rowElems + kvHead * group * dim, q.data(), group * dim);
      // Block b's rows of this kv head in K (or V).
      auto rowsOf = [&](const uint16_t *kOrV, int64_t b) {
        assert(table[b] >= 0 && table[b] < cache.numBlocks);
        return kOrV + static_cast<int64_t>(table[b]) * bs * kvElems + kvHead * dim;
      };
      auto blockRows = [&](int64_t b) { return std::min(bs, context - b * bs); };

      for (int64_t b = 0; b < blocks; ++b) {
        if (b + 1 < blocks)
          prefetchRows(rowsOf(cache.k, b + 1), blockRows(b + 1), kvElems, dim * 2);
        float *s = scores.data() + b * bs;
#ifdef VOLT_CPU_AVX512
        if (avx512) {
          detail::avx512::scoreKeys(rowsOf(cache.k, b), kvElems, blockRows(b), q.data(), group,
                                    dim, scale, s, context);
          continue;
        }
#endif
        scoreKeysPortable(rowsOf(cache.k, b), kvElems, blockRows(b), q.data(), group, dim, scale,
                          s, context, kv.data(), dots.data());
      }
      for (int64_t g = 0; g < group; ++g) {
        float *s = scores.data() + g * context;
        float m = *std::max_element(s, s + context);
        float l = 0.0f;
        for (int64_t j = 0; j < context; ++j) {
          s[j] = std::exp(s[j] - m);
          l += s[j];
        }
        sums[static_cast<size_t>(g)] = l;
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t b = 0; b < blocks; ++b) {
        if (b + 1 < blocks)
          prefetchRows(rowsOf(cache.v, b + 1), blockRows(b + 1), kvElems, dim * 2);
        const float *p = scores.data() + b * bs;
#ifdef VOLT_CPU_AVX512
        if (avx512) {
          detail::avx512::accumulateValues(rowsOf(cache.v, b), kvElems, blockRows(b), p, context,
                                           group, dim, acc.data());
          continue;
        }
#endif
        accumulateValuesPortable(rowsOf(cache.v, b), kvElems, blockRows(b), p, context, group,
                                 dim, acc.data(), kv.data());
      }
      uint16_t *o = out + t * hq * dim + kvHead * group * dim;
      for (int64_t g = 0; g < group; ++g)
        for (int64_t d = 0; d < dim; ++d)
          o[g * dim + d] = floatToHalf(acc[g * dim + d] / sums[static_cast<size_t>(g)]);
    }
  });
}

} // namespace volt::cpu
