//===- volt-opt - the MLIR pass driver for volt's dialects ---------------===//
//
// Parses volt/vexec IR, runs passes by flag, or voltc's whole pipeline
// (--volt-pipeline, compiler/pipeline), and prints the result: what lit
// tests and debugging use to look at one pass at a time.
//
//===----------------------------------------------------------------------===//
#include "compiler/pipeline/Pipeline.h"
#include "dialects/Transforms/Passes.h"
#include "dialects/Vexec/VexecDialect.h"
#include "dialects/Volt/VoltDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<volt::ir::VoltDialect, volt::vexec::VexecDialect, mlir::func::FuncDialect>();
  volt::registerVoltPasses();
  volt::pipeline::registerPipeline();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "volt pass driver\n", registry));
}
