//===- ThreadPool.cpp -----------------------------------------------------===//
#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <cassert>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace volt::cpu {
namespace {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

/// Spins until done() or kSpinMicroseconds have passed; returns done().
template <typename Done> bool spinUntil(Done &&done) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::microseconds(ThreadPool::kSpinMicroseconds);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done())
        return true;
      cpuRelax();
    }
    if (Clock::now() >= deadline)
      return done();
  }
}

} // namespace

ThreadPool::ThreadPool(int threads) : threads_(std::max(threads, 1)) {
  workers_.reserve(static_cast<size_t>(threads_ - 1));
  for (int i = 1; i < threads_; ++i)
    workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread &t : workers_)
    t.join();
}

void ThreadPool::runChunks() {
  for (;;) {
    const int chunk = nextChunk_.fetch_add(1, std::memory_order_relaxed);
    if (chunk >= chunks_)
      return;
    int64_t begin = count_ * chunk / chunks_;
    int64_t end = count_ * (chunk + 1) / chunks_;
    if (begin < end)
      trampoline_(fn_, begin, end);
  }
}

void ThreadPool::run(int64_t count, int64_t grain, void *fn, Trampoline trampoline) {
  if (count <= 0)
    return;
  grain = std::max<int64_t>(grain, 1);
  int64_t byGrain = (count + grain - 1) / grain;
  // kChunksPerThread chunks per thread, taken in turn by whichever thread
  // is free: a thread that the machine slows down (another process, a
  // busy sibling hyperthread) leaves its share to the others instead of
  // holding up the op.
  int chunks = static_cast<int>(std::min<int64_t>(int64_t{threads_} * kChunksPerThread, byGrain));
  if (chunks <= 1 || threads_ == 1) {
    trampoline(fn, 0, count);
    return;
  }
  count_ = count;
  chunks_ = chunks;
  fn_ = fn;
  trampoline_ = trampoline;
  nextChunk_.store(0, std::memory_order_relaxed);
  pending_.store(threads_ - 1, std::memory_order_relaxed);
  {
    // Under the mutex, so that a worker about to sleep sees the new job.
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  runChunks();
  auto finished = [this] { return pending_.load(std::memory_order_acquire) == 0; };
  if (spinUntil(finished))
    return;
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, finished);
}

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  for (;;) {
    auto newJob = [&] { return generation_.load(std::memory_order_acquire) != seen; };
    if (!spinUntil(newJob)) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || newJob(); });
      if (stopping_)
        return;
    }
    seen = generation_.load(std::memory_order_acquire);
    runChunks();
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Under the mutex, so that a caller about to sleep sees the count.
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_one();
    }
  }
}

} // namespace volt::cpu
