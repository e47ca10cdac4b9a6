//===- SelectKernels.cpp - which kernel serves each op on the SKU ---------===//
//
// Every compute op gets `volt.kernels`: a list of variants, each serving
// token counts up to its `max_tokens` with one kernel template and its tile
// configuration. The numbers come from the SKU (module attribute
// `volt.target`): where a GEMM stops being bound by memory bandwidth
// (ridge point = FP16 tensor FLOP/s ÷ bandwidth), how much shared memory a
// block may use for double-buffered tiles, how many SMs need blocks.
//
//===----------------------------------------------------------------------===//
#include "dialects/Transforms/KernelCatalog.h"
#include "dialects/Transforms/Passes.h"
#include "dialects/Volt/VoltOps.h"

#include "mlir/IR/Builders.h"

namespace volt {
#define GEN_PASS_DEF_SELECTKERNELS
#include "dialects/Transforms/Passes.h.inc"
} // namespace volt

using namespace mlir;

namespace {

struct SelectKernelsPass : volt::impl::SelectKernelsBase<SelectKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto target = module->getAttrOfType<DictionaryAttr>("volt.target");
    if (!target) {
      module.emitError() << "kernel selection needs the module's volt.target attribute";
      return signalPassFailure();
    }
    auto targetInfo = volt::kernels::TargetInfo::fromAttr(target);
    if (failed(targetInfo)) {
      module.emitError() << "volt.target is missing SKU facts kernel selection needs";
      return signalPassFailure();
    }
    Builder b(&getContext());
    module.walk([&](Operation *op) {
      if (op->getDialect() && op->getDialect()->getNamespace() == "volt" &&
          !isa<volt::ir::WeightOp, volt::ir::Nvfp4WeightOp, volt::ir::DequantOp>(op))
        op->setAttr("volt.kernels", volt::kernels::select(b, op, *targetInfo));
    });
  }
};

} // namespace
