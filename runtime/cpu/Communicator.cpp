//===- Communicator.cpp ---------------------------------------------------===//
#include "runtime/cpu/Communicator.h"

#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace volt::cpu {

Communicator::Communicator(int ranks)
    : ranks_(ranks), barrier_(ranks), buffers_(static_cast<size_t>(ranks)),
      counts_(static_cast<size_t>(ranks)) {
  assert(ranks >= 1);
}

void Communicator::allReduce(int rank, void *buffer, int64_t count, DType dtype) {
  assert(rank >= 0 && rank < ranks_);
  buffers_[static_cast<size_t>(rank)] = buffer;
  counts_[static_cast<size_t>(rank)] = count;
  barrier_.arrive_and_wait();
  assert(std::all_of(counts_.begin(), counts_.end(), [&](int64_t c) { return c == count; }));

  const int64_t begin = count * rank / ranks_, end = count * (rank + 1) / ranks_;
  constexpr int64_t kChunk = 1024;
  float acc[kChunk], part[kChunk];
  for (int64_t c0 = begin; c0 < end; c0 += kChunk) {
    const int64_t n = std::min(kChunk, end - c0);
    for (int r = 0; r < ranks_; ++r) {
      void *src = buffers_[static_cast<size_t>(r)];
      float *dst = r == 0 ? acc : part;
      if (dtype == DType::F16)
        detail::halfToFloat(static_cast<const uint16_t *>(src) + c0, dst, n);
      else
        std::memcpy(dst, static_cast<const float *>(src) + c0, static_cast<size_t>(n) * 4);
      if (r > 0)
        for (int64_t i = 0; i < n; ++i)
          acc[i] += part[i];
    }
    for (int r = 0; r < ranks_; ++r) {
      void *dst = buffers_[static_cast<size_t>(r)];
      if (dtype == DType::F16)
        detail::floatToHalf(acc, static_cast<uint16_t *>(dst) + c0, n);
      else
        std::memcpy(static_cast<float *>(dst) + c0, acc, static_cast<size_t>(n) * 4);
    }
  }
  // Nobody may reuse its buffer, or publish the next call's, before every
  // slice is written.
  barrier_.arrive_and_wait();
}

void Communicator::allGather(int rank, const void *in, void *out, int64_t rows, int64_t colsPerRank,
                             DType dtype) {
  assert(rank >= 0 && rank < ranks_);
  buffers_[static_cast<size_t>(rank)] = const_cast<void *>(in);
  counts_[static_cast<size_t>(rank)] = rows * colsPerRank;
  barrier_.arrive_and_wait();
  assert(std::all_of(counts_.begin(), counts_.end(),
                     [&](int64_t c) { return c == rows * colsPerRank; }));
  const size_t element = dtypeSize(dtype);
  const size_t sliceBytes = static_cast<size_t>(colsPerRank) * element;
  for (int64_t row = 0; row < rows; ++row)
    for (int r = 0; r < ranks_; ++r)
      std::memcpy(static_cast<char *>(out) + (static_cast<size_t>(row * ranks_ + r)) * sliceBytes,
                  static_cast<const char *>(buffers_[static_cast<size_t>(r)]) +
                      static_cast<size_t>(row) * sliceBytes,
                  sliceBytes);
  barrier_.arrive_and_wait();
}

} // namespace volt::cpu
