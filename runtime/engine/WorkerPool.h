//===- WorkerPool.h - a parallel for over a step's sequences ---*- C++ -*-===//
//
// Sampling a 150k-entry row costs a few hundred microseconds on one core,
// so a step of many sequences samples them on several threads. Private to
// the engine: the engine thread runs one `run` at a time and takes part in
// it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace volt::engine {

class WorkerPool {
public:
  /// `threads` in all, the calling thread included (1: no extra threads).
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool &) = delete;
  WorkerPool &operator=(const WorkerPool &) = delete;

  int threads() const { return int(workers_.size()) + 1; }

  /// Calls fn(worker, i) for every i in [0, n), worker in [0, threads()),
  /// spread over the threads; returns when all calls have returned.
  void run(size_t n, const std::function<void(int worker, size_t i)> &fn);

private:
  void work(int worker);
  void drain(int worker);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(int, size_t)> *job_ = nullptr;
  size_t size_ = 0;
  size_t next_ = 0;     // next index to hand out
  size_t finished_ = 0; // indices done
  uint64_t generation_ = 0;
  bool quit_ = false;
};

} // namespace volt::engine
