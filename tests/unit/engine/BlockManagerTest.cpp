//===- BlockManagerTest.cpp - paged blocks, reference counts, prefix cache ===//
#include "runtime/engine/BlockManager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

namespace volt::engine {
namespace {

std::vector<int32_t> iota(int32_t n, int32_t start = 0) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

// Hashes of the full blocks of `tokens`.
std::vector<BlockHash> chain(std::span<const int32_t> tokens, int32_t bs) {
  std::vector<BlockHash> out;
  BlockHash parent = kRootBlockHash;
  for (size_t b = 0; (b + 1) * bs <= tokens.size(); ++b) {
    parent = hashBlock(parent, tokens.subspan(b * bs, bs));
    out.push_back(parent);
  }
  return out;
}

// Registers the blocks of `table` (holding `tokens`) in the prefix cache.
void cacheAll(BlockManager &bm, const std::vector<BlockId> &table,
              std::span<const int32_t> tokens) {
  auto hashes = chain(tokens, bm.blockSize());
  for (size_t b = 0; b < hashes.size(); ++b)
    bm.cacheBlock(table[b], hashes[b], b == 0 ? kRootBlockHash : hashes[b - 1],
                  tokens.subspan(b * bm.blockSize(), bm.blockSize()));
}

TEST(BlockManager, AllocatesEveryBlockOnceAndTakesThemBack) {
  BlockManager bm(8, 4, false);
  std::vector<BlockId> a, b;
  bm.allocate(5, a);
  bm.allocate(3, b);
  EXPECT_EQ(bm.numFreeBlocks(), 0);
  std::vector<BlockId> all = a;
  all.insert(all.end(), b.begin(), b.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, iota(8));
  EXPECT_EQ(bm.stats().usedBlocks, 8);
  EXPECT_DOUBLE_EQ(bm.stats().usage, 1.0);
  bm.release(a);
  EXPECT_EQ(bm.numFreeBlocks(), 5);
  bm.release(b);
  EXPECT_EQ(bm.numFreeBlocks(), 8);
  EXPECT_EQ(bm.stats().usedBlocks, 0);
  EXPECT_TRUE(bm.checkInvariants().ok());
}

TEST(BlockManager, RandomWorkloadLeaksNothing) {
  for (bool caching : {false, true}) {
    const int32_t numBlocks = 64, bs = 4;
    BlockManager bm(numBlocks, bs, caching);
    std::mt19937 rng(caching ? 7 : 11);
    struct Seq {
      std::vector<int32_t> tokens;
      std::vector<BlockId> table;
    };
    std::vector<Seq> live;
    for (int iter = 0; iter < 5000; ++iter) {
      if (live.empty() || rng() % 3 != 0) {
        // A new sequence from a small alphabet of prefixes, so that hits happen.
        Seq s;
        int32_t len = 1 + rng() % 24;
        int32_t prefix = rng() % 4;
        for (int32_t i = 0; i < len; ++i)
          s.tokens.push_back(i < 8 ? prefix * 100 + i : int32_t(rng() % 50));
        auto hashes = chain(s.tokens, bs);
        std::vector<BlockId> hits = bm.findCachedPrefix(hashes, s.tokens);
        int32_t needed = (len + bs - 1) / bs - int32_t(hits.size());
        if (needed > bm.numFreeBlocks() - bm.countUnreferenced(hits))
          continue;
        bm.acquire(hits);
        s.table = hits;
        bm.allocate(needed, s.table);
        cacheAll(bm, s.table, s.tokens);
        live.push_back(std::move(s));
      } else {
        size_t victim = rng() % live.size();
        bm.release(live[victim].table);
        live.erase(live.begin() + victim);
      }
      ASSERT_TRUE(bm.checkInvariants().ok()) << bm.checkInvariants().message();
      // Reference counts equal the number of tables holding each block.
      std::vector<int32_t> holders(numBlocks, 0);
      for (const Seq &s : live)
        for (BlockId b : s.table)
          ++holders[b];
      for (BlockId b = 0; b < numBlocks; ++b)
        ASSERT_EQ(bm.refCount(b), holders[b]) << "block " << b;
    }
    for (const Seq &s : live)
      bm.release(s.table);
    EXPECT_EQ(bm.numFreeBlocks(), numBlocks);
    EXPECT_EQ(bm.stats().usedBlocks, 0);
    EXPECT_TRUE(bm.checkInvariants().ok());
  }
}

TEST(BlockManager, PrefixHitSharesBlocks) {
  BlockManager bm(10, 4, true);
  std::vector<int32_t> tokens = iota(10); // 2 full blocks + 2 tokens
  std::vector<BlockId> a;
  bm.allocate(3, a);
  cacheAll(bm, a, tokens);
  EXPECT_EQ(bm.stats().cachedBlocks, 2);

  std::vector<int32_t> other = iota(8);
  other.push_back(99);
  auto hits = bm.findCachedPrefix(chain(other, 4), other);
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0], a[0]);
  EXPECT_EQ(hits[1], a[1]);
  EXPECT_EQ(bm.countUnreferenced(hits), 0);
  bm.acquire(hits);
  EXPECT_EQ(bm.refCount(a[0]), 2);
  EXPECT_EQ(bm.stats().usedBlocks, 3);
  bm.release(a);
  EXPECT_EQ(bm.refCount(a[0]), 1);
  EXPECT_EQ(bm.refCount(a[2]), 0);
  bm.release(hits);
  EXPECT_EQ(bm.numFreeBlocks(), 10);
  // Freed, but still cached: a later sequence finds them unreferenced.
  hits = bm.findCachedPrefix(chain(other, 4), other);
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(bm.countUnreferenced(hits), 2);
  EXPECT_TRUE(bm.checkInvariants().ok());
}

