//===- KernelCatalog.h - the kernels volt has, and when each is used -*- C++ -*-===//
//
// The catalog names, for each op, the kernel templates (templates/<name>.cu)
// that implement it and the configuration each call site instantiates them
// with. Kernel selection records its choices in the IR; kernel codegen
// instantiates exactly these.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

#include <string>

namespace volt::kernels {

/// The SKU facts kernel selection reads (from the module's volt.target).
struct TargetInfo {
  std::string arch; ///< "sm_70", ..., "cpu"
  int64_t smCount = 0;
  double memoryBandwidthGbps = 0;
  double fp16TensorTflops = 0;
  int64_t sharedMemoryPerBlockOptinBytes = 0;

  bool isCpu() const { return arch == "cpu"; }
  /// Token count below which a GEMM on NVFP4 weights is bound by reading the
  /// weights even on tensor cores: FLOP/s ÷ bytes/s × 0.5625 bytes per
  /// weight ÷ 2 FLOPs per weight and token.
  double ridgeTokens() const;

  static mlir::FailureOr<TargetInfo> fromAttr(mlir::DictionaryAttr target);
};

/// Largest token count the GEMV kernels serve: each thread keeps one
/// accumulator per token in registers.
inline constexpr int64_t kGemvMaxTokens = 8;
/// "Every token count" for single-variant ops.
inline constexpr int64_t kAnyTokens = int64_t{1} << 30;

/// The variants for `op` on `target` (empty on the cpu target, whose
/// reference backend implements every op itself).
mlir::ArrayAttr select(mlir::Builder &b, mlir::Operation *op, const TargetInfo &target);

} // namespace volt::kernels
