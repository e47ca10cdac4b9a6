//===- WorkerPoolTest.cpp - the sampler pool's parallel for ---------------===//
#include "runtime/engine/WorkerPool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>

namespace volt::engine {
namespace {

TEST(WorkerPool, EveryIndexRunsOnceOnAKnownWorker) {
  for (int threads : {1, 2, 4}) {
    WorkerPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (size_t n : {0, 1, 2, 3, 17, 64, 1000}) {
      for (int round = 0; round < 20; ++round) {
        std::vector<std::atomic<int>> hits(n);
        std::atomic<bool> badWorker{false};
        pool.run(n, [&](int worker, size_t i) {
          if (worker < 0 || worker >= threads)
            badWorker = true;
          ++hits[i];
        });
        EXPECT_FALSE(badWorker);
        for (size_t i = 0; i < n; ++i)
          ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << " n " << n << " i " << i;
      }
    }
  }
}

TEST(WorkerPool, WorkersHoldTheirOwnState) {
  // Each worker index is used by one thread at a time: per-worker counters
  // need no synchronisation.
  WorkerPool pool(4);
  std::vector<int64_t> perWorker(4, 0);
  for (int round = 0; round < 50; ++round)
    pool.run(256, [&](int worker, size_t i) { perWorker[worker] += int64_t(i); });
  int64_t total = 0;
  for (int64_t v : perWorker)
    total += v;
  EXPECT_EQ(total, 50 * (255 * 256 / 2));
}

} // namespace
} // namespace volt::engine
