//===- Scratch.h - buffers a thread keeps across ops -------------*- C++ -*-===//
//
// Private to runtime/cpu. The ops' row buffers live in each thread and are
// only resized, so a step allocates nothing once it has run at its largest
// shape. A thread's buffers of one element type are told apart by slot:
// those an op's caller holds for its workers to read and those the op's
// body uses (which the calling thread runs too) take different slots. Ops
// do not nest, so different ops may use the same slots. The GEMMs keep
// their own (Matmul.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/Kernels.h"

#include <cassert>
#include <cstdint>
#include <vector>

namespace volt::cpu::detail {

inline constexpr int kScratchSlots = 8;

/// The calling thread's buffer `slot` of T, resized to `size` (elements
/// kept from earlier use are not cleared). Workers of a parallelFor that
/// read a buffer of the caller must be given the reference, not call this.
template <typename T = float> std::vector<T> &threadBuffer(int slot, int64_t size) {
  static thread_local std::vector<T> buffers[kScratchSlots];
  assert(slot >= 0 && slot < kScratchSlots && size >= 0);
  std::vector<T> &b = buffers[slot];
  b.resize(static_cast<size_t>(size));
  return b;
}

/// threadBuffer(slot, n) holding the FP16 values h[0..n) in FP32 (a norm's
/// weight, widened once by the op's caller for its workers).
inline const float *widenedHalves(const uint16_t *h, int64_t n, int slot) {
  std::vector<float> &w = threadBuffer<float>(slot, n);
  halfToFloat(h, w.data(), n);
  return w.data();
}

} // namespace volt::cpu::detail
