//===- ImportModel.h - from an ingested model to the volt dialect -*- C++ -*-===//
//
// Builds the `@step` function of one serving step from the model
// description and the deployment spec: the whole decoder over a symbolic
// token count, with weights as `volt.weight` / `volt.nvfp4_weight` values
// and every NVFP4 weight feeding its linear through an explicit
// `volt.dequant`. The spec, the SKU and the model's facts travel as module
// attributes (`volt.deployment`, `volt.target`, `volt.model`), so that every
// later pass reads them from the IR it is given.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/model/Model.h"
#include "compiler/spec/DeploySpec.h"
#include "runtime/support/Status.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace volt::import {

struct ImportOptions {
  /// The context length the plan serves (the spec's, or the model's).
  int64_t maxModelLen = 0;
  /// Read dense weights to record their largest magnitude (`max_abs`), which
  /// dtype legalisation checks against FP16's range. Needs the weights.
  bool readWeightRanges = true;
  /// Quantize dense linears to NVFP4 (`weights: {quantize: nvfp4}`): all but
  /// the router, shared-expert gate and LM head, as ModelOpt's recipes do.
  bool quantizeNvfp4 = false;
};

/// Registers the dialects an imported module uses.
void loadDialects(mlir::MLIRContext &context);

/// Imports `model` for `spec`. Errors (a model volt cannot express) name
/// the weight and say why.
Result<mlir::OwningOpRef<mlir::ModuleOp>> importModel(mlir::MLIRContext &context,
                                                      const spec::DeploySpec &spec,
                                                      const model::Model &model,
                                                      const ImportOptions &options);

} // namespace volt::import
