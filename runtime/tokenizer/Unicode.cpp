//===- Unicode.cpp - UTF-8 and Unicode helpers for the tokenizer ---------===//
#include "runtime/tokenizer/Unicode.h"

#include <unicode/bytestream.h>
#include <unicode/casemap.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>
#include <unicode/uchar.h>

namespace volt::tok {

Utf8Char decodeUtf8(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<uint8_t>(s[i + k]); };
  uint8_t c = b(0);
  if (c < 0x80)
    return {c, 1};
  if (c < 0xE0)
    return {static_cast<char32_t>(((c & 0x1F) << 6) | (b(1) & 0x3F)), 2};
  if (c < 0xF0)
    return {static_cast<char32_t>(((c & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F)), 3};
  return {static_cast<char32_t>(((c & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) |
                                (b(3) & 0x3F)),
          4};
}

void appendUtf8(std::string &out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace {

/// How many bytes of a well-formed sequence start at `s[i]`: its length when
/// it is complete and valid, else 0 with `subpart` set to the length of the
/// maximal subpart to replace (at least 1).
size_t validSequence(std::string_view s, size_t i, size_t &subpart) {
  auto at = [&](size_t k) -> int { return i + k < s.size() ? static_cast<uint8_t>(s[i + k]) : -1; };
  int c = at(0);
  subpart = 1;
  if (c < 0x80)
    return 1;
  size_t need;
  int lo = 0x80, hi = 0xBF; // range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    need = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0)
      lo = 0xA0;
    else if (c == 0xED)
      hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0)
      lo = 0x90;
    else if (c == 0xF4)
      hi = 0x8F;
  } else {
    return 0;
  }
  for (size_t k = 1; k < need; ++k) {
    int x = at(k);
    bool ok = k == 1 ? (x >= lo && x <= hi) : (x >= 0x80 && x <= 0xBF);
    if (!ok) {
      subpart = k;
      return 0;
    }
  }
  return need;
}

} // namespace

bool isValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // ASCII fast path, eight bytes at a time.
    while (i + 8 <= s.size()) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ULL)
        break;
      i += 8;
    }
    if (i >= s.size())
      break;
    size_t subpart;
    size_t n = validSequence(s, i, subpart);
    if (n == 0)
      return false;
    i += n;
  }
  return true;
}

std::string repairUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 16);
  size_t i = 0;
  while (i < s.size()) {
    size_t subpart;
    size_t n = validSequence(s, i, subpart);
    if (n) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");
      i += subpart;
    }
  }
  return out;
}

const ByteLevelAlphabet &byteLevelAlphabet() {
  static const ByteLevelAlphabet table = [] {
    ByteLevelAlphabet t;
    t.latin1ToByte.fill(-1);
    t.highToByte.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      char32_t cp = printable ? static_cast<char32_t>(b) : next++;
      t.byteToChar[b] = cp;
      t.byteToUtf8[b].clear();
      appendUtf8(t.byteToUtf8[b], cp);
      if (cp < 0x100)
        t.latin1ToByte[cp] = static_cast<int16_t>(b);
      else
        t.highToByte[cp - 0x100] = static_cast<int16_t>(b);
    }
    return t;
  }();
  return table;
}

bool isWhiteSpace(char32_t cp) { return u_isUWhiteSpace(static_cast<UChar32>(cp)); }

bool isWordChar(char32_t cp) {
  auto c = static_cast<UChar32>(cp);
  if (u_hasBinaryProperty(c, UCHAR_ALPHABETIC) || u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL))
    return true;
  int32_t mask = U_GET_GC_MASK(c);
  return (mask & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0;
}

namespace {
const icu::Normalizer2 *normalizer(NormalForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2 *n = nullptr;
  switch (form) {
  case NormalForm::NFC:
    n = icu::Normalizer2::getNFCInstance(status);
    break;
  case NormalForm::NFD:
    n = icu::Normalizer2::getNFDInstance(status);
    break;
  case NormalForm::NFKC:
    n = icu::Normalizer2::getNFKCInstance(status);
    break;
  case NormalForm::NFKD:
    n = icu::Normalizer2::getNFKDInstance(status);
    break;
  }
  return U_SUCCESS(status) ? n : nullptr;
}
} // namespace

std::string normalizeUnicode(std::string_view text, NormalForm form) {
  const icu::Normalizer2 *n = normalizer(form);
  if (!n || text.empty())
    return std::string(text);
  icu::StringPiece piece(text.data(), static_cast<int32_t>(text.size()));
  UErrorCode status = U_ZERO_ERROR;
  if (n->isNormalizedUTF8(piece, status) && U_SUCCESS(status))
    return std::string(text);
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  icu::StringByteSink<std::string> sink(&out);
  status = U_ZERO_ERROR;
  n->normalizeUTF8(0, piece, sink, nullptr, status);
  if (U_FAILURE(status))
    return std::string(text);
  return out;
}

std::string lowercaseUnicode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  icu::StringByteSink<std::string> sink(&out);
  UErrorCode status = U_ZERO_ERROR;
  icu::CaseMap::utf8ToLower("", 0, icu::StringPiece(text.data(), static_cast<int32_t>(text.size())),
                            sink, nullptr, status);
  if (U_FAILURE(status))
    return std::string(text);
  return out;
}

} // namespace volt::tok
