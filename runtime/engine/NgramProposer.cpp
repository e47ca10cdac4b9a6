//===- NgramProposer.cpp --------------------------------------------------===//
#include "runtime/engine/NgramProposer.h"

#include <algorithm>

namespace volt::engine {

int32_t proposeNgram(std::span<const int32_t> tokens, int32_t minN, int32_t maxN,
                     std::span<int32_t> out) {
  const int64_t len = int64_t(tokens.size());
  if (out.empty() || minN < 1 || maxN < minN || len < int64_t(minN) + 1)
    return 0;
  const int32_t last = tokens[size_t(len - 1)];
  // An occurrence ends at e (< len - 1): tokens[e - n + 1 .. e] equals the
  // suffix, and len - 1 - e tokens follow it. Scan e downwards: the
  // longest match wins, then the one with the most followers (up to the
  // drafts wanted: in a run of repeats the latest occurrence has one),
  // then the most recent.
  const int64_t want = int64_t(out.size());
  int64_t bestEnd = -1, bestLen = 0, bestFollow = 0;
  for (int64_t e = len - 2; e >= 0; --e) {
    if (tokens[size_t(e)] != last)
      continue;
    int64_t n = 1;
    while (n < maxN && e - n >= 0 && tokens[size_t(e - n)] == tokens[size_t(len - 1 - n)])
      ++n;
    const int64_t follow = std::min(want, len - 1 - e);
    if (n > bestLen || (n == bestLen && follow > bestFollow)) {
      bestLen = n;
      bestEnd = e;
      bestFollow = follow;
      if (n == maxN && follow == want)
        break;
    }
  }
  if (bestLen < minN)
    return 0;
  const int64_t count = std::min<int64_t>(int64_t(out.size()), len - 1 - bestEnd);
  std::copy_n(tokens.begin() + bestEnd + 1, count, out.begin());
  return int32_t(count);
}

} // namespace volt::engine
