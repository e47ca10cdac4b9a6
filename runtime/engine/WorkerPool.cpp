//===- WorkerPool.cpp - a parallel for over a step's sequences ------------===//
#include "runtime/engine/WorkerPool.h"

namespace volt::engine {

WorkerPool::WorkerPool(int threads) {
  for (int w = 1; w < threads; ++w)
    workers_.emplace_back([this, w] { work(w); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  start_.notify_all();
  for (std::thread &t : workers_)
    t.join();
}

void WorkerPool::drain(int worker) {
  std::unique_lock<std::mutex> lock(mu_);
  while (next_ < size_) {
    size_t i = next_++;
    const auto *job = job_;
    lock.unlock();
    (*job)(worker, i);
    lock.lock();
    if (++finished_ == size_)
      done_.notify_all();
  }
}

void WorkerPool::work(int worker) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_.wait(lock, [&] { return quit_ || generation_ != seen; });
      if (quit_)
        return;
      seen = generation_;
    }
    drain(worker);
  }
}

void WorkerPool::run(size_t n, const std::function<void(int, size_t)> &fn) {
  if (workers_.empty() || n < 2) {
    for (size_t i = 0; i < n; ++i)
      fn(0, i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    size_ = n;
    next_ = 0;
    finished_ = 0;
    ++generation_;
  }
  start_.notify_all();
  drain(0);
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return finished_ == size_; });
  job_ = nullptr;
  size_ = 0;
}

} // namespace volt::engine
