//===- Pipeline.h - the compile pipeline, phase by phase ---------*- C++ -*-===//
#pragma once

#include "mlir/Pass/PassManager.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace volt::pipeline {

/// The phases `voltc compile --emit=<phase>` can stop after, in order.
enum class Phase {
  Volt,    ///< the imported graph
  Sharded, ///< dtypes legalised, dequant fused into GEMMs, one rank's shard
  Fused,   ///< elementwise fusions and kernel selection
  Vexec,   ///< buffers, weights and launches
  Memory,  ///< the memory plan
  Plan,    ///< the plan file
};

std::optional<Phase> parsePhase(std::string_view name);
std::vector<std::string> phaseNames();
const char *phaseName(Phase phase);

struct PipelineOptions {
  /// "f16" or "f32".
  std::string residualDtype = "f16";
};

/// Adds the passes that take an imported module to the end of `last`.
void buildPipeline(mlir::OpPassManager &pm, Phase last, const PipelineOptions &options);

/// Registers the pipeline as `--volt-pipeline` for volt-opt, with the
/// options `emit` (the last phase: sharded, fused, vexec or memory; default
/// memory) and `residual-dtype` (f16 or f32).
void registerPipeline();

} // namespace volt::pipeline
