//===- LaunchContext.h - what kernel planners share --------------*- C++ -*-===//
//
// The context a kernel's launch planner (compiler/codegen/kernels/) is
// called with, and the helpers every planner uses: grid rules by rows,
// thread counts from the variant, the launch of a kernel instance.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/codegen/Launches.h"
#include "runtime/numerics/Nvfp4.h"

#include <algorithm>
#include <string>

namespace volt::codegen {

/// The E2M1 conversion leaves elements 2^-14 of their value; the epilogue
/// puts it back together with the global scale (runtime/numerics/Nvfp4.h).
inline constexpr float kE2M1Bias = nvfp4::kEpilogueBias;

/// Token columns of a GEMV tile (templates/common/gemv.cuh).
inline constexpr int64_t kGemvMaxTokens = 8;

/// What a kernel's planner sees: the op, the step program, the SKU, and the
/// registry of the program's distinct kernels it adds its instance to.
struct LaunchContext {
  const OpInfo &op;
  const ProgramInfo &program;
  const TargetInfo &target;
  KernelRegistry &registry;

  Error error(const std::string &what) const {
    return Error("op '" + op.name + "' (" + plan::EnumNameOpKind(op.kind) + "): " + what);
  }
  const OperandInfo &at(size_t i) const { return op.operands[i]; }
  /// The op's params table (planLaunches checked its type).
  template <typename T> const T &params() const { return *static_cast<const T *>(op.params.value); }
};

/// Rows of an activation operand: T, or S for per-sequence buffers.
inline GridRule rowsRule(const OperandInfo &o, uint32_t perBlock = 1) {
  return o.perRow ? GridRule::rows(perBlock) : GridRule::tokens(perBlock);
}

inline LaunchArg rowsArg(const OperandInfo &o) {
  return o.perRow ? LaunchArg::rowCount() : LaunchArg::tokenCount();
}

inline uint32_t configThreads(const Variant &v, uint32_t fallback) {
  auto it = v.config.find("threads");
  int64_t t = it == v.config.end() ? fallback : it->second;
  return static_cast<uint32_t>(std::clamp<int64_t>(t / 32 * 32, 32, 1024));
}

inline PlannedLaunch launch(LaunchContext &c, const Variant &v, KernelRequest request) {
  PlannedLaunch l;
  l.maxTokens = static_cast<uint32_t>(std::min<int64_t>(v.maxTokens, UINT32_MAX));
  l.block[0] = request.threads;
  l.sharedBytes = request.dynamicSharedBytes;
  l.kernel = c.registry.add(request);
  return l;
}

} // namespace volt::codegen
