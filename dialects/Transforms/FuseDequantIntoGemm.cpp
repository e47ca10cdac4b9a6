//===- FuseDequantIntoGemm.cpp - decode NVFP4 inside the GEMM ------------===//
#include "dialects/Transforms/Passes.h"
#include "dialects/Volt/VoltOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace volt {
#define GEN_PASS_DEF_FUSEDEQUANTINTOGEMM
#include "dialects/Transforms/Passes.h.inc"
} // namespace volt

using namespace mlir;
using namespace volt::ir;

namespace {

/// linear(x, dequant(packed, scales), bias?) -> qlinear(x, packed, scales, bias?)
struct LinearOfDequant : OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearOp op, PatternRewriter &rewriter) const override {
    auto dequant = op.getWeight().getDefiningOp<DequantOp>();
    if (!dequant)
      return failure();
    rewriter.replaceOpWithNewOp<QLinearOp>(
        op, op.getType(), op.getX(), dequant.getPacked(), dequant.getScales(), op.getBias(),
        dequant.getGlobalScalesAttr(), dequant.getPartRowsAttr(), StringAttr());
    return success();
  }
};

/// moe_experts over dequantized gate|up and down -> moe_qexperts.
struct ExpertsOfDequant : OpRewritePattern<MoeExpertsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MoeExpertsOp op, PatternRewriter &rewriter) const override {
    auto gateUp = op.getGateUp().getDefiningOp<DequantOp>();
    auto down = op.getDown().getDefiningOp<DequantOp>();
    if (!gateUp || !down)
      return failure();
    rewriter.replaceOpWithNewOp<MoeQExpertsOp>(
        op, op.getType(), op.getX(), op.getIds(), op.getWeights(), gateUp.getPacked(),
        gateUp.getScales(), down.getPacked(), down.getScales(), gateUp.getGlobalScalesAttr(),
        down.getGlobalScalesAttr());
    return success();
  }
};

struct FuseDequantIntoGemmPass
    : volt::impl::FuseDequantIntoGemmBase<FuseDequantIntoGemmPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<LinearOfDequant, ExpertsOfDequant>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
