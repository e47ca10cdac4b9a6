//===- Bpe.h - the byte-pair-encoding model --------------------*- C++ -*-===//
//
// Hugging Face's BPE model: a vocabulary, ranked merges, optional byte
// fallback (`<0xAB>` tokens) and unknown-token fusing, `ignore_merges`
// (a whole word in the vocabulary is one token). Words are merged with a
// priority queue over a linked list of symbols, O(n log n) in the word's
// length, and results for short words are cached.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"
#include "runtime/tokenizer/Pipeline.h"

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace volt::tok {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};
using Vocab = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct BpeOptions {
  std::string unkToken; // empty: none
  bool fuseUnk = false;
  bool byteFallback = false;
  bool ignoreMerges = false;
  std::string continuingSubwordPrefix;
  std::string endOfWordSuffix;
};

/// The largest token id a BPE vocabulary may use (2^22 - 1).
inline constexpr int32_t kMaxTokenId = (1 << 22) - 1;

class BpeModel {
public:
  /// `merges` are (left, right) token strings in rank order. The error says
  /// which merge (by index) names a token outside the vocabulary.
  static Result<std::unique_ptr<BpeModel>>
  create(Vocab vocab, const std::vector<std::pair<std::string, std::string>> &merges,
         BpeOptions options);

  /// Appends the ids of `piece` (one pre-tokenized word) to `out`.
  void tokenize(const Piece &piece, std::vector<int32_t> &out) const;

  const Vocab &vocab() const { return vocab_; }
  /// The token of `id`, or null.
  const std::string *idToToken(int32_t id) const {
    return id >= 0 && static_cast<size_t>(id) < idToToken_.size() && hasId_[id] ? &idToToken_[id]
                                                                                : nullptr;
  }
  size_t idLimit() const { return idToToken_.size(); }

private:
  struct Symbol {
    int32_t id;
    int32_t prev, next;
    uint32_t len; // bytes of the word this symbol covers; 0 once merged away
  };
  struct MergeSlot {
    uint64_t key;
    int32_t rank;
    int32_t newId;
  };

  BpeModel() = default;
  /// (rank, new id) of merging `a` then `b`, or rank -1.
  std::pair<int32_t, int32_t> findMerge(int32_t a, int32_t b) const;
  void insertMerge(int32_t a, int32_t b, int32_t rank, int32_t newId);
  void initialSymbols(const Piece &piece, std::vector<Symbol> &symbols) const;
  void mergeAll(std::vector<Symbol> &symbols) const;
  void tokenizeUncached(const Piece &piece, std::vector<int32_t> &out) const;

  Vocab vocab_;
  std::vector<std::string> idToToken_;
  std::vector<bool> hasId_;
  std::vector<MergeSlot> mergeTable_; // open addressing, power-of-two size
  size_t mergeMask_ = 0;
  BpeOptions options_;
  int32_t unkId_ = -1;
  std::array<int32_t, 256> byteToken_; // `<0xAB>` ids, -1 when absent
  std::array<int32_t, 256>
      byteLevelChar_; // id of the alphabet character of each byte, -1 when absent

  static constexpr size_t kCacheShards = 16;
  static constexpr size_t kCacheShardEntries = 8192;
  static constexpr size_t kMaxCachedWord = 256;
  struct CacheShard {
    std::mutex mutex;
    std::unordered_map<std::string, std::vector<int32_t>> map;
  };
  mutable std::array<CacheShard, kCacheShards> cache_;
};

} // namespace volt::tok
