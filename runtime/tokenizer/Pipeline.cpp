//===- Pipeline.cpp - normalizers and pre-tokenizers ---------------------===//
#include "runtime/tokenizer/Pipeline.h"

#include <algorithm>

namespace volt::tok {

void materialize(Piece &piece) {
  if (!piece.byteMapped)
    return;
  const ByteLevelAlphabet &alphabet = byteLevelAlphabet();
  std::string out;
  out.reserve(piece.text.size() * 2);
  for (unsigned char b : piece.text)
    out += alphabet.byteToUtf8[b];
  piece.text = std::move(out);
  piece.byteMapped = false;
}

void UnicodeNormalizer::normalize(std::string &text) const { text = normalizeUnicode(text, form_); }

void LowercaseNormalizer::normalize(std::string &text) const { text = lowercaseUnicode(text); }

void StripNormalizer::normalize(std::string &text) const {
  size_t begin = 0, end = text.size();
  if (left_) {
    while (begin < end) {
      Utf8Char c = decodeUtf8(text, begin);
      if (!isWhiteSpace(c.cp))
        break;
      begin += c.len;
    }
  }
  if (right_) {
    while (end > begin) {
      size_t start = end - 1;
      while (start > begin && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80)
        --start;
      if (!isWhiteSpace(decodeUtf8(text, start).cp))
        break;
      end = start;
    }
  }
  text = text.substr(begin, end - begin);
}

void PrependNormalizer::normalize(std::string &text) const {
  if (!text.empty())
    text = prefix_ + text;
}

void ReplaceNormalizer::normalize(std::string &text) const {
  std::string out;
  if (regex_) {
    std::vector<Regex::Match> matches;
    regex_->findAll(text, matches);
    if (matches.empty())
      return;
    size_t prev = 0;
    for (const Regex::Match &m : matches) {
      out.append(text, prev, m.begin - prev);
      out += content_;
      prev = m.end;
    }
    out.append(text, prev, std::string::npos);
  } else {
    if (literal_.empty())
      return;
    size_t at = text.find(literal_);
    if (at == std::string::npos)
      return;
    size_t prev = 0;
    while (at != std::string::npos) {
      out.append(text, prev, at - prev);
      out += content_;
      prev = at + literal_.size();
      at = text.find(literal_, prev);
    }
    out.append(text, prev, std::string::npos);
  }
  text = std::move(out);
}

void SequenceNormalizer::normalize(std::string &text) const {
  for (const auto &n : items_)
    n->normalize(text);
}

namespace {

struct Span {
  size_t begin, end;
  bool isMatch;
};

/// The pieces of `text` between and at `matches`, arranged per `behavior`.
std::vector<Span> arrange(size_t size, const std::vector<Regex::Match> &matches,
                          SplitBehavior behavior, bool invert) {
  std::vector<Span> spans;
  spans.reserve(matches.size() * 2 + 1);
  size_t prev = 0;
  for (const Regex::Match &m : matches) {
    if (m.begin > prev)
      spans.push_back({prev, m.begin, invert});
    spans.push_back({m.begin, m.end, !invert});
    prev = m.end;
  }
  if (prev < size)
    spans.push_back({prev, size, invert});

  std::vector<Span> out;
  out.reserve(spans.size());
  switch (behavior) {
  case SplitBehavior::Isolated:
    return spans;
  case SplitBehavior::Removed:
    for (const Span &s : spans)
      if (!s.isMatch)
        out.push_back(s);
    return out;
  case SplitBehavior::MergedWithPrevious: {
    bool previousMatch = false;
    for (const Span &s : spans) {
      if (s.isMatch && !previousMatch && !out.empty())
        out.back().end = s.end;
      else
        out.push_back(s);
      previousMatch = s.isMatch;
    }
    return out;
  }
  case SplitBehavior::MergedWithNext: {
    bool previousMatch = false;
    for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
      if (it->isMatch && !previousMatch && !out.empty())
        out.back().begin = it->begin;
      else
        out.push_back(*it);
      previousMatch = it->isMatch;
    }
    std::reverse(out.begin(), out.end());
    return out;
  }
  case SplitBehavior::Contiguous: {
    bool previousMatch = false;
    for (const Span &s : spans) {
      if (s.isMatch == previousMatch && !out.empty())
        out.back().end = s.end;
      else
        out.push_back(s);
      previousMatch = s.isMatch;
    }
    return out;
  }
  }
  return spans;
}

} // namespace

void splitPieces(std::vector<Piece> &pieces, const Regex &regex, SplitBehavior behavior,
                 bool invert) {
  std::vector<Piece> out;
  out.reserve(pieces.size() * 4);
  std::vector<Regex::Match> matches;
  for (Piece &piece : pieces) {
    materialize(piece);
    matches.clear();
    regex.findAll(piece.text, matches);
    bool whole =
        matches.size() == 1 && matches[0].begin == 0 && matches[0].end == piece.text.size();
    if (whole && (behavior != SplitBehavior::Removed || invert)) {
      out.push_back(std::move(piece));
      continue;
    }
    for (const Span &s : arrange(piece.text.size(), matches, behavior, invert)) {
      if (s.end == s.begin)
        continue;
      out.push_back(Piece{piece.text.substr(s.begin, s.end - s.begin),
                          piece.atOrigin && s.begin == 0, false});
    }
  }
  pieces = std::move(out);
}

void SplitPreTokenizer::split(std::vector<Piece> &pieces) const {
  splitPieces(pieces, *regex_, behavior_, invert_);
}

void ByteLevelPreTokenizer::split(std::vector<Piece> &pieces) const {
  if (addPrefixSpace_) {
    for (Piece &p : pieces) {
      materialize(p);
      if (p.text.empty() || p.text[0] != ' ')
        p.text = " " + p.text;
    }
  }
  if (regex_)
    splitPieces(pieces, *regex_, SplitBehavior::Isolated, false);
  for (Piece &p : pieces) {
    // Already-mapped text would be mapped twice: write it out first.
    materialize(p);
    p.byteMapped = true;
  }
}

void MetaspacePreTokenizer::split(std::vector<Piece> &pieces) const {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (Piece &p : pieces) {
    materialize(p);
    std::string text;
    text.reserve(p.text.size() + replacement_.size());
    for (char c : p.text) {
      if (c == ' ')
        text += replacement_;
      else
        text += c;
    }
    bool startsWithReplacement = text.compare(0, replacement_.size(), replacement_) == 0;
    if (!startsWithReplacement &&
        (scheme_ == PrependScheme::Always || (scheme_ == PrependScheme::First && p.atOrigin)))
      text = replacement_ + text;
    if (!split_) {
      out.push_back(Piece{std::move(text), p.atOrigin, false});
      continue;
    }
    // Split before every replacement character (merged with the next).
    size_t start = 0;
    size_t at = text.find(replacement_, 1);
    while (at != std::string::npos) {
      out.push_back(Piece{text.substr(start, at - start), p.atOrigin && start == 0, false});
      start = at;
      at = text.find(replacement_, at + replacement_.size());
    }
    if (start < text.size())
      out.push_back(Piece{text.substr(start), p.atOrigin && start == 0, false});
  }
  pieces = std::move(out);
}

void SequencePreTokenizer::split(std::vector<Piece> &pieces) const {
  for (const auto &p : items_)
    p->split(pieces);
}

} // namespace volt::tok
