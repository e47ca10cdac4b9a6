//===- Attention.cpp ------------------------------------------------------===//
#include "runtime/cpu/Attention.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/Scratch.h"
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

void placeTokens(const AttentionParams &params, const StepBatch &batch, int64_t blockSize,
                 std::vector<TokenPlace> &places) {
  places.resize(static_cast<size_t>(params.tokens));
  assert(batch.seqStarts[0] == 0 && batch.seqStarts[params.seqs] == params.tokens);
  for (int64_t s = 0; s < params.seqs; ++s) {
    int64_t begin = batch.seqStarts[s], end = batch.seqStarts[s + 1];
    int64_t first = batch.contextLens[s] - (end - begin);
    assert(begin <= end && first >= 0);
    assert(batch.contextLens[s] <= batch.maxBlocksPerSeq * blockSize);
    for (int64_t t = begin; t < end; ++t)
      places[static_cast<size_t>(t)] = {s, first + (t - begin)};
  }
}

/// The portable bodies of AttentionAvx512.h's loops, whose bits they give:
/// K rows converted to FP32 (rows of `dim`), dotRows for the scores, one
/// axpy per head for the values.
void scoreRowsPortable(const float *k, int64_t n, const float *q, int64_t group, int64_t dim,
                       float scale, float *scores, int64_t scoresStride, float *dots) {
  for (int64_t j = 0; j < n; ++j) {
    // dot(k, q[g]) for the whole group at once (the same bits as dot()).
    detail::dotRows(k + j * dim, q, dim, group, dim, dots);
    for (int64_t g = 0; g < group; ++g)
      scores[g * scoresStride + j] = dots[g] * scale;
  }
}

void accumulateValuesPortable(const uint16_t *v, int64_t vStride, int64_t n, const float *p,
                              int64_t pStride, int64_t group, int64_t dim, float *acc, float *row) {
  for (int64_t j = 0; j < n; ++j) {
    detail::halfToFloat(v + j * vStride, row, dim);
    for (int64_t g = 0; g < group; ++g)
      detail::axpy(p[g * pStride + j], row, acc + g * dim, dim);
  }
}

/// Query tokens of one sequence that walk its cache together: each block of
/// K is converted once for all of them.
constexpr int64_t kTileTokens = 16;

/// Consecutive tokens [first, first + count) of one sequence.
struct Tile {
  int64_t first;
  int64_t count;
};

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
  // The caller's buffers, which the workers read (detail::threadBuffer).
  std::vector<TokenPlace> &places = detail::threadBuffer<TokenPlace>(0, 0);
  placeTokens(params, batch, cache.blockSize, places);

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

  // One work item per (tile of up to kTileTokens tokens of a sequence, kv
  // head): each token's group of q heads against the sequence's cache, a
  // block at a time (rows of one kv head at a stride of kvElems), the next
  // block prefetched. A block's K rows are converted to FP32 once for the
  // tile; each (token, head) still sums its own scores and values in the
  // contract's order, so the tiling changes no bit.
  std::vector<Tile> &tiles = detail::threadBuffer<Tile>(0, 0);
  for (int64_t seq = 0; seq < params.seqs; ++seq)
    for (int64_t t = batch.seqStarts[seq]; t < batch.seqStarts[seq + 1]; t += kTileTokens)
      tiles.push_back({t, std::min<int64_t>(kTileTokens, batch.seqStarts[seq + 1] - t)});
#ifdef VOLT_CPU_AVX512
  const bool avx512 = detail::dotBlockPath() >= detail::DotBlockPath::Avx512;
  const int64_t keyStride = avx512 ? detail::avx512::paddedDim(dim) : dim;
#else
  const bool avx512 = false;
  const int64_t keyStride = dim;
