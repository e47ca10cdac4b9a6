//===- KernelDefs.h - the kernel registry ------------------------*- C++ -*-===//
//
// One descriptor per kernel template (Kernels.def): the op kind it
// implements, its launch planner, its workspace rule. Launch planning
// (Launches.h) dispatches through it; the tests iterate it (every template
// has a descriptor and every descriptor a template; every kernel runs in
// the host-emulated GPU plans). Free of MLIR.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/codegen/Launches.h"

#include <optional>
#include <span>
#include <string_view>

namespace volt::codegen {

struct LaunchContext;

struct KernelDef {
  /// templates/<name>.cu, and the entry point's name.
  std::string_view name;
  /// The op kind it implements; none for the sampler (Plan.sampler, which
  /// PlanKernels launches after the step program).
  std::optional<plan::OpKind> op;
  Result<PlannedLaunch> (*plan)(LaunchContext &c, const Variant &v) = nullptr;
  /// Bytes of kernel workspace a launch needs; null: none.
  uint64_t (*workspace)(const OpInfo &op, const Variant &v, const ProgramInfo &program) = nullptr;
};

/// Every kernel, the step program's in Kernels.def order, then the sampler's.
std::span<const KernelDef> allKernels();

/// The kernel named `name`; null when there is none.
const KernelDef *kernelNamed(std::string_view name);

namespace kernels {
// The planners and workspace rules Kernels.def names.
#define VOLT_KERNEL(name, OpKind, planner, workspace)                                              \
  Result<PlannedLaunch> planner(LaunchContext &c, const Variant &v);
#include "compiler/codegen/Kernels.def"
uint64_t attentionWorkspace(const OpInfo &op, const Variant &v, const ProgramInfo &program);
/// For kernels that need no workspace.
inline constexpr std::nullptr_t noWorkspace = nullptr;
} // namespace kernels

} // namespace volt::codegen
