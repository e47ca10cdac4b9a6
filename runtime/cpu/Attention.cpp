//===- Attention.cpp ------------------------------------------------------===//
#include "runtime/cpu/Attention.h"

#include "runtime/cpu/Kernels.h"
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

/// Where a sequence's position j lives in one layer's K (or V) blocks.
inline int64_t cacheRow(const StepBatch &batch, const PagedKvCache &cache, int64_t seq, int64_t j) {
  int64_t block = batch.blockTables[seq * batch.maxBlocksPerSeq + j / cache.blockSize];
  assert(block >= 0 && block < cache.numBlocks);
  return block * cache.blockSize + j % cache.blockSize;
}

/// Positions ahead of the one being read whose rows are prefetched: a row
/// is a few cache lines in a block chosen by the block table, so the
/// hardware prefetcher cannot see it coming.
constexpr int64_t kPrefetchDistance = 8;

void prefetchRow(const uint16_t *base, int64_t bytes) {
  for (int64_t offset = 0; offset < bytes; offset += 64)
    __builtin_prefetch(reinterpret_cast<const char *>(base) + offset);
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
  // and V row as it is converted.
  pool.parallelFor(params.tokens * hkv, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> q(static_cast<size_t>(group * dim)), kv(static_cast<size_t>(dim)),
        acc(static_cast<size_t>(group * dim)), sums(static_cast<size_t>(group)),
        dots(static_cast<size_t>(group)), scores;
    for (int64_t item = begin; item < end; ++item) {
      int64_t t = item / hkv, kvHead = item % hkv;
      const TokenPlace place = places[static_cast<size_t>(t)];
      const int64_t context = place.position + 1;
      scores.resize(static_cast<size_t>(group * context));
      detail::halfToFloat(qkv + t * rowElems + kvHead * group * dim, q.data(), group * dim);

      for (int64_t j = 0; j < context; ++j) {
        if (j + kPrefetchDistance < context)
          prefetchRow(cache.k + cacheRow(batch, cache, place.seq, j + kPrefetchDistance) * kvElems +
                          kvHead * dim,
                      dim * 2);
        int64_t row = cacheRow(batch, cache, place.seq, j);
        detail::halfToFloat(cache.k + row * kvElems + kvHead * dim, kv.data(), dim);
        // dot(k, q[g]) for the whole group at once (the same bits as dot()).
        detail::dotRows(kv.data(), q.data(), dim, group, dim, dots.data());
        for (int64_t g = 0; g < group; ++g)
          scores[g * context + j] = dots[static_cast<size_t>(g)] * scale;
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
      for (int64_t j = 0; j < context; ++j) {
        if (j + kPrefetchDistance < context)
          prefetchRow(cache.v + cacheRow(batch, cache, place.seq, j + kPrefetchDistance) * kvElems +
                          kvHead * dim,
                      dim * 2);
        int64_t row = cacheRow(batch, cache, place.seq, j);
        detail::halfToFloat(cache.v + row * kvElems + kvHead * dim, kv.data(), dim);
        for (int64_t g = 0; g < group; ++g)
          detail::axpy(scores[g * context + j], kv.data(), acc.data() + g * dim, dim);
      }
      uint16_t *o = out + t * hq * dim + kvHead * group * dim;
      for (int64_t g = 0; g < group; ++g)
        for (int64_t d = 0; d < dim; ++d)
          o[g * dim + d] = floatToHalf(acc[g * dim + d] / sums[static_cast<size_t>(g)]);
    }
  });
}

} // namespace volt::cpu
