// Paged attention against double precision over the sequences' full K and
// V, which the test keeps itself: long contexts across many blocks of a
// shuffled block table, a prefill chunk mixed with decodes in one step, GQA.
#include "runtime/cpu/Attention.h"

#include "TestUtil.h"
#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <numeric>

namespace volt::cpu {
namespace {

using namespace test;

struct SeqSpec {
  int64_t newTokens;
  int64_t context; // after this step
};

struct AttentionCase {
  int64_t heads, kvHeads, dim, blockSize;
  std::vector<SeqSpec> seqs;
};

void PrintTo(const AttentionCase &c, std::ostream *os) {
  *os << "Hq " << c.heads << ", Hkv " << c.kvHeads << ", D " << c.dim << ", blocks of "
      << c.blockSize << ", seqs (new/context):";
  for (const SeqSpec &s : c.seqs)
    *os << " " << s.newTokens << "/" << s.context;
}

class AttentionTest : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionTest, MatchesDoubleAndWritesTheCache) {
  const AttentionCase c = GetParam();
  std::mt19937 rng(40);
  const int64_t hq = c.heads, hkv = c.kvHeads, dim = c.dim, bs = c.blockSize;
  const int64_t seqs = static_cast<int64_t>(c.seqs.size());
  const int64_t row = (hq + 2 * hkv) * dim, kvElems = hkv * dim;

  // Distinct blocks for every sequence, in shuffled order.
  int64_t maxBlocks = 0, totalBlocks = 0;
  for (const SeqSpec &s : c.seqs) {
    maxBlocks = std::max(maxBlocks, (s.context + bs - 1) / bs);
    totalBlocks += (s.context + bs - 1) / bs;
  }
  const int64_t numBlocks = totalBlocks + 7;
  std::vector<int32_t> blockIds(static_cast<size_t>(numBlocks));
  std::iota(blockIds.begin(), blockIds.end(), 0);
  std::shuffle(blockIds.begin(), blockIds.end(), rng);
  std::vector<int32_t> tables(static_cast<size_t>(seqs * maxBlocks), -1);
  size_t nextBlock = 0;
  for (int64_t s = 0; s < seqs; ++s)
    for (int64_t b = 0; b < (c.seqs[static_cast<size_t>(s)].context + bs - 1) / bs; ++b)
      tables[static_cast<size_t>(s * maxBlocks + b)] = blockIds[nextBlock++];

  std::vector<uint16_t> kCache = randomHalf(static_cast<size_t>(numBlocks * bs * kvElems), rng),
                        vCache = randomHalf(kCache.size(), rng);
  auto slotOf = [&](int64_t s, int64_t position) {
    return static_cast<int64_t>(tables[static_cast<size_t>(s * maxBlocks + position / bs)]) * bs +
           position % bs;
  };

  // The step: each sequence's new tokens in order.
  std::vector<int32_t> seqStarts = {0}, contextLens, slotMapping;
  std::vector<std::pair<int64_t, int64_t>> tokenPlace; // (seq, position)
  for (int64_t s = 0; s < seqs; ++s) {
    const SeqSpec &spec = c.seqs[static_cast<size_t>(s)];
    for (int64_t i = 0; i < spec.newTokens; ++i) {
      int64_t position = spec.context - spec.newTokens + i;
      tokenPlace.push_back({s, position});
      slotMapping.push_back(static_cast<int32_t>(slotOf(s, position)));
    }
    seqStarts.push_back(static_cast<int32_t>(tokenPlace.size()));
    contextLens.push_back(static_cast<int32_t>(spec.context));
  }
  const int64_t tokens = static_cast<int64_t>(tokenPlace.size());
  std::vector<uint16_t> qkv = randomHalf(static_cast<size_t>(tokens * row), rng, 1.5f);

  // What the cache must hold afterwards: the old contents, with each new
  // token's k and v at its slot.
  std::vector<uint16_t> kWant = kCache, vWant = vCache;
  for (int64_t t = 0; t < tokens; ++t) {
    int64_t slot = slotMapping[static_cast<size_t>(t)];
    std::copy_n(qkv.begin() + t * row + hq * dim, kvElems, kWant.begin() + slot * kvElems);
    std::copy_n(qkv.begin() + t * row + (hq + hkv) * dim, kvElems, vWant.begin() + slot * kvElems);
  }

