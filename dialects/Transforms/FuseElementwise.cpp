//===- FuseElementwise.cpp - fewer passes over the activations -----------===//
#include "dialects/Transforms/Passes.h"
#include "dialects/Volt/VoltOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace volt {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "dialects/Transforms/Passes.h.inc"
} // namespace volt

using namespace mlir;
using namespace volt::ir;

namespace {

/// r = add(residual, x); h = rms_norm(r) -> h, r = add_rms_norm(x, residual).
/// The residual is the operand that is itself a residual-stream value (an
/// embedding, an add, or an add_rms_norm's residual_out); the other is the
/// branch being added.
struct AddThenRmsNorm : OpRewritePattern<RmsNormOp> {
  using OpRewritePattern::OpRewritePattern;

  static bool isResidualStream(Value v) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return false;
    if (auto fused = dyn_cast<AddRmsNormOp>(def))
      return v == fused.getResidualOut();
    // A vocab-parallel embedding reaches the residual stream through the
    // all-reduce that completes it.
    if (auto sum = dyn_cast<AllReduceOp>(def))
      return sum.getX().getDefiningOp<EmbeddingOp>() != nullptr;
    // The MTP head's residual stream starts at mtp.fc, a GEMM of a concat.
    if (isa<LinearOp, QLinearOp>(def) && def->getOperand(0).getDefiningOp<ConcatOp>())
      return true;
    return isa<EmbeddingOp, AddOp>(def);
  }

  LogicalResult matchAndRewrite(RmsNormOp norm, PatternRewriter &rewriter) const override {
    auto add = norm.getX().getDefiningOp<AddOp>();
    if (!add)
      return failure();
    Value residual = add.getLhs(), branch = add.getRhs();
    if (!isResidualStream(residual)) {
      if (!isResidualStream(branch))
        return failure();
      std::swap(residual, branch);
    }
    rewriter.setInsertionPoint(norm);
    auto fused = rewriter.create<AddRmsNormOp>(norm.getLoc(), norm.getType(), add.getType(),
                                               branch, residual, norm.getWeight(),
                                               norm.getEpsAttr());
    rewriter.replaceOp(norm, fused.getResult());
    rewriter.replaceAllUsesWith(add.getResult(), fused.getResidualOut());
    rewriter.eraseOp(add);
    return success();
  }
};

/// qk_norm + rope -> qk_norm_rope; a rope without a norm becomes one too.
struct NormThenRope : OpRewritePattern<RopeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RopeOp rope, PatternRewriter &rewriter) const override {
    Value qkv = rope.getQkv(), qWeight, kWeight;
    FloatAttr eps = rewriter.getF32FloatAttr(1e-6f);
    if (auto norm = qkv.getDefiningOp<QkNormOp>(); norm && norm->hasOneUse()) {
      qkv = norm.getQkv();
      qWeight = norm.getQWeight();
      kWeight = norm.getKWeight();
      eps = norm.getEpsAttr();
    }
    rewriter.replaceOpWithNewOp<QkNormRopeOp>(
        rope, rope.getType(), qkv, rope.getPositions(), qWeight, kWeight,
        rope.getNumHeadsAttr(), rope.getNumKvHeadsAttr(), rope.getHeadDimAttr(), eps,
        rope.getThetaAttr(), rope.getRotaryDimAttr());
    return success();
  }
};

/// silu_mul(qlinear(x, gate|up)) -> qlinear(x, gate|up) {epilogue = "silu_mul"}.
struct SiluMulIntoGemm : OpRewritePattern<SiluMulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SiluMulOp silu, PatternRewriter &rewriter) const override {
    auto gemm = silu.getX().getDefiningOp<QLinearOp>();
    if (!gemm || !gemm->hasOneUse() || gemm.getEpilogue() || gemm.getBias())
      return failure();
    ArrayRef<int64_t> parts = gemm.getPartRows();
    if (parts.size() != 2 || parts[0] != parts[1])
      return failure();
    rewriter.replaceOpWithNewOp<QLinearOp>(
        silu, silu.getType(), gemm.getX(), gemm.getPacked(), gemm.getScales(), Value(),
        gemm.getGlobalScalesAttr(), gemm.getPartRowsAttr(), rewriter.getStringAttr("silu_mul"));
    rewriter.eraseOp(gemm);
    return success();
  }
};

struct FuseElementwisePass : volt::impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<AddThenRmsNorm, NormThenRope, SiluMulIntoGemm>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
