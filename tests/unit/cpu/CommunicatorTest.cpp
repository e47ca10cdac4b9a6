// In-process collectives with 2 and 4 thread ranks: rank-order FP32 sums,
// the same bits on every rank, buffers reusable call after call.
#include "runtime/cpu/Communicator.h"

#include "TestUtil.h"

#include <thread>

namespace volt::cpu {
namespace {

using namespace test;

/// Runs body(rank) on one thread per rank.
template <typename Body> void onRanks(int ranks, Body body) {
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] { body(r); });
  for (auto &t : threads)
    t.join();
}

class AllReduceTest : public ::testing::TestWithParam<int> {};

TEST_P(AllReduceTest, SumsInRankOrderInF16AndF32) {
  const int ranks = GetParam();
  Communicator comm(ranks);
  EXPECT_EQ(comm.ranks(), ranks);
  std::mt19937 rng(70);
  for (int64_t count : {1, 5, 1023, 1024, 1025, 5000}) {
    std::vector<std::vector<uint16_t>> half(static_cast<size_t>(ranks));
    std::vector<std::vector<float>> full(static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
      half[static_cast<size_t>(r)] = randomHalf(static_cast<size_t>(count), rng);
      full[static_cast<size_t>(r)].resize(static_cast<size_t>(count));
      for (auto &v : full[static_cast<size_t>(r)])
        v = std::ldexp(std::normal_distribution<float>()(rng), static_cast<int>(rng() % 30) - 15);
    }
    std::vector<uint16_t> halfWant(static_cast<size_t>(count));
    std::vector<float> fullWant(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      float h = 0, f = 0;
      for (int r = 0; r < ranks; ++r) {
        h = r == 0 ? halfToFloat(half[0][static_cast<size_t>(i)])
                   : h + halfToFloat(half[static_cast<size_t>(r)][static_cast<size_t>(i)]);
        f = r == 0 ? full[0][static_cast<size_t>(i)]
                   : f + full[static_cast<size_t>(r)][static_cast<size_t>(i)];
      }
      halfWant[static_cast<size_t>(i)] = floatToHalf(h);
      fullWant[static_cast<size_t>(i)] = f;
    }
    onRanks(ranks, [&](int r) {
      comm.allReduce(r, half[static_cast<size_t>(r)].data(), count, DType::F16);
      comm.allReduce(r, full[static_cast<size_t>(r)].data(), count, DType::F32);
    });
    for (int r = 0; r < ranks; ++r) {
      ASSERT_EQ(half[static_cast<size_t>(r)], halfWant) << "rank " << r << " count " << count;
      ASSERT_TRUE(
          sameBits(full[static_cast<size_t>(r)].data(), fullWant.data(), fullWant.size() * 4))
          << "rank " << r << " count " << count;
    }
  }
}

TEST_P(AllReduceTest, ManyCallsInARowStayInStep) {
  const int ranks = GetParam();
  Communicator comm(ranks);
  std::vector<std::vector<float>> buffers(static_cast<size_t>(ranks), std::vector<float>(300));
  // A rank that stopped early would leave the others at the barrier, so
  // each rank counts its mismatches and the test checks them afterwards.
  std::vector<int> mismatches(static_cast<size_t>(ranks), 0);
  onRanks(ranks, [&](int r) {
    std::vector<float> &b = buffers[static_cast<size_t>(r)];
    for (int call = 0; call < 500; ++call) {
      for (size_t i = 0; i < b.size(); ++i)
        b[i] = static_cast<float>(r + 1) * static_cast<float>(call + static_cast<int>(i));
      comm.allReduce(r, b.data(), static_cast<int64_t>(b.size()), DType::F32);
      const int rankSum = ranks * (ranks + 1) / 2;
      const auto factor = static_cast<float>(rankSum);
      for (size_t i = 0; i < b.size(); ++i)
        mismatches[static_cast<size_t>(r)] +=
            b[i] != factor * static_cast<float>(call + static_cast<int>(i));
    }
  });
  for (int r = 0; r < ranks; ++r)
    EXPECT_EQ(mismatches[static_cast<size_t>(r)], 0) << "rank " << r;
}

TEST_P(AllReduceTest, AllGatherConcatenatesSlicesInRankOrder) {
  const int ranks = GetParam();
  Communicator comm(ranks);
  const int64_t rows = 3, cols = 5;
  std::vector<std::vector<float>> in(static_cast<size_t>(ranks)), out(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    for (int64_t i = 0; i < rows * cols; ++i)
      in[static_cast<size_t>(r)].push_back(static_cast<float>(int64_t{r} * 1000 + i));
    out[static_cast<size_t>(r)].assign(static_cast<size_t>(rows * cols * ranks), -1.0f);
  }
  onRanks(ranks, [&](int r) {
    comm.allGather(r, in[static_cast<size_t>(r)].data(), out[static_cast<size_t>(r)].data(), rows,
                   cols, DType::F32);
  });
  for (int r = 0; r < ranks; ++r) {
    for (int64_t row = 0; row < rows; ++row) {
      for (int64_t c = 0; c < cols * ranks; ++c) {
        const int64_t source = c / cols; // the rank the column comes from
        ASSERT_EQ(out[static_cast<size_t>(r)][static_cast<size_t>(row * cols * ranks + c)],
                  static_cast<float>(source * 1000 + row * cols + c % cols))
            << "rank " << r << " row " << row << " col " << c;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, AllReduceTest, ::testing::Values(1, 2, 4));

} // namespace
} // namespace volt::cpu
