//===- RankThreads.h - one long-lived thread per extra rank ------*- C++ -*-===//
//
// A step is enqueued on every rank's stream at once: NCCL's collectives for
// several GPUs of one process must be issued from different threads (or
// one group call), so rank r > 0 always runs on thread r, and the caller
// runs rank 0. The threads live as long as the backend, instead of being
// started and joined at every step (tens of microseconds each, next to a
// host side of a decode step that is otherwise about as long).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace volt::cuda {

class RankThreads {
public:
  /// Starts ranks - 1 threads (none for one rank).
  explicit RankThreads(size_t ranks);
  ~RankThreads();
  RankThreads(const RankThreads &) = delete;
  RankThreads &operator=(const RankThreads &) = delete;

  /// Calls fn(r) for every rank at once, rank r > 0 on its own thread and
  /// rank 0 on the caller's; returns when every call has returned. One run
  /// at a time.
  void run(const std::function<void(size_t rank)> &fn);

private:
  void loop(size_t rank);

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(size_t)> *job_ = nullptr;
  uint64_t generation_ = 0;
  size_t pending_ = 0;
  bool quit_ = false;
};

} // namespace volt::cuda
