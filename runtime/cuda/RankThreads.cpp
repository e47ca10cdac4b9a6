//===- RankThreads.cpp ----------------------------------------------------===//
#include "runtime/cuda/RankThreads.h"

namespace volt::cuda {

RankThreads::RankThreads(size_t ranks) {
  for (size_t r = 1; r < ranks; ++r)
    threads_.emplace_back([this, r] { loop(r); });
}

RankThreads::~RankThreads() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  start_.notify_all();
  for (std::thread &t : threads_)
    t.join();
}

void RankThreads::run(const std::function<void(size_t)> &fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    pending_ = threads_.size();
    ++generation_;
  }
  start_.notify_all();
  fn(0);
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void RankThreads::loop(size_t rank) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(size_t)> *job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_.wait(lock, [&] { return quit_ || generation_ != seen; });
      if (quit_)
        return;
      seen = generation_;
      job = job_;
    }
    (*job)(rank);
    std::lock_guard<std::mutex> lock(mu_);
    if (--pending_ == 0)
      done_.notify_all();
  }
}

} // namespace volt::cuda
