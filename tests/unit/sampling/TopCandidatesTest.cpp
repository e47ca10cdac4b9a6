//===- TopCandidatesTest.cpp - top_candidates on the host vs the cpu op ---===//
//
// templates/top_candidates.cu, run through the SIMT emulator, against
// cpu::topCandidates: ids and values exactly (the selection and its order
// are exact), the normalisers within the rounding of a float sum (the
// kernel adds each thread's strided share in float, then warps and blocks;
// the reference adds in double): relative 2^-24 x (terms per thread + 5
// butterfly and block levels) < 1e-5 for these rows, checked at 1e-5.
// Rows cover many exact ties at the threshold (the lowest ids must win),
// ties across the K-th place, NaN and -inf, -0 and +0, a row with fewer
// than K non-NaN logits, greedy rows (T = 0), and rows not a multiple of
// the block.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/codegen/simt/Simt.h"

#include "runtime/cpu/TopCandidates.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace small {
#define VOLT_VOCAB 1000
#define VOLT_K 16
#define VOLT_THREADS 128
#define top_candidates small_entry
#include "top_candidates.cu"
#undef top_candidates
#undef VOLT_VOCAB
#undef VOLT_K
#undef VOLT_THREADS
} // namespace small

namespace qwen {
// Qwen3's vocabulary, 64 candidates, 512 threads.
#define VOLT_VOCAB 151936
#define VOLT_K 64
#define VOLT_THREADS 512
#define top_candidates qwen_entry
#include "top_candidates.cu"
#undef top_candidates
#undef VOLT_VOCAB
#undef VOLT_K
#undef VOLT_THREADS
} // namespace qwen

namespace volt {
namespace {

using Entry = void (*)(const float *, const float *, int *, float *, float *, int);

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

void check(Entry entry, int64_t vocab, int64_t k, unsigned threads,
           const std::vector<float> &logits, const std::vector<float> &temperatures) {
  const int rows = static_cast<int>(temperatures.size());
  std::vector<int> ids(static_cast<size_t>(rows * k), 7);
  std::vector<float> values(ids.size(), 7.0f), stats(static_cast<size_t>(rows * 3), 7.0f);
  sim::launch(dim3{static_cast<unsigned>(rows), 1, 1}, dim3{threads, 1, 1}, 0, [&] {
    entry(logits.data(), temperatures.data(), ids.data(), values.data(), stats.data(), rows);
  });
  std::vector<int32_t> wantIds(ids.size());
  std::vector<float> wantValues(ids.size()), wantStats(stats.size());
  cpu::ThreadPool pool(1);
  cpu::topCandidates({rows, vocab, k}, logits.data(), temperatures.data(), wantIds.data(),
                     wantValues.data(), wantStats.data(), pool);
  for (int r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      const size_t at = static_cast<size_t>(r * k + c);
      ASSERT_EQ(ids[at], wantIds[at]) << "row " << r << " candidate " << c;
      ASSERT_TRUE(std::memcmp(&values[at], &wantValues[at], 4) == 0 ||
                  (std::isnan(values[at]) && std::isnan(wantValues[at])))
          << "row " << r << " candidate " << c << ": " << values[at] << " vs " << wantValues[at];
    }
    EXPECT_EQ(stats[static_cast<size_t>(r * 3)], wantStats[static_cast<size_t>(r * 3)]) << r;
    for (int s = 1; s < 3; ++s) {
      const float got = stats[static_cast<size_t>(r * 3 + s)],
                  want = wantStats[static_cast<size_t>(r * 3 + s)];
      EXPECT_NEAR(got, want, 1e-5 * std::fabs(want)) << "row " << r << " sum " << s;
    }
  }
}

TEST(TopCandidates, TiesAtTheThresholdGoToTheLowestIds) {
  std::mt19937 rng(11);
  std::vector<float> logits;
  std::vector<float> temperatures;
  // Row 0: values on a coarse grid, so dozens tie at the 16th place.
  for (int i = 0; i < 1000; ++i)
    logits.push_back(static_cast<float>(static_cast<int>(rng() % 40)) / 4.0f);
  temperatures.push_back(0.7f);
  // Row 1: every logit equal: the first 16 ids, in order.
  for (int i = 0; i < 1000; ++i)
    logits.push_back(1.5f);
  temperatures.push_back(1.0f);
  // Row 2: NaN, -inf, -0 and +0 among negatives; greedy.
  std::normal_distribution<float> normal(-5.0f, 1.0f);
  for (int i = 0; i < 1000; ++i)
    logits.push_back(i % 7 == 0 ? kNaN : i % 11 == 0 ? -kInf : normal(rng));
  logits[2 * 1000 + 500] = -0.0f;
  logits[2 * 1000 + 501] = 0.0f;
  logits[2 * 1000 + 3] = -0.0f;
  temperatures.push_back(0.0f);
  // Row 3: only 10 non-NaN logits (the rest NaN): 10 candidates, then -1.
  for (int i = 0; i < 1000; ++i)
    logits.push_back(i % 100 == 0 ? static_cast<float>(i) : kNaN);
  temperatures.push_back(2.0f);
  check(small::small_entry, 1000, 16, 128, logits, temperatures);
}

TEST(TopCandidates, ModelLikeRowsOfQwen3sVocabulary) {
  // A normal bulk with a few likely tokens, as a trained model's logits;
  // one row rounded to quarters (ties everywhere), one with a tie across
  // the 64th place.
  const int64_t vocab = 151936;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0, 2.5f);
  std::vector<float> logits(static_cast<size_t>(3 * vocab));
  for (float &x : logits)
    x = normal(rng);
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 40; ++i)
      logits[static_cast<size_t>(r * vocab) + rng() % vocab] += 14.0f;
  for (int64_t i = vocab; i < 2 * vocab; ++i)
    logits[static_cast<size_t>(i)] = std::round(logits[static_cast<size_t>(i)] * 4) / 4;
  for (int i = 0; i < 100; ++i)
    logits[static_cast<size_t>(2 * vocab) + 1000 * static_cast<size_t>(i)] = 11.0f;
  check(qwen::qwen_entry, vocab, 64, 512, logits, {0.7f, 1.0f, 0.0f});
}

} // namespace
} // namespace volt
