//===- Decoding.cpp - decoders -------------------------------------------===//
#include "runtime/tokenizer/Decoding.h"

#include "runtime/tokenizer/Unicode.h"

namespace volt::tok {

void ByteLevelDecoder::decodeChain(std::vector<std::string> &tokens) const {
  const ByteLevelAlphabet &alphabet = byteLevelAlphabet();
  std::string bytes;
  for (const std::string &t : tokens) {
    size_t mark = bytes.size();
    bool mapped = true;
    for (size_t i = 0; i < t.size();) {
      Utf8Char c = decodeUtf8(t, i);
      int b = alphabet.charToByte(c.cp);
      if (b < 0) {
        mapped = false;
        break;
      }
      bytes.push_back(static_cast<char>(b));
      i += c.len;
    }
    // A token with a character outside the alphabet is taken as it is.
    if (!mapped) {
      bytes.resize(mark);
      bytes += t;
    }
  }
  tokens.assign(1, isValidUtf8(bytes) ? std::move(bytes) : repairUtf8(bytes));
}

namespace {

/// The byte of a `<0xAB>` token, or -1. Like Rust's `u8::from_str_radix`,
/// a leading '+' is accepted.
int byteTokenValue(const std::string &t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>')
    return -1;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return -1;
  };
  if (t[3] == '+') {
    int v = hex(t[4]);
    return v;
  }
  int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

} // namespace

void ByteFallbackDecoder::decodeChain(std::vector<std::string> &tokens) const {
  std::vector<std::string> out;
  out.reserve(tokens.size());
  std::string run;
  auto flush = [&] {
    if (run.empty())
      return;
    if (isValidUtf8(run)) {
      out.push_back(run);
    } else {
      for (size_t i = 0; i < run.size(); ++i)
        out.emplace_back("\xEF\xBF\xBD");
    }
    run.clear();
  };
  for (std::string &t : tokens) {
    int b = byteTokenValue(t);
    if (b >= 0) {
      run.push_back(static_cast<char>(b));
      continue;
    }
    flush();
    out.push_back(std::move(t));
  }
  flush();
  tokens = std::move(out);
}

void FuseDecoder::decodeChain(std::vector<std::string> &tokens) const {
  std::string all;
  for (const std::string &t : tokens)
    all += t;
  tokens.assign(1, std::move(all));
}

void StripDecoder::decodeChain(std::vector<std::string> &tokens) const {
  for (std::string &t : tokens) {
    std::vector<std::pair<size_t, Utf8Char>> chars;
    for (size_t i = 0; i < t.size();) {
      Utf8Char c = decodeUtf8(t, i);
      chars.push_back({i, c});
      i += c.len;
    }
    size_t startCut = 0;
    while (startCut < chars.size() && startCut < start_ && chars[startCut].second.cp == content_)
      ++startCut;
    size_t stopCut = 0;
    while (stopCut < chars.size() && stopCut < stop_ &&
           chars[chars.size() - 1 - stopCut].second.cp == content_)
      ++stopCut;
    // HF keeps (byte length - cuts) characters after the start cut; with
    // multi-byte characters that can keep the stripped end.
    size_t keep = t.size() >= startCut + stopCut ? t.size() - startCut - stopCut : 0;
    size_t endChar = std::min(chars.size(), startCut + keep);
    size_t b = startCut < chars.size() ? chars[startCut].first : t.size();
    size_t e = endChar < chars.size() ? chars[endChar].first : t.size();
    t = b < e ? t.substr(b, e - b) : std::string();
  }
}

void ReplaceDecoder::decodeChain(std::vector<std::string> &tokens) const {
  for (std::string &t : tokens) {
    std::string out;
    if (regex_) {
      std::vector<Regex::Match> matches;
      regex_->findAll(t, matches);
      if (matches.empty())
        continue;
      size_t prev = 0;
      for (const Regex::Match &m : matches) {
        out.append(t, prev, m.begin - prev);
        out += content_;
        prev = m.end;
      }
      out.append(t, prev, std::string::npos);
    } else {
      if (literal_.empty() || t.find(literal_) == std::string::npos)
        continue;
      size_t prev = 0, at = t.find(literal_);
      while (at != std::string::npos) {
        out.append(t, prev, at - prev);
        out += content_;
        prev = at + literal_.size();
        at = t.find(literal_, prev);
      }
      out.append(t, prev, std::string::npos);
    }
    t = std::move(out);
  }
}

void MetaspaceDecoder::decodeChain(std::vector<std::string> &tokens) const {
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string &t = tokens[i];
    if (replacement_.empty() || t.find(replacement_) == std::string::npos)
      continue;
    std::string out;
    size_t prev = 0, at = t.find(replacement_);
    while (at != std::string::npos) {
      out.append(t, prev, at - prev);
      if (!(i == 0 && dropInFirst_))
        out += ' ';
      prev = at + replacement_.size();
      at = t.find(replacement_, prev);
    }
    out.append(t, prev, std::string::npos);
    t = std::move(out);
  }
}

void SequenceDecoder::decodeChain(std::vector<std::string> &tokens) const {
  for (const auto &d : items_)
    d->decodeChain(tokens);
}

bool SequenceDecoder::joinsByteTokens() const {
  for (const auto &d : items_)
    if (d->joinsByteTokens())
      return true;
  return false;
}

} // namespace volt::tok
