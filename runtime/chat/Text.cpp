//===- Text.cpp - Python string semantics over UTF-8 ----------------------===//
#include "runtime/chat/Text.h"

#include <algorithm>

namespace volt::chat {

namespace {

/// Decodes one code point at `i`, advancing `i`; invalid input gives U+FFFD
/// and advances one byte.
char32_t decodeOne(std::string_view s, size_t &i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b0 = byte(i);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  int len = 0;
  char32_t cp = 0;
  char32_t minimum = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, minimum = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, minimum = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, minimum = 0x10000;
  } else {
    ++i;
    return 0xFFFD;
  }
  if (i + len > s.size()) {
    ++i;
    return 0xFFFD;
  }
  for (int k = 1; k < len; ++k) {
    unsigned char b = byte(i + k);
    if ((b & 0xC0) != 0x80) {
      ++i;
      return 0xFFFD;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < minimum || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++i;
    return 0xFFFD;
  }
  i += len;
  return cp;
}

struct CaseMapping {
  char32_t from, to;
};
struct SpecialCaseMapping {
  char32_t from;
  const char32_t *to;
};

#include "runtime/chat/CaseTables.inc"

enum class Case { Upper, Lower, Title };

/// Appends the mapping of `c`; returns whether `c` has one.
template <size_t N, size_t M>
bool mapCase(char32_t c, const CaseMapping (&simple)[N], const SpecialCaseMapping (&special)[M],
             std::u32string &out) {
  auto s = std::lower_bound(std::begin(simple), std::end(simple), c,
                            [](const CaseMapping &m, char32_t v) { return m.from < v; });
  if (s != std::end(simple) && s->from == c) {
    out += s->to;
    return true;
  }
  auto p = std::lower_bound(std::begin(special), std::end(special), c,
                            [](const SpecialCaseMapping &m, char32_t v) { return m.from < v; });
  if (p != std::end(special) && p->from == c) {
    out += p->to;
    return true;
  }
  return false;
}

void appendCase(char32_t c, Case which, std::u32string &out) {
  bool mapped = false;
  switch (which) {
  case Case::Upper:
    mapped = mapCase(c, kUpperSimple, kUpperSpecial, out);
    break;
  case Case::Lower:
    mapped = mapCase(c, kLowerSimple, kLowerSpecial, out);
    break;
  case Case::Title:
    mapped = mapCase(c, kTitleSimple, kTitleSpecial, out) ||
             mapCase(c, kUpperSimple, kUpperSpecial, out);
    break;
  }
  if (!mapped)
    out += c;
}

/// Whether `c` has a case (Python's notion of a cased character, taken as
/// having any case mapping or being the target of one in these tables).
bool isCased(char32_t c) {
  std::u32string scratch;
  if (mapCase(c, kUpperSimple, kUpperSpecial, scratch) ||
      mapCase(c, kLowerSimple, kLowerSpecial, scratch))
    return true;
  return false;
}

std::string mapAll(std::string_view s, Case which) {
  std::u32string out;
  for (char32_t c : decodeUtf8(s))
    appendCase(c, which, out);
  return encodeUtf8(out);
}

std::vector<std::string> splitWhitespace(const std::u32string &cps, int64_t maxSplit) {
  std::vector<std::string> out;
  size_t i = 0, n = cps.size();
  while (true) {
    while (i < n && isPySpace(cps[i]))
      ++i;
    if (i == n)
      break;
    if (maxSplit >= 0 && static_cast<int64_t>(out.size()) == maxSplit) {
      size_t end = n;
      while (end > i && isPySpace(cps[end - 1]))
        --end;
      out.push_back(encodeUtf8(std::u32string_view(cps).substr(i, end - i)));
      break;
    }
    size_t start = i;
    while (i < n && !isPySpace(cps[i]))
      ++i;
    out.push_back(encodeUtf8(std::u32string_view(cps).substr(start, i - start)));
  }
  return out;
}

} // namespace

std::u32string decodeUtf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size())
    out.push_back(decodeOne(s, i));
  return out;
}

void appendUtf8(std::string &out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

std::string encodeUtf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s)
    appendUtf8(out, c);
  return out;
}

bool isValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t before = i;
    char32_t c = decodeOne(s, i);
    if (c == 0xFFFD && !(i - before == 3 && s.substr(before, 3) == "\xEF\xBF\xBD"))
      return false;
  }
  return true;
}

size_t codepointCount(std::string_view s) {
  size_t n = 0;
  size_t i = 0;
  while (i < s.size()) {
    decodeOne(s, i);
    ++n;
  }
  return n;
}

bool isPySpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

std::string pyStrip(std::string_view s, const std::optional<std::string> &chars, bool left,
                    bool right) {
  std::u32string cps = decodeUtf8(s);
  std::u32string set;
  if (chars)
    set = decodeUtf8(*chars);
  auto strip = [&](char32_t c) {
    return chars ? set.find(c) != std::u32string::npos : isPySpace(c);
  };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip(cps[b]))
      ++b;
  if (right)
    while (e > b && strip(cps[e - 1]))
      --e;
  return encodeUtf8(std::u32string_view(cps).substr(b, e - b));
}

