// Embedding (vocab-parallel slices) and GatherRows: exact row copies.
#include "runtime/cpu/Gather.h"

#include "TestUtil.h"

namespace volt::cpu {
namespace {

using namespace test;

TEST(Embedding, CopiesThisRanksRowsAndZeroesTheRest) {
  std::mt19937 rng(60);
  ThreadPool pool(2);
  const int64_t dim = 24, vocabStart = 100, vocabRows = 50;
  std::vector<uint16_t> table = randomHalf(static_cast<size_t>(vocabRows * dim), rng);
  std::vector<int32_t> tokens = {100, 149, 99, 150, 0, 123, -1, 1000000};
  std::vector<uint16_t> out(tokens.size() * dim, 0x7777);
  embedding({static_cast<int64_t>(tokens.size()), dim, vocabStart, vocabRows}, tokens.data(),
            table.data(), out.data(), pool);
  for (size_t t = 0; t < tokens.size(); ++t) {
    int64_t row = tokens[t] - vocabStart;
    bool mine = row >= 0 && row < vocabRows;
    for (int64_t i = 0; i < dim; ++i)
      ASSERT_EQ(out[t * dim + static_cast<size_t>(i)],
                mine ? table[static_cast<size_t>(row * dim + i)] : uint16_t{0})
          << "token " << tokens[t] << " element " << i;
  }
}

TEST(Embedding, TwoRankSlicesSumToTheFullTable) {
  std::mt19937 rng(61);
  ThreadPool pool(1);
  const int64_t dim = 8, vocab = 10;
  std::vector<uint16_t> table = randomHalf(static_cast<size_t>(vocab * dim), rng);
  std::vector<int32_t> tokens = {0, 4, 5, 9};
  std::vector<uint16_t> low(tokens.size() * dim), high(low.size());
  embedding({4, dim, 0, 5}, tokens.data(), table.data(), low.data(), pool);
  embedding({4, dim, 5, 5}, tokens.data(), table.data() + 5 * dim, high.data(), pool);
  for (size_t t = 0; t < tokens.size(); ++t)
    for (int64_t i = 0; i < dim; ++i) {
      size_t at = t * dim + static_cast<size_t>(i);
      EXPECT_EQ(halfToFloat(low[at]) + halfToFloat(high[at]),
                halfToFloat(table[static_cast<size_t>(tokens[t] * dim + i)]));
    }
}

TEST(GatherRows, PicksRowsInBothTypes) {
  ThreadPool pool(2);
  std::vector<float> in(18); // [6, 3]
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<float>(i);
  std::vector<int32_t> rows = {5, 0, 2, 2};
  std::vector<float> out(rows.size() * 3);
  gatherRows({4, 3, DType::F32}, in.data(), rows.data(), out.data(), pool);
  EXPECT_EQ(out, (std::vector<float>{15, 16, 17, 0, 1, 2, 6, 7, 8, 6, 7, 8}));

  std::vector<uint16_t> inHalf = {1, 2, 3, 4, 5, 6}, outHalf(4);
  std::vector<int32_t> halfRows = {2, 1};
  gatherRows({2, 2, DType::F16}, inHalf.data(), halfRows.data(), outHalf.data(), pool);
  EXPECT_EQ(outHalf, (std::vector<uint16_t>{5, 6, 3, 4}));
}

} // namespace
} // namespace volt::cpu
