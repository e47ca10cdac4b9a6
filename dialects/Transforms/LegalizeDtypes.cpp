//===- LegalizeDtypes.cpp - BF16/FP32 to the kernels' FP16 ---------------===//
#include "dialects/Transforms/Passes.h"
#include "dialects/Volt/VoltOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cstdio>

namespace volt {
#define GEN_PASS_DEF_LEGALIZEDTYPES
#include "dialects/Transforms/Passes.h.inc"
} // namespace volt

using namespace mlir;

namespace {

/// FP16's largest finite value.
constexpr float kF16Max = 65504.0f;

Type withElement(Type t, Type elem) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor ? RankedTensorType::get(tensor.getShape(), elem) : t;
}

Type elementOf(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor ? tensor.getElementType() : Type();
}

struct LegalizeDtypesPass : volt::impl::LegalizeDtypesBase<LegalizeDtypesPass> {
  using LegalizeDtypesBase::LegalizeDtypesBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    Type f16 = Float16Type::get(ctx), f32 = Float32Type::get(ctx);
    Type residual;
    if (residualDtype == "f16")
      residual = f16;
    else if (residualDtype == "f32")
      residual = f32;
    else {
      module.emitError() << "residual-dtype must be f16 or f32, found '" << residualDtype << "'";
      return signalPassFailure();
    }

    WalkResult walk = module.walk([&](Operation *op) -> WalkResult {
      if (auto w = dyn_cast<volt::ir::WeightOp>(op)) {
        Type elem = elementOf(w.getType());
        // The gated delta rule reads its decay parameters in FP32.
        bool needsF32 = llvm::any_of(w->getUses(), [](OpOperand &use) {
          auto g = dyn_cast<volt::ir::GatedDeltaRuleOp>(use.getOwner());
          return g && (use.get() == g.getALog() || use.get() == g.getDtBias());
        });
        if (needsF32) {
          Value(w.getResult()).setType(withElement(w.getType(), f32));
          return WalkResult::advance();
        }
        if (elem.isF16())
          return WalkResult::advance();
        float absMax = w.getMaxAbs() ? w.getMaxAbs()->convertToFloat() : 0.0f;
        Type to = f16;
        if (absMax > kF16Max) {
          if (!allowFp32Weights) {
            char text[160];
            std::snprintf(text, sizeof text,
                          "' holds values up to %g, beyond FP16's largest %g; the kernels "
                          "compute in FP16 (allow FP32 weights to keep it in FP32)",
                          absMax, kF16Max);
            return w.emitError() << "weight '"
                                 << cast<StringAttr>(w.getNames()[0]).getValue() << text;
          }
          to = f32;
        }
        Value(w.getResult()).setType(withElement(w.getType(), to));
        return WalkResult::advance();
      }
      // The MTP head's residual stream starts at mtp.fc, a GEMM of a concat.
      bool residualStream = isa<volt::ir::EmbeddingOp, volt::ir::AddOp>(op) ||
                            (isa<volt::ir::LinearOp>(op) &&
                             op->getOperand(0).getDefiningOp<volt::ir::ConcatOp>());
      for (OpResult r : op->getResults()) {
        Type elem = elementOf(r.getType());
        if (!elem)
          continue;
        if (residualStream && isa<FloatType>(elem))
          r.setType(withElement(r.getType(), residual));
        else if (elem.isBF16())
          r.setType(withElement(r.getType(), f16));
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    // Function results follow what their return ops now return.
    module.walk([&](func::FuncOp fn) {
      if (fn.isExternal())
        return;
      auto ret = cast<func::ReturnOp>(fn.getBody().back().getTerminator());
      fn.setType(FunctionType::get(ctx, fn.getArgumentTypes(), ret.getOperandTypes()));
    });
  }
};

} // namespace
