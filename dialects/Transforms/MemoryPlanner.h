//===- MemoryPlanner.h - placing buffers by liveness -------------*- C++ -*-===//
//
// The arena placement behind --vexec-plan-memory, free of MLIR so that its
// properties are tested directly (tests/unit/memory): buffers whose
// lifetimes overlap never share bytes, every offset is aligned, and the
// arena is never below the lower bound (the largest sum of simultaneously
// live bytes).
//
// Greedy by size: the largest buffers are placed first, each at the
// smallest gap among the buffers it overlaps in time that holds it (best
// fit), else after them. Large buffers placed first leave gaps that small
// ones fill.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace volt::memory {

/// Every buffer starts on this boundary (a 256-byte segment suits both
/// 128-bit vector loads and the GPU's memory transactions).
inline constexpr int64_t kAlignment = 256;

inline int64_t alignUp(int64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

/// A buffer: its size and the first and last step-program op that use it.
struct Interval {
  int64_t bytes = 0;
  int64_t first = 0;
  int64_t last = 0;
};

struct Placement {
  std::vector<int64_t> offsets;
  int64_t arenaBytes = 0;
  /// The largest sum of bytes live at one op: no placement can do better.
  int64_t lowerBound = 0;
};

inline bool overlapInTime(const Interval &a, const Interval &b) {
  return a.first <= b.last && b.first <= a.last;
}

inline Placement place(const std::vector<Interval> &buffers) {
  Placement p;
  size_t n = buffers.size();
  p.offsets.assign(n, 0);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes)
      return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].first < buffers[b].first;
  });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const Interval &buf = buffers[i];
    std::vector<size_t> conflicts;
    for (size_t j : placed)
      if (overlapInTime(buf, buffers[j]))
        conflicts.push_back(j);
    std::sort(conflicts.begin(), conflicts.end(),
              [&](size_t a, size_t b) { return p.offsets[a] < p.offsets[b]; });
    int64_t cursor = 0, bestOffset = -1, bestGap = INT64_MAX;
    for (size_t j : conflicts) {
      int64_t gap = p.offsets[j] - cursor;
      if (gap >= buf.bytes && gap < bestGap) {
        bestGap = gap;
        bestOffset = cursor;
      }
      cursor = std::max(cursor, p.offsets[j] + buffers[j].bytes);
    }
    p.offsets[i] = bestOffset >= 0 ? bestOffset : cursor;
    p.arenaBytes = std::max(p.arenaBytes, p.offsets[i] + buf.bytes);
    placed.push_back(i);
  }
  // The lower bound: the most bytes live at any one op.
  int64_t lastOp = 0;
  for (const Interval &b : buffers)
    lastOp = std::max(lastOp, b.last);
  std::vector<int64_t> live(static_cast<size_t>(lastOp) + 2, 0);
  for (const Interval &b : buffers) {
    live[static_cast<size_t>(b.first)] += b.bytes;
    live[static_cast<size_t>(b.last) + 1] -= b.bytes;
  }
  int64_t running = 0;
  for (int64_t delta : live) {
    running += delta;
    p.lowerBound = std::max(p.lowerBound, running);
  }
  return p;
}

} // namespace volt::memory
