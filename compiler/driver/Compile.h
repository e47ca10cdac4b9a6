//===- Compile.h - `voltc compile`: a spec into a plan ------------*- C++ -*-===//
#pragma once

#include "compiler/pipeline/Pipeline.h"
#include "runtime/support/Status.h"

#include "mlir/IR/BuiltinOps.h"

#include <filesystem>
#include <functional>
#include <string>

namespace volt::driver {

struct CompileOptions {
  /// Stop after this phase and print it.
  pipeline::Phase emit = pipeline::Phase::Plan;
  /// Where the plan goes (its folder also receives weights.rankN.bin).
  std::filesystem::path output;
  /// Read weight ranges and block scales while importing (needs weights).
  bool verifyData = true;
  /// Progress of long steps (weight packing).
  std::function<void(const std::string &)> log;
};

/// Runs the pipeline up to `options.emit` and returns what `voltc compile
/// --emit=<phase>` prints: the IR of the MLIR phases, the memory table.
Result<std::string> compile(const std::filesystem::path &specFile, const CompileOptions &options);

/// The memory table of a module that went through --vexec-plan-memory.
std::string formatMemoryPlan(mlir::ModuleOp module);

} // namespace volt::driver
