//===- Bpe.cpp - the byte-pair-encoding model ----------------------------===//
#include "runtime/tokenizer/Bpe.h"

#include <cstdio>
#include <queue>

namespace volt::tok {

namespace {
uint64_t pairKey(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}
uint64_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return k;
}
constexpr uint64_t kEmptyKey = ~0ULL;
} // namespace

Result<std::unique_ptr<BpeModel>>
BpeModel::create(Vocab vocab, const std::vector<std::pair<std::string, std::string>> &merges,
                 BpeOptions options) {
  std::unique_ptr<BpeModel> m(new BpeModel());
  int32_t maxId = -1;
  for (const auto &[token, id] : vocab) {
    if (id < 0)
      return Error("model.vocab: token '" + token + "' has negative id " + std::to_string(id));
    // Ids index a table, so an absurd one would allocate gigabytes: far
    // above any real vocabulary (the largest are ~262k), and refused.
    if (id > kMaxTokenId)
      return Error("model.vocab: token '" + token + "' has id " + std::to_string(id) +
                   ", above the largest supported id " + std::to_string(kMaxTokenId));
    maxId = std::max(maxId, id);
  }
  m->idToToken_.resize(static_cast<size_t>(maxId + 1));
  m->hasId_.assign(static_cast<size_t>(maxId + 1), false);
  for (const auto &[token, id] : vocab) {
    m->idToToken_[id] = token;
    m->hasId_[id] = true;
  }
  m->vocab_ = std::move(vocab);
  m->options_ = std::move(options);
  if (!m->options_.unkToken.empty()) {
    auto it = m->vocab_.find(m->options_.unkToken);
    if (it == m->vocab_.end())
      return Error("model.unk_token: '" + m->options_.unkToken + "' is not in model.vocab");
    m->unkId_ = it->second;
  }

  size_t cap = 16;
  while (cap < merges.size() * 2)
    cap <<= 1;
  m->mergeTable_.assign(cap, MergeSlot{kEmptyKey, -1, -1});
  m->mergeMask_ = cap - 1;
  const std::string &prefix = m->options_.continuingSubwordPrefix;
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto &[a, b] = merges[i];
    auto ia = m->vocab_.find(a);
    auto ib = m->vocab_.find(b);
    std::string joined =
        a +
        (prefix.size() && b.compare(0, prefix.size(), prefix) == 0 ? b.substr(prefix.size()) : b);
    auto ij = m->vocab_.find(joined);
    std::string where = "model.merges[" + std::to_string(i) + "]";
    if (ia == m->vocab_.end())
      return Error(where + ": token '" + a + "' is not in model.vocab");
    if (ib == m->vocab_.end())
      return Error(where + ": token '" + b + "' is not in model.vocab");
    if (ij == m->vocab_.end())
      return Error(where + ": merged token '" + joined + "' is not in model.vocab");
    // A repeated pair takes its last rank, as a later map insert wins.
    m->insertMerge(ia->second, ib->second, static_cast<int32_t>(i), ij->second);
  }

  const ByteLevelAlphabet &alphabet = byteLevelAlphabet();
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    auto it = m->vocab_.find(std::string_view(name));
    m->byteToken_[b] = it == m->vocab_.end() ? -1 : it->second;
    auto ic = m->vocab_.find(alphabet.byteToUtf8[b]);
    m->byteLevelChar_[b] = ic == m->vocab_.end() ? -1 : ic->second;
  }
  return m;
}

void BpeModel::insertMerge(int32_t a, int32_t b, int32_t rank, int32_t newId) {
  uint64_t key = pairKey(a, b);
  size_t i = mix(key) & mergeMask_;
  while (mergeTable_[i].key != kEmptyKey && mergeTable_[i].key != key)
    i = (i + 1) & mergeMask_;
  mergeTable_[i] = MergeSlot{key, rank, newId};
}

std::pair<int32_t, int32_t> BpeModel::findMerge(int32_t a, int32_t b) const {
  uint64_t key = pairKey(a, b);
  size_t i = mix(key) & mergeMask_;
  while (true) {
    const MergeSlot &s = mergeTable_[i];
    if (s.key == key)
      return {s.rank, s.newId};
    if (s.key == kEmptyKey)
      return {-1, -1};
    i = (i + 1) & mergeMask_;
  }
}