TEST(BlockManager, PrefixMatchStopsAtFirstDifferentBlock) {
  BlockManager bm(10, 4, true);
  std::vector<int32_t> tokens = iota(12);
  std::vector<BlockId> a;
  bm.allocate(3, a);
  cacheAll(bm, a, tokens);
  std::vector<int32_t> other = tokens;
  other[5] = 77; // second block differs, so does everything chained after it
  auto hits = bm.findCachedPrefix(chain(other, 4), other);
  EXPECT_EQ(hits, std::vector<BlockId>{a[0]});
}

TEST(BlockManager, HashCollisionIsNotAHit) {
  BlockManager bm(4, 2, true);
  std::vector<BlockId> a;
  bm.allocate(1, a);
  std::vector<int32_t> tokens = {1, 2};
  BlockHash h = hashBlock(kRootBlockHash, tokens);
  bm.cacheBlock(a[0], h, kRootBlockHash, tokens);
  // Same hash, other tokens: as if two blocks collided.
  std::vector<BlockHash> hashes = {h};
  std::vector<int32_t> other = {1, 3};
  EXPECT_TRUE(bm.findCachedPrefix(hashes, other).empty());
  EXPECT_EQ(bm.findCachedPrefix(hashes, tokens).size(), 1u);
}

TEST(BlockManager, EvictsLeastRecentlyFreedAndTailsFirst) {
  const int32_t bs = 2;
  BlockManager bm(3, bs, true);
  std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6};
  std::vector<BlockId> a;
  bm.allocate(3, a);
  cacheAll(bm, a, tokens);
  bm.release(a);
  EXPECT_EQ(bm.stats().cachedBlocks, 3);
  // One new block evicts the sequence's last block; its prefix survives.
  std::vector<BlockId> b;
  bm.allocate(1, b);
  EXPECT_EQ(b[0], a[2]);
  EXPECT_EQ(bm.stats().cachedBlocks, 2);
  auto hits = bm.findCachedPrefix(chain(tokens, bs), tokens);
  EXPECT_EQ(hits, (std::vector<BlockId>{a[0], a[1]}));
  // Touching the first block makes it most recently used: the second goes next.
  bm.acquire(std::span(hits).first(1));
  bm.release(std::span(hits).first(1));
  std::vector<BlockId> c;
  bm.allocate(1, c);
  EXPECT_EQ(c[0], a[1]);
  EXPECT_EQ(bm.findCachedPrefix(chain(tokens, bs), tokens), std::vector<BlockId>{a[0]});
  EXPECT_TRUE(bm.checkInvariants().ok());
}

TEST(BlockManager, SameContentTwiceKeepsTheFirstBlock) {
  BlockManager bm(4, 2, true);
  std::vector<int32_t> tokens = {5, 6};
  std::vector<BlockId> a, b;
  bm.allocate(1, a);
  bm.allocate(1, b);
  BlockHash h = hashBlock(kRootBlockHash, tokens);
  bm.cacheBlock(a[0], h, kRootBlockHash, tokens);
  bm.cacheBlock(b[0], h, kRootBlockHash, tokens);
  EXPECT_EQ(bm.stats().cachedBlocks, 1);
  std::vector<BlockHash> hashes = {h};
  EXPECT_EQ(bm.findCachedPrefix(hashes, tokens), a);
  bm.release(a);
  bm.release(b);
  EXPECT_TRUE(bm.checkInvariants().ok());
}

TEST(BlockManager, ResetPrefixCacheOnlyWhenIdle) {
  BlockManager bm(4, 2, true);
  std::vector<int32_t> tokens = {5, 6};
  std::vector<BlockId> a;
  bm.allocate(1, a);
  bm.cacheBlock(a[0], hashBlock(kRootBlockHash, tokens), kRootBlockHash, tokens);
  Status s = bm.resetPrefixCache();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "cannot reset the prefix cache while 1 blocks are in use");
  bm.release(a);
  EXPECT_TRUE(bm.resetPrefixCache().ok());
  EXPECT_EQ(bm.stats().cachedBlocks, 0);
  std::vector<BlockHash> hashes = {hashBlock(kRootBlockHash, tokens)};
  EXPECT_TRUE(bm.findCachedPrefix(hashes, tokens).empty());
}

TEST(BlockManager, CachingOffNeverHits) {
  BlockManager bm(4, 2, false);
  std::vector<int32_t> tokens = {5, 6};
  std::vector<BlockId> a;
  bm.allocate(1, a);
  bm.cacheBlock(a[0], hashBlock(kRootBlockHash, tokens), kRootBlockHash, tokens);
  std::vector<BlockHash> hashes = {hashBlock(kRootBlockHash, tokens)};
  EXPECT_TRUE(bm.findCachedPrefix(hashes, tokens).empty());
  EXPECT_EQ(bm.stats().cachedBlocks, 0);
}

TEST(BlockManager, HashDependsOnParentAndOrder) {
  std::vector<int32_t> ab = {1, 2}, ba = {2, 1};
  EXPECT_NE(hashBlock(kRootBlockHash, ab), hashBlock(kRootBlockHash, ba));
  EXPECT_NE(hashBlock(kRootBlockHash, ab), hashBlock(hashBlock(kRootBlockHash, ab), ab));
  EXPECT_EQ(hashBlock(kRootBlockHash, ab), hashBlock(kRootBlockHash, ab));
}

} // namespace
} // namespace volt::engine
