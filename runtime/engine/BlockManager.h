//===- BlockManager.h - paged KV-cache blocks and prefix cache -*- C++ -*-===//
//
// The KV cache is a pool of fixed-size blocks; a sequence holds a block
// table (its blocks in order), so memory is given out one block at a time
// and returned whole, without fragmentation. Blocks carry reference counts
// because, with prefix caching, sequences that start with the same tokens
// share the blocks of that prefix.
//
// Prefix caching: a full, computed block is registered under the hash of
// its tokens chained with its parent block's hash, so that a hash names a
// whole prefix. A block whose last reference is dropped keeps its contents
// and stays findable until the free queue hands it out again; the free
// queue is least-recently-freed first, which makes it an LRU over cached
// blocks.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace volt::engine {

using BlockId = int32_t;
using BlockHash = uint64_t;

/// The hash of the block before the first one.
inline constexpr BlockHash kRootBlockHash = 0x6a09e667f3bcc908ULL;

/// Hash of a full block: its token ids chained with its parent's hash.
BlockHash hashBlock(BlockHash parent, std::span<const int32_t> tokens);

/// A snapshot of the pool for metrics.
struct BlockStats {
  int32_t numBlocks = 0;
  /// Blocks some sequence holds.
  int32_t usedBlocks = 0;
  /// Blocks registered in the prefix cache (held or not).
  int32_t cachedBlocks = 0;
  /// Blocks that can be handed out (free, including evictable cached ones).
  int32_t freeBlocks = 0;
  /// usedBlocks / numBlocks.
  double usage = 0;
};

/// The block pool. Not thread-safe: the scheduler owns it.
class BlockManager {
public:
  BlockManager(int32_t numBlocks, int32_t blockSize, bool enablePrefixCaching);

  int32_t numBlocks() const { return numBlocks_; }
  int32_t blockSize() const { return blockSize_; }
  bool prefixCachingEnabled() const { return prefixCaching_; }

  /// Blocks `allocate` can hand out now (free ones, cached or not).
  int32_t numFreeBlocks() const { return freeCount_; }

  /// The cached blocks holding the longest prefix of a sequence's full
  /// blocks: `hashes[i]` is the chained hash of block i and `tokens` the
  /// sequence's tokens (at least hashes.size() * block_size). Takes no
  /// references; empty when prefix caching is off.
  std::vector<BlockId> findCachedPrefix(std::span<const BlockHash> hashes,
                                        std::span<const int32_t> tokens) const;

  /// How many of `blocks` nobody holds (taking them uses up free blocks).
  int32_t countUnreferenced(std::span<const BlockId> blocks) const;

  /// Takes one reference on each of `blocks` (prefix-cache hits).
  void acquire(std::span<const BlockId> blocks);

  /// Appends `n` blocks with one reference each to `out`, evicting the
  /// least recently freed cached blocks first. The caller checks
  /// `numFreeBlocks() >= n`.
  void allocate(int32_t n, std::vector<BlockId> &out);

  /// Drops one reference of each block of a block table. Blocks left
  /// unreferenced join the free queue last block first, so that the tails
  /// of sequences are evicted before the prefixes they share.
  void release(std::span<const BlockId> blockTable);

  /// Registers a held, full, computed block under `hash`; `tokens` are its
  /// block_size token ids and `parent` the hash it was chained from. A
  /// block already cached under `hash` wins: this one stays uncached.
  void cacheBlock(BlockId block, BlockHash hash, BlockHash parent, std::span<const int32_t> tokens);

  /// Forgets every cached block. Fails (and changes nothing) while any
  /// block is held, as vLLM's reset does.
  Status resetPrefixCache();

  int32_t refCount(BlockId block) const { return blocks_[block].refCount; }
  BlockStats stats() const;

  /// Checks the pool's internal consistency (free queue, counts, cache
  /// map); for tests.
  Status checkInvariants() const;

private:
  struct Block {
    int32_t refCount = 0;
    bool inFreeQueue = false;
    bool cached = false;
    BlockId prev = -1; // free-queue links
    BlockId next = -1;
    BlockHash hash = 0;
    BlockHash parent = 0;
  };

  void pushFreeBack(BlockId b);
  void removeFree(BlockId b);
  void uncache(BlockId b);

  int32_t numBlocks_;
  int32_t blockSize_;
  bool prefixCaching_;
  std::vector<Block> blocks_;
  BlockId freeHead_ = -1; // evicted first
  BlockId freeTail_ = -1;
  int32_t freeCount_ = 0;
  std::unordered_map<BlockHash, BlockId> cache_;
  std::vector<int32_t> cachedTokens_; // block_size ids per cached block
};

} // namespace volt::engine
