// The thread pool covers every index exactly once, in contiguous ranges,
// across repeated jobs and pool sizes, and its threads take the ranges in
// turn.
#include "runtime/cpu/ThreadPool.h"

#include <atomic>
#include <chrono>
#include <gtest/gtest.h>
#include <thread>
#include <vector>

namespace volt::cpu {
namespace {

TEST(ThreadPool, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 4, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (int64_t count : {0, 1, 2, 3, 7, 100, 1001}) {
      for (int64_t grain : {1, 4, 1000}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
        std::atomic<int> calls{0};
        pool.parallelFor(count, grain, [&](int64_t begin, int64_t end) {
          EXPECT_LT(begin, end);
          ++calls;
          for (int64_t i = begin; i < end; ++i)
            ++hits[static_cast<size_t>(i)];
        });
        for (int64_t i = 0; i < count; ++i)
          ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1)
              << threads << " threads, count " << count << ", index " << i;
        EXPECT_LE(calls.load(), threads * ThreadPool::kChunksPerThread);
        EXPECT_LE(calls.load(), (count + grain - 1) / grain);
        if (count > 0 && grain >= count) {
          EXPECT_EQ(calls.load(), 1) << "a job under one grain runs on the caller alone";
        }
      }
    }
  }
}

TEST(ThreadPool, CutsLargeJobsIntoChunksPerThread) {
  ThreadPool pool(4);
  std::atomic<int> calls{0};
  pool.parallelFor(400, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls.load(), 4 * ThreadPool::kChunksPerThread);
}

// While one range is held up, the other thread runs all the rest: ranges
// are taken in turn, not dealt out one per thread (which would leave the
// held-up thread's later ranges waiting and fail after the deadline).
TEST(ThreadPool, ARangeHeldUpLeavesTheRestToTheOtherThreads) {
  ThreadPool pool(2);
  const int64_t count = 2 * ThreadPool::kChunksPerThread;
  std::atomic<int> others{0};
  std::atomic<bool> sawAll{false};
  pool.parallelFor(count, 1, [&](int64_t begin, int64_t end) {
    if (begin != 0) {
      others += static_cast<int>(end - begin);
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (others.load() < count - 1 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    sawAll = others.load() == count - 1;
  });
  EXPECT_TRUE(sawAll.load());
}

TEST(ThreadPool, RunsManyJobsBackToBack) {
  ThreadPool pool(3);
  int64_t total = 0;
  for (int job = 0; job < 2000; ++job) {
    std::vector<int64_t> partial(3 * ThreadPool::kChunksPerThread, 0);
    std::atomic<int> slot{0};
    pool.parallelFor(30, 1, [&](int64_t begin, int64_t end) {
      int s = slot++;
      for (int64_t i = begin; i < end; ++i)
        partial[static_cast<size_t>(s)] += i;
    });
    for (int64_t p : partial)
      total += p;
  }
  EXPECT_EQ(total, 2000 * (29 * 30 / 2));
}

} // namespace
} // namespace volt::cpu
