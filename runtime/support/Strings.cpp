//===- Strings.cpp --------------------------------------------------------===//
#include "runtime/support/Strings.h"

#include <algorithm>
#include <cstdio>

namespace volt {

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string clipForMessage(std::string_view text, size_t max) {
  if (text.size() <= max)
    return std::string(text);
  size_t cut = max;
  // Back up over UTF-8 continuation bytes so that a character stays whole.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
    --cut;
  return std::string(text.substr(0, cut)) + "… (" + std::to_string(text.size()) + " bytes)";
}

std::optional<std::string> closestMatch(std::string_view word,
                                        const std::vector<std::string> &candidates) {
  std::optional<std::string> best;
  if (word.size() > 256)
    return best;
  size_t bestDistance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string &c : candidates) {
    // The distance is at least the difference in length.
    const size_t gap = word.size() > c.size() ? word.size() - c.size() : c.size() - word.size();
    if (gap >= bestDistance)
      continue;
    size_t d = editDistance(word, c);
    if (d > 0 && d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  return best;
}

std::string joinList(const std::vector<std::string> &items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0)
      out += sep;
    out += items[i];
  }
  return out;
}

std::string formatBytes(uint64_t bytes) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

std::string formatCount(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  int count = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (count > 0 && count % 3 == 0)
      out.push_back(',');
    out.push_back(*it);
    ++count;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

bool wildcardMatch(std::string_view pattern, std::string_view text) {
  // Iterative glob match with single-star backtracking: O(|p|·|t|) worst case.
  size_t p = 0, t = 0, starP = std::string_view::npos, starT = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      starP = p++;
      starT = t;
    } else if (starP != std::string_view::npos) {
      p = starP + 1;
      t = ++starT;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*')
    ++p;
  return p == pattern.size();
}

} // namespace volt
