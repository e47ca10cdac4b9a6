//===- ThreadPool.h - the worker threads the cpu ops split work over -*- C++ -*-===//
//
// Every cpu op takes a ThreadPool and splits its outputs into contiguous
// ranges, which the threads take in turn. Each output element is computed by
// one thread with the same code whatever the split, so results do not depend
// on the thread count or on which thread ran what (the tests check 1 vs 4
// threads bit for bit).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace volt::cpu {

/// A fixed set of worker threads. The thread that calls parallelFor works
/// too, so a pool of `threads` runs on `threads` threads in all, and a pool of
/// one starts none. One parallelFor runs at a time per pool; it is not
/// reentrant (an op must not call parallelFor from inside its body).
///
/// A step is a few hundred short parallelFors, so between them the workers
/// (and the caller, waiting for them) spin for a while before they sleep:
/// handing a job over then costs a cache line, not a futex wake-up. The
/// spin is bounded (kSpinMicroseconds), so an idle pool sleeps.
class ThreadPool {
public:
  /// `threads` >= 1: the number of threads that share each parallelFor.
  explicit ThreadPool(int threads = 1);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int threads() const { return threads_; }

  /// How long an idle worker, or a caller waiting for the workers, spins
  /// before it blocks.
  static constexpr int kSpinMicroseconds = 200;

  /// Chunks a parallelFor is cut into per thread (fewer where `grain`
  /// allows fewer); each thread takes the next chunk when it is done.
  static constexpr int kChunksPerThread = 4;

  /// Calls body(begin, end) over contiguous ranges covering [0, count) and
  /// returns when all have finished. Ranges hold at least `grain` items (the
  /// last may hold fewer), so tiny loops do not pay for waking threads.
  template <typename Body> void parallelFor(int64_t count, int64_t grain, Body &&body) {
    using Fn = std::remove_reference_t<Body>;
    run(count, grain, &body,
        [](void *fn, int64_t begin, int64_t end) { (*static_cast<Fn *>(fn))(begin, end); });
  }

private:
  using Trampoline = void (*)(void *, int64_t, int64_t);
  void run(int64_t count, int64_t grain, void *fn, Trampoline trampoline);
  void workerLoop();
  void runChunks();

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  // The job being run: written before generation_ is bumped (under mutex_,
  // with a release store that the workers' acquire loads pair with).
  std::atomic<uint64_t> generation_{0};
  bool stopping_ = false;
  std::atomic<int> pending_{0};
  int chunks_ = 0;
  std::atomic<int> nextChunk_{0};
  int64_t count_ = 0;
  void *fn_ = nullptr;
  Trampoline trampoline_ = nullptr;
};

} // namespace volt::cpu
