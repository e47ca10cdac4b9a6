//===- Communicator.h - tensor-parallel collectives between threads -*- C++ -*-===//
//
// OpKind AllReduce and AllGather of runtime/schema/plan.fbs for the cpu
// backend, where each tensor-parallel rank is a thread of one process.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/Types.h"

#include <barrier>
#include <cstdint>
#include <vector>

namespace volt::cpu {

/// The collectives of `ranks` threads. Every rank's thread makes the same
/// sequence of calls with the same sizes; each call returns on a rank once
/// every rank has finished with the buffers it shares, so buffers may be
/// reused as soon as it returns. Results are the same on every rank and do
/// not depend on thread timing.
class Communicator {
public:
  explicit Communicator(int ranks);
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;

  int ranks() const { return ranks_; }

  /// In place on each rank's `buffer` of `count` elements: the sum over
  /// ranks, taken in FP32 in rank order 0, 1, ... and rounded once to
  /// `dtype`. Each rank sums one slice of the elements for everyone.
  void allReduce(int rank, void *buffer, int64_t count, DType dtype);

  /// out[r, c] (cols = ranks * colsPerRank) = rank (c / colsPerRank)'s
  /// in[r, c % colsPerRank]: the ranks' column slices concatenated in rank
  /// order. `in` [rows, colsPerRank], `out` [rows, cols]; exact copies.
  void allGather(int rank, const void *in, void *out, int64_t rows, int64_t colsPerRank,
                 DType dtype);

private:
  int ranks_;
  std::barrier<> barrier_;
  std::vector<void *> buffers_;
  std::vector<int64_t> counts_;
};

} // namespace volt::cpu
