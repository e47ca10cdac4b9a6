//===- AddedVocabulary.cpp - added and special tokens --------------------===//
#include "runtime/tokenizer/AddedVocabulary.h"

#include <algorithm>

namespace volt::tok {

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens,
                                     const std::vector<std::string> &patterns)
    : tokens_(std::move(tokens)) {
  nodes_.emplace_back();
  for (size_t t = 0; t < tokens_.size(); ++t) {
    const std::string &p = patterns[t];
    if (p.empty())
      continue;
    firstByte_[static_cast<uint8_t>(p[0])] = true;
    int32_t node = 0;
    for (unsigned char b : p) {
      int32_t next = child(node, b);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        auto &kids = nodes_[node].children;
        kids.insert(std::lower_bound(kids.begin(), kids.end(), std::make_pair(b, int32_t(-1))),
                    std::make_pair(b, next));
        nodes_.emplace_back();
      }
      node = next;
    }
    // The first token with a given pattern keeps it.
    if (nodes_[node].token < 0)
      nodes_[node].token = static_cast<int32_t>(t);
  }
}

int32_t AddedTokenMatcher::child(int32_t node, uint8_t byte) const {
  const auto &kids = nodes_[node].children;
  auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(byte, int32_t(-1)));
  return it != kids.end() && it->first == byte ? it->second : -1;
}

std::pair<int32_t, size_t> AddedTokenMatcher::longestAt(std::string_view text, size_t pos) const {
  int32_t node = 0, best = -1;
  size_t bestEnd = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    node = child(node, static_cast<uint8_t>(text[i]));
    if (node < 0)
      break;
    if (nodes_[node].token >= 0) {
      best = nodes_[node].token;
      bestEnd = i + 1;
    }
  }
  return {best, bestEnd};
}

namespace {

/// The code point that ends at byte `end` (exclusive) of valid UTF-8 `s`.
char32_t lastChar(std::string_view s, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80)
    --start;
  return decodeUtf8(s, start).cp;
}

} // namespace

void AddedTokenMatcher::split(std::string_view text, std::vector<Segment> &out) const {
  size_t start = 0; // end of the previous segment
  size_t pos = 0;
  while (pos < text.size()) {
    if (!firstByte_[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    auto [t, matchEnd] = longestAt(text, pos);
    if (t < 0) {
      ++pos;
      continue;
    }
    const AddedToken &tok = tokens_[t];
    size_t b = pos, e = matchEnd;
    pos = matchEnd; // matches never overlap, whatever happens to this one
    if (tok.singleWord) {
      bool wordBefore = b > 0 && isWordChar(lastChar(text, b));
      bool wordAfter = e < text.size() && isWordChar(decodeUtf8(text, e).cp);
      if (wordBefore || wordAfter)
        continue;
    }
    if (tok.lstrip) {
      size_t s = b;
      while (s > 0) {
        size_t prev = s - 1;
        while (prev > 0 && (static_cast<uint8_t>(text[prev]) & 0xC0) == 0x80)
          --prev;
        if (!isWhiteSpace(decodeUtf8(text, prev).cp))
          break;
        s = prev;
      }
      b = std::max(s, start);
    }
    if (tok.rstrip) {
      while (e < text.size()) {
        Utf8Char c = decodeUtf8(text, e);
        if (!isWhiteSpace(c.cp))
          break;
        e += c.len;
      }
    }
    if (start < b)
      out.push_back({-1, start, b});
    out.push_back({tok.id, b, e});
    start = e;
  }
  if (start < text.size())
    out.push_back({-1, start, text.size()});
}

} // namespace volt::tok
