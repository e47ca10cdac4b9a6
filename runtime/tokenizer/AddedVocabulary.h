//===- AddedVocabulary.h - added and special tokens ------------*- C++ -*-===//
//
// Tokens listed in tokenizer.json's `added_tokens` are found in the text
// before anything else runs, leftmost-longest, as HF's AddedVocabulary does:
// tokens with `normalized: false` in the raw text, the others in the
// normalized text; `single_word`, `lstrip` and `rstrip` apply at the match.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/tokenizer/Pipeline.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace volt::tok {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool singleWord = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
};

/// A stretch of a string: an added token (`id >= 0`) or text (`id == -1`).
struct Segment {
  int32_t id;
  size_t begin, end;
};

class AddedTokenMatcher {
public:
  AddedTokenMatcher() = default;
  /// Matches `tokens[i]` by `patterns[i]` (its content, or its normalized
  /// content for tokens matched after normalization).
  AddedTokenMatcher(std::vector<AddedToken> tokens, const std::vector<std::string> &patterns);

  /// Splits `text` into text and token segments, in order, covering it.
  void split(std::string_view text, std::vector<Segment> &out) const;
  bool empty() const { return tokens_.empty(); }

private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children; // sorted by byte
    int32_t token = -1;
  };
  int32_t child(int32_t node, uint8_t byte) const;
  /// The longest token starting at `text[pos]`: (token index, end), or -1.
  std::pair<int32_t, size_t> longestAt(std::string_view text, size_t pos) const;

  std::vector<AddedToken> tokens_;
  std::vector<Node> nodes_;
  bool firstByte_[256] = {};
};

} // namespace volt::tok
