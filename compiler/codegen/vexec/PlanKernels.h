//===- PlanKernels.h - the GPU half of a plan: kernels and launches -*- C++ -*-===//
//
// The adapter between the planned vexec module and the codegen library:
// it reads the step program (launches, buffers, weights, the KV cache
// geometry) and the SKU from the module, plans every launch of every rank
// (Launches.h), adds the sampler's kernel (top_candidates over the
// logits' full vocabulary rows), builds the distinct kernels
// (BuildKernels.h), and writes them into the plan's FlatBuffer. The plan
// writer (compiler/plan) calls it for GPU targets.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/codegen/BuildKernels.h"
#include "compiler/codegen/Launches.h"
#include "runtime/schema/PlanFormat.h"
#include "runtime/support/Status.h"

#include "mlir/IR/BuiltinOps.h"

#include <vector>

namespace volt::codegen {

class PlanKernels {
public:
  /// Plans and builds the kernels of `module` (after --vexec-plan-memory)
  /// for its volt.target, for `ranks` tensor-parallel ranks.
  static Result<PlanKernels> build(mlir::ModuleOp module, uint32_t ranks,
                                   const CodegenOptions &options);

  /// Plan.kernels.
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<plan::Kernel>>>
  writeKernels(flatbuffers::FlatBufferBuilder &b) const;
  /// Op.launches of op `op` (in step-program order) on `rank`.
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<plan::Launch>>>
  writeLaunches(flatbuffers::FlatBufferBuilder &b, uint32_t rank, size_t op) const;

  /// Plan.sampler: the top_candidates kernel over full vocabulary rows.
  flatbuffers::Offset<plan::Sampler> writeSampler(flatbuffers::FlatBufferBuilder &b) const;

  const KernelSet &kernels() const { return kernels_; }
  /// launches()[rank][op].
  const std::vector<std::vector<std::vector<PlannedLaunch>>> &launches() const { return launches_; }

private:
  KernelSet kernels_;
  /// The sampler's kernel (an index into kernels_), candidates per
  /// sequence and threads per block.
  size_t samplerKernel_ = 0;
  uint32_t samplerK_ = 0, samplerThreads_ = 0;
  std::vector<std::vector<std::vector<PlannedLaunch>>> launches_;
};

/// The SKU facts codegen needs, from a module's volt.target attribute.
Result<TargetInfo> targetInfoOf(mlir::ModuleOp module);

} // namespace volt::codegen