std::vector<std::string> pySplit(std::string_view s, const std::optional<std::string> &sep,
                                 int64_t maxSplit) {
  if (!sep)
    return splitWhitespace(decodeUtf8(s), maxSplit);
  std::vector<std::string> out;
  size_t start = 0;
  while (maxSplit < 0 || static_cast<int64_t>(out.size()) < maxSplit) {
    size_t at = s.find(*sep, start);
    if (at == std::string_view::npos)
      break;
    out.emplace_back(s.substr(start, at - start));
    start = at + sep->size();
  }
  out.emplace_back(s.substr(start));
  return out;
}

std::vector<std::string> pyRSplit(std::string_view s, const std::optional<std::string> &sep,
                                  int64_t maxSplit) {
  if (maxSplit < 0)
    return pySplit(s, sep, maxSplit);
  std::vector<std::string> out;
  if (!sep) {
    std::u32string cps = decodeUtf8(s);
    size_t e = cps.size();
    while (true) {
      while (e > 0 && isPySpace(cps[e - 1]))
        --e;
      if (e == 0)
        break;
      if (static_cast<int64_t>(out.size()) == maxSplit) {
        size_t b = 0;
        while (b < e && isPySpace(cps[b]))
          ++b;
        out.push_back(encodeUtf8(std::u32string_view(cps).substr(b, e - b)));
        break;
      }
      size_t b = e;
      while (b > 0 && !isPySpace(cps[b - 1]))
        --b;
      out.push_back(encodeUtf8(std::u32string_view(cps).substr(b, e - b)));
      e = b;
    }
  } else {
    size_t end = s.size();
    while (static_cast<int64_t>(out.size()) < maxSplit && end >= sep->size()) {
      size_t at = s.rfind(*sep, end - sep->size());
      if (at == std::string_view::npos)
        break;
      out.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
      end = at;
    }
    out.emplace_back(s.substr(0, end));
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> pySplitLines(std::string_view s) {
  std::u32string cps = decodeUtf8(s);
  std::vector<std::string> out;
  size_t start = 0, i = 0;
  auto isBreak = [](char32_t c) {
    return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D ||
           c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029;
  };
  while (i < cps.size()) {
    if (isBreak(cps[i])) {
      out.push_back(encodeUtf8(std::u32string_view(cps).substr(start, i - start)));
      if (cps[i] == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n')
        ++i;
      start = ++i;
    } else {
      ++i;
    }
  }
  if (start < cps.size())
    out.push_back(encodeUtf8(std::u32string_view(cps).substr(start)));
  return out;
}

std::string pyReplace(std::string_view s, std::string_view from, std::string_view to,
                      int64_t count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` before every code point and at the end.
    std::u32string cps = decodeUtf8(s);
    int64_t done = 0;
    for (char32_t c : cps) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      appendUtf8(out, c);
    }
    if (count < 0 || done < count)
      out += to;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t at = s.find(from, start);
    if (at == std::string_view::npos)
      break;
    out += s.substr(start, at - start);
    out += to;
    start = at + from.size();
    ++done;
  }
  out += s.substr(start);
  return out;
}

std::string asciiUpper(std::string_view s) {
  std::string out(s);
  for (char &c : out)
    if (c >= 'a' && c <= 'z')
      c = static_cast<char>(c - 32);
  return out;
}

std::string asciiLower(std::string_view s) {
  std::string out(s);
  for (char &c : out)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c + 32);
  return out;
}

std::string pyUpper(std::string_view s) { return mapAll(s, Case::Upper); }
std::string pyLower(std::string_view s) { return mapAll(s, Case::Lower); }

std::string pyCapitalize(std::string_view s) {
  std::u32string cps = decodeUtf8(s), out;
  for (size_t i = 0; i < cps.size(); ++i)
    appendCase(cps[i], i == 0 ? Case::Title : Case::Lower, out);
  return encodeUtf8(out);
}

std::string pyTitle(std::string_view s) {
  std::u32string out;
  bool previousCased = false;
  for (char32_t c : decodeUtf8(s)) {
    bool cased = isCased(c);
    appendCase(c, previousCased ? Case::Lower : Case::Title, out);
    previousCased = cased;
  }
  return encodeUtf8(out);
}

void appendJsonString(std::string &out, std::string_view s, bool ensureAscii) {
  static const char *hex = "0123456789abcdef";
  auto appendU = [&](unsigned v) {
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4)
      out += hex[(v >> shift) & 0xF];
  };
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    size_t start = i;
    char32_t c = decodeOne(s, i);
    switch (c) {
    case '"':
      out += "\\\"";
      continue;
    case '\\':
      out += "\\\\";
      continue;
    case '\n':
      out += "\\n";
      continue;
    case '\r':
      out += "\\r";
      continue;
    case '\t':
      out += "\\t";
      continue;
    case '\b':
      out += "\\b";
      continue;
    case '\f':
      out += "\\f";
      continue;
    default:
      break;
    }
    if (c < 0x20 || (ensureAscii && c >= 0x80 && c < 0x10000)) {
      appendU(c);
    } else if (c < 0x80 || !ensureAscii) {
      out.append(s.substr(start, i - start));
    } else {
      char32_t v = c - 0x10000;
      appendU(0xD800 + (v >> 10));
      appendU(0xDC00 + (v & 0x3FF));
    }
  }
  out += '"';
}

} // namespace volt::chat