  std::vector<uint16_t> out(static_cast<size_t>(tokens * hq * dim));
  ThreadPool pool(3);
  StepBatch batch{slotMapping.data(), seqStarts.data(), contextLens.data(), tables.data(),
                  maxBlocks};
  attention({tokens, seqs, hq, hkv, dim}, qkv.data(), batch,
            {kCache.data(), vCache.data(), numBlocks, bs}, out.data(), pool);
  ASSERT_EQ(kCache, kWant);
  ASSERT_EQ(vCache, vWant);

  const double scale = 1.0 / std::sqrt(static_cast<double>(dim));
  for (int64_t t = 0; t < tokens; ++t) {
    auto [s, position] = tokenPlace[static_cast<size_t>(t)];
    const int64_t n = position + 1;
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t kvHead = h / (hq / hkv);
      const uint16_t *q = qkv.data() + t * row + h * dim;
      std::vector<double> score(static_cast<size_t>(n));
      double maxScoreError = 0, maxScore = -1e300;
      for (int64_t j = 0; j < n; ++j) {
        const uint16_t *k = kWant.data() + slotOf(s, j) * kvElems + kvHead * dim;
        double dot = 0, abs = 0;
        for (int64_t d = 0; d < dim; ++d) {
          dot += h2d(q[d]) * h2d(k[d]);
          abs += std::fabs(h2d(q[d]) * h2d(k[d]));
        }
        score[static_cast<size_t>(j)] = dot * scale;
        maxScore = std::max(maxScore, dot * scale);
        maxScoreError =
            std::max(maxScoreError, dotBound(dim, abs) * scale + 2 * kU32 * std::fabs(dot * scale));
      }
      double l = 0, spread = 0;
      for (double v : score) {
        l += std::exp(v - maxScore);
        spread = std::max(spread, maxScore - v);
      }
      // Relative error of each exp(score - max): the scores' errors, the
      // subtraction, exp's own.
      const double delta = 2 * maxScoreError + kU32 * spread + 2 * kU32;
      for (int64_t d = 0; d < dim; ++d) {
        double o = 0, weightedAbs = 0;
        for (int64_t j = 0; j < n; ++j) {
          double p = std::exp(score[static_cast<size_t>(j)] - maxScore) / l;
          double v = h2d(vWant[static_cast<size_t>(slotOf(s, j) * kvElems + kvHead * dim + d)]);
          o += p * v;
          weightedAbs += p * std::fabs(v);
        }
        double bound =
            (2 * delta + 2 * static_cast<double>(n + 2) * kU32) * weightedAbs + kU32 * std::fabs(o);
        double got = h2d(out[static_cast<size_t>(t * hq * dim + h * dim + d)]);
        ASSERT_NEAR(got, o, f16Tolerance(o, bound))
            << "token " << t << " (seq " << s << ", position " << position << ") head " << h
            << " d " << d;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, AttentionTest,
                         ::testing::Values(
                             // One long decode crossing 63 blocks.
                             AttentionCase{4, 2, 64, 16, {{1, 1000}}},
                             // A prefill chunk (37 new after 50 cached) and decodes of contexts
                             // 1, 300 and 777 in one step; GQA groups of 4.
                             AttentionCase{8, 2, 64, 16, {{1, 300}, {37, 87}, {1, 1}, {1, 777}}},
                             // A whole prompt as one chunk, no GQA, head size not a multiple of
                             // 16, blocks of 5.
                             AttentionCase{3, 3, 40, 5, {{23, 23}, {2, 9}}},
                             // Every query head its own group of 8.
                             AttentionCase{8, 1, 128, 32, {{4, 130}, {1, 64}}},
                             // A long decode beside a prefill chunk, Qwen3's 32 q / 4 kv
                             // heads of 128.
                             AttentionCase{32, 4, 128, 16, {{1, 2000}, {40, 100}}}));

TEST_P(AttentionTest, EveryPathGivesTheSameBits) {
  // The AVX-512 loops (scores a block of K rows at a time with fused exact
  // products, values in registers) against the portable ones (halfToFloat,
  // dotRows, axpy): the reference's bits on every CPU. Scores spread wide
  // enough that the softmax is not flat, so a wrong sum order shows.
  const AttentionCase c = GetParam();
  std::mt19937 rng(42);
  const int64_t hq = c.heads, hkv = c.kvHeads, dim = c.dim, bs = c.blockSize;
  const int64_t seqs = static_cast<int64_t>(c.seqs.size());
  int64_t maxBlocks = 0, numBlocks = 0, tokens = 0;
  for (const SeqSpec &sp : c.seqs) {
    maxBlocks = std::max(maxBlocks, (sp.context + bs - 1) / bs);
    numBlocks += (sp.context + bs - 1) / bs;
    tokens += sp.newTokens;
  }
  std::vector<int32_t> tables(static_cast<size_t>(seqs * maxBlocks), 0), seqStarts = {0},
      contextLens, slots;
  std::vector<int32_t> ids(static_cast<size_t>(numBlocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  size_t next = 0;
  for (int64_t s = 0; s < seqs; ++s) {
    const SeqSpec &sp = c.seqs[static_cast<size_t>(s)];
    for (int64_t b = 0; b < (sp.context + bs - 1) / bs; ++b)
      tables[static_cast<size_t>(s * maxBlocks + b)] = ids[next++];
    for (int64_t i = 0; i < sp.newTokens; ++i) {
      const int64_t position = sp.context - sp.newTokens + i;
      slots.push_back(tables[static_cast<size_t>(s * maxBlocks + position / bs)] *
                          static_cast<int32_t>(bs) +
                      static_cast<int32_t>(position % bs));
    }
    seqStarts.push_back(seqStarts.back() + static_cast<int32_t>(sp.newTokens));
    contextLens.push_back(static_cast<int32_t>(sp.context));
  }
  const std::vector<uint16_t> k = randomHalf(static_cast<size_t>(numBlocks * bs * hkv * dim), rng,
                                             2.0f),
                              v = randomHalf(k.size(), rng),
                              qkv = randomHalf(
                                  static_cast<size_t>(tokens * (hq + 2 * hkv) * dim), rng, 2.0f);
  StepBatch batch{slots.data(), seqStarts.data(), contextLens.data(), tables.data(), maxBlocks};
  std::vector<uint16_t> outs[2];
  for (int run = 0; run < 2; ++run) {
    detail::setDotBlockPathLimit(run == 0 ? detail::DotBlockPath::Portable
                                          : detail::DotBlockPath::Avx512Vbmi);
    std::vector<uint16_t> kc = k, vc = v;
    outs[run].assign(static_cast<size_t>(tokens * hq * dim), 0);
    ThreadPool pool(2);
    attention({tokens, seqs, hq, hkv, dim}, qkv.data(), batch,
              {kc.data(), vc.data(), numBlocks, bs}, outs[run].data(), pool);
  }
  detail::setDotBlockPathLimit(detail::DotBlockPath::Avx512Vbmi);
  for (size_t i = 0; i < outs[0].size(); ++i)
    ASSERT_EQ(outs[1][i], outs[0][i]) << "element " << i << " of " << outs[0].size();
}

TEST(Attention, NegativeSlotsAreNotWritten) {
  std::mt19937 rng(41);
  const int64_t dim = 16, bs = 4;
  std::vector<uint16_t> qkv = randomHalf(3 * dim, rng);
  std::vector<uint16_t> kCache = randomHalf(2 * bs * dim, rng),
                        vCache = randomHalf(kCache.size(), rng);
  std::vector<uint16_t> kBefore = kCache, vBefore = vCache;
  std::vector<int32_t> slots = {-1}, starts = {0, 1}, lens = {1}, table = {1};
  // The token attends to position 0, which stays the cache's old value.
  std::vector<uint16_t> out(dim);
  ThreadPool pool(1);
  attention({1, 1, 1, 1, dim}, qkv.data(),
            {slots.data(), starts.data(), lens.data(), table.data(), 1},
            {kCache.data(), vCache.data(), 2, bs}, out.data(), pool);
  EXPECT_EQ(kCache, kBefore);
  EXPECT_EQ(vCache, vBefore);
  // A single position: softmax weight 1, the output is that V row.
  for (int64_t d = 0; d < dim; ++d)
    EXPECT_EQ(out[static_cast<size_t>(d)], vCache[static_cast<size_t>(bs * dim + d)]);
}

} // namespace
} // namespace volt::cpu
