//===- TopCandidates.cpp - the K largest logits of each row ---------------===//
#include "runtime/cpu/TopCandidates.h"
#include "runtime/cpu/Scratch.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace volt::cpu {

void topCandidates(const TopCandidatesParams &params, const float *logits,
                   const float *temperatures, int32_t *ids, float *values, float *stats,
                   ThreadPool &pool) {
  const int64_t vocab = params.vocab, k = params.k;
  pool.parallelFor(params.rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float *row = logits + r * vocab;
      // Each thread's buffer, kept across ops (a vocabulary of indices).
      std::vector<int32_t> &order = detail::threadBuffer<int32_t>(0, 0);
      order.reserve(static_cast<size_t>(vocab));
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < vocab; ++i)
        if (row[i] == row[i]) {
          order.push_back(static_cast<int32_t>(i));
          m = std::max(m, row[i]);
        }
      const size_t take = std::min<size_t>(static_cast<size_t>(k), order.size());
      std::partial_sort(
          order.begin(), order.begin() + static_cast<std::ptrdiff_t>(take), order.end(),
          [&](int32_t a, int32_t b) { return row[a] != row[b] ? row[a] > row[b] : a < b; });
      for (int64_t c = 0; c < k; ++c) {
        const bool valid = static_cast<size_t>(c) < take;
        ids[r * k + c] = valid ? order[static_cast<size_t>(c)] : -1;
        values[r * k + c] =
            valid ? row[order[static_cast<size_t>(c)]] : std::numeric_limits<float>::quiet_NaN();
      }
      const double t = temperatures[r];
      double sum1 = 0, sumT = 0;
      for (int32_t i : order) {
        sum1 += std::exp(double(row[i]) - double(m));
        if (t > 0)
          sumT += std::exp((double(row[i]) - double(m)) / t);
      }
      stats[r * 3] = m;
      stats[r * 3 + 1] = static_cast<float>(sum1);
      stats[r * 3 + 2] = t > 0 ? static_cast<float>(sumT) : 1.0f;
    }
  });
}

} // namespace volt::cpu
