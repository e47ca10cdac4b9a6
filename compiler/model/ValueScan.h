//===- ValueScan.h - every floating-point value of a checkpoint -*- C++ -*-===//
//
// `voltc check --deep`: reads every floating-point tensor of a checkpoint
// (BF16, F16 and F32 weights, FP8 weights, the NVFP4 block scales and global
// scales) and finds NaN and infinity, and negative scales. Packed NVFP4 data
// (U8) cannot hold either and is not read. Two threads read the mapped
// files front to back, so that the scan runs at the speed of the disk (or
// of the page cache when the files are in it).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/model/Checkpoint.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace volt::model {

/// One tensor with values it must not hold.
struct ValueFinding {
  std::string tensor;
  std::string file;
  uint64_t nans = 0;
  uint64_t infinities = 0;
  /// Negative values of a scale tensor (a block or global scale).
  uint64_t negatives = 0;
  /// The first bad element, in row-major order.
  uint64_t firstIndex = 0;
};

struct ValueScanProgress {
  uint64_t bytesDone = 0;
  uint64_t bytesTotal = 0;
  double seconds = 0;
};

struct ValueScanOptions {
  int threads = 2;
  /// Called from the scanning threads' coordinator about every 1 % of the
  /// bytes, and at the end.
  std::function<void(const ValueScanProgress &)> progress;
};

struct ValueScanReport {
  std::vector<ValueFinding> findings; ///< in checkpoint order
  uint64_t tensorsScanned = 0;
  uint64_t bytesScanned = 0;
  /// Bytes not read: integer tensors, NVFP4's packed data.
  uint64_t bytesSkipped = 0;
  double seconds = 0;
};

/// True for the dtypes the scan reads.
bool isScannedDType(DType dtype);
/// True when `name` is a scale tensor (NVFP4 block and global scales, FP8
/// weight scales, activation scales), which must also be ≥ 0.
bool isScaleTensor(const std::string &name);

/// Counts NaN, infinity and (for scales) negative values of one tensor's
/// data; `finding` gets the counts and the first bad index. True when the
/// tensor is clean.
bool scanValues(std::span<const uint8_t> data, DType dtype, bool scale, ValueFinding &finding);
/// The same for a piece of a tensor whose first element is `indexBase`.
bool scanValuesFrom(std::span<const uint8_t> data, DType dtype, bool scale, uint64_t indexBase,
                    ValueFinding &finding);

/// Scans every tensor of `checkpoint`.
ValueScanReport scanCheckpoint(const Checkpoint &checkpoint, const ValueScanOptions &options = {});

} // namespace volt::model