void BpeModel::initialSymbols(const Piece &piece, std::vector<Symbol> &symbols) const {
  const std::string &w = piece.text;
  auto push = [&](int32_t id, uint32_t len) {
    int32_t n = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{id, n - 1, n + 1, len});
  };
  bool simple = options_.continuingSubwordPrefix.empty() && options_.endOfWordSuffix.empty();
  if (piece.byteMapped && simple) {
    bool complete = true;
    for (unsigned char b : w)
      complete &= byteLevelChar_[b] >= 0;
    if (complete) {
      for (unsigned char b : w)
        push(byteLevelChar_[b], 1);
      return;
    }
  }
  Piece local;
  const std::string *text = &w;
  if (piece.byteMapped) {
    local = piece;
    materialize(local);
    text = &local.text;
  }
  // Per character: its token, else its bytes' `<0xAB>` tokens, else the
  // unknown token (fused with a preceding unknown when asked).
  int32_t pendingUnk = -1;
  uint32_t pendingUnkLen = 0;
  std::string key;
  for (size_t i = 0; i < text->size();) {
    uint32_t len = std::min<uint32_t>(utf8Length(static_cast<uint8_t>((*text)[i])),
                                      static_cast<uint32_t>(text->size() - i));
    std::string_view ch(text->data() + i, len);
    bool first = i == 0, last = i + len == text->size();
    std::string_view lookup = ch;
    if (!simple) {
      key.clear();
      if (!first)
        key += options_.continuingSubwordPrefix;
      key += ch;
      if (last)
        key += options_.endOfWordSuffix;
      lookup = key;
    }
    i += len;
    auto it = vocab_.find(lookup);
    if (it != vocab_.end()) {
      if (pendingUnk >= 0) {
        push(pendingUnk, pendingUnkLen);
        pendingUnk = -1;
      }
      push(it->second, len);
      continue;
    }
    if (options_.byteFallback) {
      bool all = true;
      for (unsigned char b : lookup)
        all &= byteToken_[b] >= 0;
      if (all) {
        for (unsigned char b : lookup)
          push(byteToken_[b], 1);
        continue;
      }
    }
    if (unkId_ >= 0) {
      if (pendingUnk >= 0 && options_.fuseUnk) {
        pendingUnkLen += len;
      } else {
        if (pendingUnk >= 0)
          push(pendingUnk, pendingUnkLen);
        pendingUnk = unkId_;
        pendingUnkLen = len;
      }
    }
    // Without an unknown token the character is dropped, as HF does.
  }
  if (pendingUnk >= 0)
    push(pendingUnk, pendingUnkLen);
}

void BpeModel::mergeAll(std::vector<Symbol> &symbols) const {
  if (symbols.size() < 2)
    return;
  symbols.back().next = -1;
  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t newId;
    bool operator<(const Candidate &o) const {
      // std::priority_queue pops the largest: lowest rank, then leftmost.
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::vector<Candidate> heap;
  heap.reserve(symbols.size());
  for (size_t i = 0; i + 1 < symbols.size(); ++i) {
    auto [rank, newId] = findMerge(symbols[i].id, symbols[i + 1].id);
    if (rank >= 0)
      heap.push_back({rank, static_cast<int32_t>(i), newId});
  }
  std::priority_queue<Candidate> queue(std::less<Candidate>(), std::move(heap));
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol &cur = symbols[top.pos];
    if (cur.len == 0 || cur.next < 0)
      continue;
    Symbol &right = symbols[cur.next];
    // Skip stale entries: the pair at this position changed since.
    auto [rank, newId] = findMerge(cur.id, right.id);
    if (rank < 0 || newId != top.newId)
      continue;
    cur.id = top.newId;
    cur.len += right.len;
    right.len = 0;
    cur.next = right.next;
    if (cur.next >= 0)
      symbols[cur.next].prev = top.pos;
    if (cur.prev >= 0) {
      auto [r, id] = findMerge(symbols[cur.prev].id, cur.id);
      if (r >= 0)
        queue.push({r, cur.prev, id});
    }
    if (cur.next >= 0) {
      auto [r, id] = findMerge(cur.id, symbols[cur.next].id);
      if (r >= 0)
        queue.push({r, top.pos, id});
    }
  }
}

void BpeModel::tokenizeUncached(const Piece &piece, std::vector<int32_t> &out) const {
  if (options_.ignoreMerges) {
    Piece mapped = piece;
    materialize(mapped);
    auto it = vocab_.find(mapped.text);
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  thread_local std::vector<Symbol> symbols;
  symbols.clear();
  initialSymbols(piece, symbols);
  mergeAll(symbols);
  for (const Symbol &s : symbols)
    if (s.len != 0)
      out.push_back(s.id);
}

void BpeModel::tokenize(const Piece &piece, std::vector<int32_t> &out) const {
  if (piece.text.empty())
    return;
  if (piece.text.size() > kMaxCachedWord) {
    tokenizeUncached(piece, out);
    return;
  }
  thread_local std::string key;
  key.assign(1, piece.byteMapped ? '\1' : '\0');
  key += piece.text;
  size_t h = std::hash<std::string>()(key);
  CacheShard &shard = cache_[h % kCacheShards];
  {
    std::lock_guard<std::mutex> lock(shard.mutex);
    auto it = shard.map.find(key);
    if (it != shard.map.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  size_t before = out.size();
  tokenizeUncached(piece, out);
  std::vector<int32_t> ids(out.begin() + static_cast<ptrdiff_t>(before), out.end());
  std::lock_guard<std::mutex> lock(shard.mutex);
  if (shard.map.size() >= kCacheShardEntries)
    shard.map.clear();
  shard.map.emplace(key, std::move(ids));
}

} // namespace volt::tok
