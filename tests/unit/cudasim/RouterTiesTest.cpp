//===- RouterTiesTest.cpp - the routing near-tie rule of the backend comparisons -===//
//
// tests/support/RouterTies.h on its own: the gap at the top-k boundary,
// its minimum over layers and ranks, and the row comparison both
// end-to-end tests apply (tests/gpu/EndToEndTest.cpp on a GPU, this
// folder's CudaSimtEndToEndTest on the host). Its use through the cpu
// backend's op observer is exercised by CudaSimtEndToEndTest, against the
// gaps of the emulated device's router launches.
//
//===----------------------------------------------------------------------===//
#include "tests/support/RouterTies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>

namespace volt::testing {
namespace {

TEST(CudaSimtRouterTies, GapIsBetweenTheKthAndTheNextLogitRelativeToTheKth) {
  const std::vector<float> row = {0.5f, 4.0f, -1.0f, 3.0f, 2.9f};
  // Top 2 are 4 and 3; the next is 2.9: (3 - 2.9) / 3.
  EXPECT_NEAR(topKGap(row, 2), 0.1 / 3, 1e-6);
  // Top 1 is 4, the next 3: below |kth| = 1 the gap is absolute.
  EXPECT_NEAR(topKGap(row, 1), 1.0 / 4, 1e-6);
  EXPECT_NEAR(topKGap(std::vector<float>{0.25f, 0.2f}, 1), 0.05, 1e-6);
  // An exact tie at the boundary is a gap of zero; inside the top k it is
  // no tie at all.
  EXPECT_EQ(topKGap(std::vector<float>{3.0f, 3.0f, 1.0f}, 1), 0.0);
  EXPECT_NEAR(topKGap(std::vector<float>{3.0f, 3.0f, 1.0f}, 2), 2.0 / 3, 1e-6);
  // Nothing can swap when every expert is chosen.
  EXPECT_TRUE(std::isinf(topKGap(row, 5)));
  EXPECT_TRUE(std::isinf(topKGap(row, 0)));
}

TEST(CudaSimtRouterTies, GapsAreTheSmallestOverEveryRecordPerToken) {
  RouterGaps gaps;
  EXPECT_TRUE(std::isinf(gaps.smallest(0, 4)));
  EXPECT_FALSE(gaps.onTie(0));
  // Two layers of three tokens, four experts, top 2.
  const std::vector<float> layer0 = {4, 3, 1,     0,   // token 0: gap 2/3
                                     4, 2, 2,     0,   // token 1: tie
                                     5, 4, 3.99f, 0};  // token 2: 0.01/4
  const std::vector<float> layer1 = {4, 3, 2.999f, 0,  // token 0: 0.001/3
                                     4, 3, 1,      0,  // token 1
                                     5, 4, 1,      0}; // token 2
  gaps.record(layer0, 3, 4, 2);
  gaps.record(layer1, 3, 4, 2);
  ASSERT_EQ(gaps.size(), 3u);
  EXPECT_NEAR(gaps.smallest(0, 1), 0.001 / 3, 1e-6);
  EXPECT_EQ(gaps.smallest(1, 2), 0.0);
  EXPECT_NEAR(gaps.smallest(2, 3), 0.01 / 4, 1e-6);
  EXPECT_EQ(gaps.smallest(0, 3), 0.0);
  EXPECT_TRUE(gaps.onTie(0));
  EXPECT_TRUE(gaps.onTie(1));
  EXPECT_FALSE(gaps.onTie(2)); // 2.5e-3: just outside kRouterTie
  // Fewer logits than tokens: only the rows there are.
  gaps.clear();
  gaps.record(std::span(layer0).first(4), 3, 4, 2);
  EXPECT_EQ(gaps.size(), 1u);
  // top_k = experts: nothing recorded.
  gaps.clear();
  gaps.record(layer0, 3, 4, 4);
  EXPECT_EQ(gaps.size(), 0u);
}

TEST(CudaSimtRouterTies, RanksMayRecordAtOnce) {
  RouterGaps gaps;
  std::vector<float> logits(64 * 8);
  for (size_t i = 0; i < logits.size(); ++i)
    logits[i] = static_cast<float>((i * 7919) % 101) / 10.0f;
  std::vector<std::thread> ranks;
  for (int r = 0; r < 4; ++r)
    ranks.emplace_back([&] { gaps.record(logits, 64, 8, 2); });
  for (std::thread &t : ranks)
    t.join();
  RouterGaps once;
  once.record(logits, 64, 8, 2);
  ASSERT_EQ(gaps.size(), 64u);
  for (size_t t = 0; t < 64; ++t)
    EXPECT_EQ(gaps.smallest(t, t + 1), once.smallest(t, t + 1)) << "token " << t;
}

TEST(CudaSimtRouterTies, NoteSaysHowCloseTheRoutingCame) {
  EXPECT_EQ(routerTieNote(std::numeric_limits<double>::infinity()), "");
  EXPECT_NE(routerTieNote(1.5e-4).find("router logits 0.000150 apart at the top-k boundary"),
            std::string::npos)
      << routerTieNote(1.5e-4);
  EXPECT_TRUE(fewEnoughTies(1, 10));
  EXPECT_FALSE(fewEnoughTies(2, 19));
}

TEST(CudaSimtRouterTies, RowComparison) {
  const std::vector<float> cpu = {1.0f, -10.0f, 3.0f, 2.0f};
  std::vector<float> gpu = {1.05f, -10.1f, 3.0f, 2.0f};
  RowComparison c = compareRow(cpu, gpu);
  EXPECT_EQ(c.scale, 10.0);
  EXPECT_NEAR(c.diff, 0.1, 1e-6);
  EXPECT_EQ(c.worstAt, 1);
  EXPECT_NEAR(c.bound, 0.201, 1e-9);
  EXPECT_EQ(c.cpuBest, 2);
  EXPECT_EQ(c.gpuBest, 2);
  EXPECT_EQ(c.top, 3.0);
  // 3 - 2 = 1 is more than twice the bound: the greedy tokens must agree.
  EXPECT_TRUE(c.greedyDecided);
  // A NaN on the GPU side is the largest difference of all.
  gpu[3] = std::numeric_limits<float>::quiet_NaN();
  c = compareRow(cpu, gpu);
  EXPECT_TRUE(std::isinf(c.diff));
  EXPECT_EQ(c.worstAt, 3);
  // Top two within twice the bound: the greedy token is not decided.
  c = compareRow(std::vector<float>{2.0f, 1.9f, -10.0f}, std::vector<float>{1.9f, 2.0f, -10.0f});
  EXPECT_FALSE(c.greedyDecided);
  EXPECT_EQ(c.gpuBest, 1);
}

} // namespace
} // namespace volt::testing