#endif
  const int64_t bs = cache.blockSize;
  const int64_t numTiles = static_cast<int64_t>(tiles.size());
  pool.parallelFor(numTiles * hkv, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> &q = detail::threadBuffer(0, kTileTokens * group * dim),
                       &keys = detail::threadBuffer(1, bs * keyStride),
                       &row = detail::threadBuffer(2, dim),
                       &acc = detail::threadBuffer(3, group * dim),
                       &dots = detail::threadBuffer(4, group),
                       &maxes = detail::threadBuffer(5, group),
                       &sums = detail::threadBuffer(6, group), &scores = detail::threadBuffer(7, 0);
    for (int64_t item = begin; item < end; ++item) {
      const Tile tile = tiles[static_cast<size_t>(item / hkv)];
      const int64_t kvHead = item % hkv;
      const TokenPlace last = places[static_cast<size_t>(tile.first + tile.count - 1)];
      const int64_t firstContext = last.position + 2 - tile.count;
      const int64_t maxContext = last.position + 1;
      const int64_t blocks = (maxContext + bs - 1) / bs;
      const int32_t *table = batch.blockTables + last.seq * batch.maxBlocksPerSeq;
      // Token i of the tile (context firstContext + i): its scores, group
      // rows of up to maxContext at a stride of `ss`, from scores + i *
      // group * ss. The stride is a multiple of 64 bytes plus 64, never of
      // 4 KiB: the softmax walks the group's rows side by side, and rows 4
      // KiB apart would share a handful of L1 sets.
      const int64_t ss = (maxContext + 15) / 16 * 16 + 16;
      scores.resize(static_cast<size_t>(tile.count * group * ss));
      for (int64_t i = 0; i < tile.count; ++i)
        detail::halfToFloat(qkv + (tile.first + i) * rowElems + kvHead * group * dim,
                            q.data() + i * group * dim, group * dim);
      // Block b's rows of this kv head in K (or V).
      auto rowsOf = [&](const uint16_t *kOrV, int64_t b) {
        assert(table[b] >= 0 && table[b] < cache.numBlocks);
        return kOrV + static_cast<int64_t>(table[b]) * bs * kvElems + kvHead * dim;
      };
      // Rows of block b that token i attends to (0 past its context).
      auto rowsFor = [&](int64_t i, int64_t b) {
        return std::clamp<int64_t>(firstContext + i - b * bs, 0, bs);
      };

      for (int64_t b = 0; b < blocks; ++b) {
        if (b + 1 < blocks)
          prefetchRows(rowsOf(cache.k, b + 1), rowsFor(tile.count - 1, b + 1), kvElems, dim * 2);
        const int64_t n = rowsFor(tile.count - 1, b);
#ifdef VOLT_CPU_AVX512
        if (avx512)
          detail::avx512::convertRows(rowsOf(cache.k, b), kvElems, n, dim, keys.data());
#endif
        if (!avx512)
          for (int64_t j = 0; j < n; ++j)
            detail::halfToFloat(rowsOf(cache.k, b) + j * kvElems, keys.data() + j * dim, dim);
        for (int64_t i = 0; i < tile.count; ++i) {
          const int64_t rows = rowsFor(i, b);
          float *s = scores.data() + i * group * ss + b * bs;
          const float *qi = q.data() + i * group * dim;
#ifdef VOLT_CPU_AVX512
          if (avx512) {
            detail::avx512::scoreRows(keys.data(), rows, qi, group, dim, scale, s, ss);
            continue;
          }
#endif
          scoreRowsPortable(keys.data(), rows, qi, group, dim, scale, s, ss, dots.data());
        }
      }
      for (int64_t i = 0; i < tile.count; ++i) {
        const int64_t context = firstContext + i;
        float *p = scores.data() + i * group * ss;
        // Each head's l sums its weights in order of j; the heads' sums
        // advance side by side, so that their additions overlap.
        for (int64_t g = 0; g < group; ++g) {
          const float *s = p + g * ss;
#ifdef VOLT_CPU_AVX512
          if (avx512) {
            maxes[static_cast<size_t>(g)] = detail::avx512::maxOf(s, context);
            sums[static_cast<size_t>(g)] = 0.0f;
            continue;
          }
#endif
          maxes[static_cast<size_t>(g)] = *std::max_element(s, s + context);
          sums[static_cast<size_t>(g)] = 0.0f;
        }
        for (int64_t j = 0; j < context; ++j)
          for (int64_t g = 0; g < group; ++g) {
            float &e = p[g * ss + j];
            e = std::exp(e - maxes[static_cast<size_t>(g)]);
            sums[static_cast<size_t>(g)] += e;
          }
        std::fill(acc.begin(), acc.end(), 0.0f);
        const int64_t tokenBlocks = (context + bs - 1) / bs;
        for (int64_t b = 0; b < tokenBlocks; ++b) {
          if (b + 1 < tokenBlocks)
            prefetchRows(rowsOf(cache.v, b + 1), rowsFor(i, b + 1), kvElems, dim * 2);
#ifdef VOLT_CPU_AVX512
          if (avx512) {
            detail::avx512::accumulateValues(rowsOf(cache.v, b), kvElems, rowsFor(i, b), p + b * bs,
                                             ss, group, dim, acc.data());
            continue;
          }
#endif
          accumulateValuesPortable(rowsOf(cache.v, b), kvElems, rowsFor(i, b), p + b * bs, ss,
                                   group, dim, acc.data(), row.data());
        }
        uint16_t *o = out + (tile.first + i) * hq * dim + kvHead * group * dim;
        for (int64_t g = 0; g < group; ++g) {
          const float l = sums[static_cast<size_t>(g)];
          for (int64_t d = 0; d < dim; ++d)
            acc[g * dim + d] /= l;
        }
        detail::floatToHalf(acc.data(), o, group * dim);
      }
    }
  });
}

} // namespace volt::cpu
