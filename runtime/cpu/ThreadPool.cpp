//===- ThreadPool.cpp -----------------------------------------------------===//
#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <cassert>

namespace volt::cpu {

ThreadPool::ThreadPool(int threads) : threads_(std::max(threads, 1)) {
  workers_.reserve(static_cast<size_t>(threads_ - 1));
  for (int i = 1; i < threads_; ++i)
    workers_.emplace_back([this, i] { workerLoop(i); });
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

void ThreadPool::runChunk(int chunk) {
  if (chunk >= chunks_)
    return;
  int64_t begin = count_ * chunk / chunks_;
  int64_t end = count_ * (chunk + 1) / chunks_;
  if (begin < end)
    trampoline_(fn_, begin, end);
}

void ThreadPool::run(int64_t count, int64_t grain, void *fn, Trampoline trampoline) {
  if (count <= 0)
    return;
  grain = std::max<int64_t>(grain, 1);
  int64_t byGrain = (count + grain - 1) / grain;
  int chunks = static_cast<int>(std::min<int64_t>(threads_, byGrain));
  if (chunks <= 1) {
    trampoline(fn, 0, count);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    count_ = count;
    chunks_ = chunks;
    fn_ = fn;
    trampoline_ = trampoline;
    pending_ = threads_ - 1;
    ++generation_;
  }
  wake_.notify_all();
  runChunk(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
}

void ThreadPool::workerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_)
        return;
      seen = generation_;
    }
    runChunk(index);
    bool last;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      last = --pending_ == 0;
    }
    if (last)
      done_.notify_one();
  }
}

} // namespace volt::cpu
