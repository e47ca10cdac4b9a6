//===- VexecPlan.h - a vexec step as the plan numbers it ---------*- C++ -*-===//
//
// What both the plan emitter (compiler/plan) and the launch planner
// (compiler/codegen/vexec) read off a vexec `@step`: each launch's plan
// OpKind and typed params (decoded from its params dictionary, which the
// launch verifier has checked against runtime/schema/Ops.def), and the
// plan operand of every buffer value, numbered in the one order the plan
// lists weights and arena buffers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "dialects/Vexec/VexecOps.h"
#include "runtime/schema/PlanFormat.h"
#include "runtime/support/Status.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace volt::vexec {

/// The plan OpKind of a verified launch.
plan::OpKind launchKind(LaunchOp launch);

/// The launch's params as the kind's params table (defaults where the
/// dictionary leaves an optional param out).
plan::OpParamsUnion launchParams(LaunchOp launch);

/// The value of a schema enum (plan::StepInput, StepOutput, DType,
/// Epilogue) that an IR name stands for: its schema name in snake case
/// ("slot_mapping", "f16", "silu_mul").
template <typename Enum> std::optional<Enum> irNamed(llvm::StringRef name);
/// Every IR name of a schema enum, "a, b, c", for messages.
template <typename Enum> std::string irNames();

/// A cache group as the step uses it (plan.fbs: CacheGroup, before
/// memory planning sizes it).
struct CacheGroupInfo {
  plan::CacheKind kind = plan::CacheKind::PagedKv;
  /// "kv", or the state's group name.
  std::string name;
  /// The model layers, ascending.
  llvm::SmallVector<int64_t> layers;
  /// StateSlots: the state's element type and bytes per slot.
  mlir::Type dtype;
  int64_t slotBytes = 0;
};

/// A lowered `@step` (and `@draft`), in program order.
struct StepProgram {
  /// The target's launches, then the draft program's from
  /// draftLaunchesBegin (0: no draft program).
  llvm::SmallVector<LaunchOp> launches;
  size_t draftLaunchesBegin = 0;
  /// Plan.ranks[r].buffers, in order.
  llvm::SmallVector<AllocOp> allocs;
  /// Plan.ranks[r].weights, in order.
  llvm::SmallVector<WeightOp> weights;
  /// The cache groups, in Cache-operand order: the paged KV group of every
  /// `vexec.kv_cache` first (if any), then each `vexec.state` group in the
  /// order the step first uses it. Cache operands count their layers in
  /// that order.
  llvm::SmallVector<CacheGroupInfo> caches;
  /// The plan operand of every buffer value.
  llvm::DenseMap<mlir::Value, plan::Operand> operands;
};

/// Collects `step` (a function of vexec ops) and, when given, the MTP
/// head's `draft` after it: one numbering of weights (a weight both use is
/// one entry), buffers and cache layers. The states of one group must
/// agree on dtype and slot size.
Result<StepProgram> collectStep(mlir::func::FuncOp step, mlir::func::FuncOp draft = {});

} // namespace volt::vexec
