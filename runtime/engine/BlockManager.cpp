//===- BlockManager.cpp - paged KV-cache blocks and prefix cache ----------===//
#include "runtime/engine/BlockManager.h"

#include <algorithm>
#include <cassert>
#include <string>

namespace volt::engine {

namespace {

// SplitMix64's finalizer: every input bit affects every output bit.
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

} // namespace

BlockHash hashBlock(BlockHash parent, std::span<const int32_t> tokens) {
  uint64_t h = mix64(parent ^ (0x9e3779b97f4a7c15ULL * (tokens.size() + 1)));
  for (int32_t t : tokens)
    h = mix64(h + 0x9e3779b97f4a7c15ULL + static_cast<uint32_t>(t));
  return h;
}

BlockManager::BlockManager(int32_t numBlocks, int32_t blockSize, bool enablePrefixCaching)
    : numBlocks_(numBlocks), blockSize_(blockSize), prefixCaching_(enablePrefixCaching),
      blocks_(numBlocks) {
  assert(numBlocks > 0 && blockSize > 0);
  for (BlockId b = 0; b < numBlocks; ++b)
    pushFreeBack(b);
  if (prefixCaching_)
    cachedTokens_.assign(size_t(numBlocks) * blockSize, 0);
}

void BlockManager::pushFreeBack(BlockId b) {
  Block &blk = blocks_[b];
  assert(!blk.inFreeQueue);
  blk.inFreeQueue = true;
  blk.prev = freeTail_;
  blk.next = -1;
  if (freeTail_ >= 0)
    blocks_[freeTail_].next = b;
  else
    freeHead_ = b;
  freeTail_ = b;
  ++freeCount_;
}

void BlockManager::removeFree(BlockId b) {
  Block &blk = blocks_[b];
  assert(blk.inFreeQueue);
  if (blk.prev >= 0)
    blocks_[blk.prev].next = blk.next;
  else
    freeHead_ = blk.next;
  if (blk.next >= 0)
    blocks_[blk.next].prev = blk.prev;
  else
    freeTail_ = blk.prev;
  blk.prev = blk.next = -1;
  blk.inFreeQueue = false;
  --freeCount_;
}

void BlockManager::uncache(BlockId b) {
  Block &blk = blocks_[b];
  if (!blk.cached)
    return;
  auto it = cache_.find(blk.hash);
  assert(it != cache_.end() && it->second == b);
  cache_.erase(it);
  blk.cached = false;
}

std::vector<BlockId> BlockManager::findCachedPrefix(std::span<const BlockHash> hashes,
                                                    std::span<const int32_t> tokens) const {
  std::vector<BlockId> hits;
  if (!prefixCaching_)
    return hits;
  assert(tokens.size() >= hashes.size() * size_t(blockSize_));
  BlockHash parent = kRootBlockHash;
  for (size_t i = 0; i < hashes.size(); ++i) {
    auto it = cache_.find(hashes[i]);
    if (it == cache_.end())
      break;
    const Block &blk = blocks_[it->second];
    // The tokens and the parent are compared too, so that a 64-bit hash
    // collision within one block never serves another prefix's keys.
    auto have = std::span(cachedTokens_).subspan(size_t(it->second) * blockSize_, blockSize_);
    auto want = tokens.subspan(i * blockSize_, blockSize_);
    if (blk.parent != parent || !std::equal(have.begin(), have.end(), want.begin()))
      break;
    hits.push_back(it->second);
    parent = hashes[i];
  }
  return hits;
}

int32_t BlockManager::countUnreferenced(std::span<const BlockId> blocks) const {
  int32_t n = 0;
  for (BlockId b : blocks)
    n += blocks_[b].refCount == 0;
  return n;
}

void BlockManager::acquire(std::span<const BlockId> blocks) {
  for (BlockId b : blocks) {
    Block &blk = blocks_[b];
    if (blk.refCount++ == 0)
      removeFree(b);
  }
}

void BlockManager::allocate(int32_t n, std::vector<BlockId> &out) {
  assert(n <= freeCount_);
  for (int32_t i = 0; i < n; ++i) {
    BlockId b = freeHead_;
    removeFree(b);
    uncache(b); // evicted: its contents are about to be overwritten
    blocks_[b].refCount = 1;
    out.push_back(b);
  }
}

void BlockManager::release(std::span<const BlockId> blockTable) {
  for (auto it = blockTable.rbegin(); it != blockTable.rend(); ++it) {
    Block &blk = blocks_[*it];
    assert(blk.refCount > 0);
    if (--blk.refCount == 0)
      pushFreeBack(*it);
  }
}

void BlockManager::cacheBlock(BlockId block, BlockHash hash, BlockHash parent,
                              std::span<const int32_t> tokens) {
  if (!prefixCaching_)
    return;
  Block &blk = blocks_[block];
  assert(blk.refCount > 0 && tokens.size() == size_t(blockSize_));
  if (blk.cached || cache_.count(hash))
    return;
  cache_.emplace(hash, block);
  blk.cached = true;
  blk.hash = hash;
  blk.parent = parent;
  std::copy(tokens.begin(), tokens.end(), cachedTokens_.begin() + size_t(block) * blockSize_);
}

Status BlockManager::resetPrefixCache() {
  if (freeCount_ != numBlocks_)
    return Error("cannot reset the prefix cache while " + std::to_string(numBlocks_ - freeCount_) +
                 " blocks are in use");
  for (Block &blk : blocks_)
    blk.cached = false;
  cache_.clear();
  return Status::success();
}

BlockStats BlockManager::stats() const {
  BlockStats s;
  s.numBlocks = numBlocks_;
  s.freeBlocks = freeCount_;
  s.usedBlocks = numBlocks_ - freeCount_;
  s.cachedBlocks = static_cast<int32_t>(cache_.size());
  s.usage = double(s.usedBlocks) / double(numBlocks_);
  return s;
}

Status BlockManager::checkInvariants() const {
  int32_t walked = 0;
  BlockId prev = -1;
  for (BlockId b = freeHead_; b >= 0; b = blocks_[b].next) {
    const Block &blk = blocks_[b];
    if (!blk.inFreeQueue || blk.refCount != 0 || blk.prev != prev)
      return Error("free queue: block " + std::to_string(b) + " is linked inconsistently");
    prev = b;
    if (++walked > numBlocks_)
      return Error("free queue: cycle");
  }
  if (prev != freeTail_ || walked != freeCount_)
    return Error("free queue: counted " + std::to_string(walked) + " blocks, expected " +
                 std::to_string(freeCount_));
  int32_t cached = 0;
  for (BlockId b = 0; b < numBlocks_; ++b) {
    const Block &blk = blocks_[b];
    if (blk.refCount < 0 || (blk.refCount == 0) != blk.inFreeQueue)
      return Error("block " + std::to_string(b) + ": reference count " +
                   std::to_string(blk.refCount) + " disagrees with its free-queue membership");
    if (blk.cached) {
      ++cached;
      auto it = cache_.find(blk.hash);
      if (it == cache_.end() || it->second != b)
        return Error("block " + std::to_string(b) + ": cached but not in the hash map");
    }
  }
  if (cached != int32_t(cache_.size()))
    return Error("hash map holds " + std::to_string(cache_.size()) + " blocks, " +
                 std::to_string(cached) + " are marked cached");
  return Status::success();
}

} // namespace volt::engine
