//===- ShardTensorParallel.cpp - one rank's program ----------------------===//
//
// The rules are dialects/Transforms/ShardingRules.h (which `voltc check`
// applies before any IR exists, through compiler/model/TensorParallel.h):
// q|k|v by heads, o_proj and down row-parallel with an all-reduce before the
// residual add, gate|up and the experts column-parallel along the width,
// router and shared-expert gate replicated, embedding and LM head
// vocab-parallel when the ranks divide the vocabulary.
//
// A GEMM's role is read from the graph around it (what feeds it, what it
// feeds), so the pass works on any graph the importer can build.
//
//===----------------------------------------------------------------------===//
#include "dialects/Transforms/Passes.h"
#include "dialects/Transforms/ShardingRules.h"
#include "dialects/Volt/VoltOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace volt {
#define GEN_PASS_DEF_SHARDTENSORPARALLEL
#include "dialects/Transforms/Passes.h.inc"
} // namespace volt

using namespace mlir;
using namespace volt::ir;

namespace {

enum class Role { Qkv, RowParallel, ColumnParallel, Replicated, LmHead };

/// How one part of a weight splits: along `dim` into `parts` slices, each
/// shared by `replicas` ranks.
struct PartSplit {
  int64_t dim;
  int64_t parts;
  int64_t replicas;
};

RankedTensorType ranked(Value v) { return cast<RankedTensorType>(v.getType()); }

RankedTensorType withShape(Value v, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, ranked(v).getElementType());
}

RankedTensorType withLastDim(Value v, int64_t cols) {
  SmallVector<int64_t> shape(ranked(v).getShape());
  shape.back() = cols;
  return withShape(v, shape);
}

struct ShardTensorParallelPass : volt::impl::ShardTensorParallelBase<ShardTensorParallelPass> {
  using ShardTensorParallelBase::ShardTensorParallelBase;

  int64_t tp = 1, heads = 0, kvHeads = 0, headDim = 0, vocab = 0;
  int64_t kvParts = 1, kvReplicas = 1;
  llvm::DenseSet<Operation *> shardedWeights;

  int64_t intAttr(DictionaryAttr dict, StringRef name) {
    auto a = dict ? dict.getAs<IntegerAttr>(name) : IntegerAttr();
    return a ? a.getInt() : 0;
  }

  ArrayAttr shardsAttr(Builder &b, ArrayRef<PartSplit> splits) {
    SmallVector<Attribute> attrs;
    for (const PartSplit &s : splits)
      attrs.push_back(ShardAttr::get(b.getContext(), s.dim, s.parts, s.replicas));
    return b.getArrayAttr(attrs);
  }

  /// Shrinks a weight value's producer (volt.weight, or volt.nvfp4_weight
  /// through an optional volt.dequant) to one rank's slice. `splits` has
  /// one entry per part; `dim` counts from the end (-1: columns, -2: rows).
  LogicalResult shardWeight(Operation *user, Value weight, ArrayRef<PartSplit> splits,
                            StringRef what) {
    Operation *def = weight.getDefiningOp();
    if (auto dq = dyn_cast_or_null<DequantOp>(def)) {
      if (failed(shardWeight(user, dq.getPacked(), splits, what)))
        return failure();
      SmallVector<int64_t> shape(ranked(dq.getPacked()).getShape());
      shape.back() *= 2;
      Value(dq.getResult()).setType(withShape(dq.getResult(), shape));
      auto nv = dq.getPacked().getDefiningOp<Nvfp4WeightOp>();
      dq.setPartRowsAttr(nv.getPartRowsAttr());
      return success();
    }
    if (!def || !isa<WeightOp, Nvfp4WeightOp>(def))
      return user->emitOpError() << "expects its " << what << " from volt.weight or "
                                 << "volt.nvfp4_weight to shard it";
    if (shardedWeights.contains(def))
      return success();
    shardedWeights.insert(def);
    Builder b(def->getContext());

    ArrayRef<int64_t> partRows = isa<WeightOp>(def) ? cast<WeightOp>(def).getPartRows()
                                                    : cast<Nvfp4WeightOp>(def).getPartRows();
    Value first = def->getResult(0);
    int64_t rank = ranked(first).getRank();
    bool nvfp4 = isa<Nvfp4WeightOp>(def);
    SmallVector<int64_t> logical(ranked(first).getShape());
    if (nvfp4)
      logical.back() *= 2;
    SmallVector<int64_t> newRows(partRows.begin(), partRows.end());
    SmallVector<PartSplit> absolute;
    bool splitColumns = false;
    int64_t columnParts = 1;
    for (size_t p = 0; p < partRows.size(); ++p) {
      PartSplit s = splits.size() == 1 ? splits[0] : splits[p];
      int64_t dim = rank + s.dim;
      absolute.push_back({dim, s.parts, s.replicas});
      if (s.parts == 1)
        continue;
      bool rows = (rank == 1 && s.dim == -1) || s.dim == -2;
      if (rows) {
        if (partRows[p] % s.parts != 0)
          return user->emitOpError() << "cannot split the " << partRows[p] << " rows of part " << p
                                     << " of its " << what << " over " << s.parts << " ranks";
        // A part read in runs (a row view with groups) splits by whole runs.
        std::optional<ArrayRef<int64_t>> views = isa<WeightOp>(def)
                                                     ? cast<WeightOp>(def).getViews()
                                                     : cast<Nvfp4WeightOp>(def).getViews();
        if (views)
          for (size_t i = p; i < views->size() / 5; i += partRows.size())
            if ((*views)[5 * i + 3] > 1 && (*views)[5 * i + 3] % s.parts != 0)
              return user->emitOpError()
                     << "cannot split part " << p << " of its " << what << ", read in "
                     << (*views)[5 * i + 3] << " runs of its tensor, over " << s.parts
                     << " ranks";
        newRows[p] = partRows[p] / s.parts;
      } else {
        splitColumns = true;
        columnParts = s.parts;
      }
    }
    int64_t rowsTotal = 0;
    for (int64_t r : newRows)
      rowsTotal += r;
    SmallVector<int64_t> shape = logical;
    shape[rank == 1 ? 0 : rank - 2] = rowsTotal;
    if (splitColumns) {
      int64_t cols = logical.back();
      if (cols % columnParts != 0 || (nvfp4 && (cols / columnParts) % 16 != 0))
        return user->emitOpError()
               << "cannot split the " << cols << " columns of its " << what << " over "
               << columnParts << " ranks" << (nvfp4 ? " into whole 16-element NVFP4 blocks" : "")
               << "; use a smaller tensor_parallel_size";
      shape.back() = cols / columnParts;
    }
    if (auto w = dyn_cast<WeightOp>(def)) {
      Value(w.getResult()).setType(withShape(w.getResult(), shape));
      w.setPartRowsAttr(b.getDenseI64ArrayAttr(newRows));
      w.setShardsAttr(shardsAttr(b, absolute));
    } else {
      auto nv = cast<Nvfp4WeightOp>(def);
      SmallVector<int64_t> packed = shape, scales = shape;
      packed.back() = shape.back() / 2;
      scales.back() = shape.back() / 16;
      Value(nv.getPacked()).setType(withShape(nv.getPacked(), packed));
      Value(nv.getScales()).setType(withShape(nv.getScales(), scales));
      nv.setPartRowsAttr(b.getDenseI64ArrayAttr(newRows));
      nv.setShardsAttr(shardsAttr(b, absolute));
    }
    return success();
  }

  /// The role of a GEMM from the graph around it.
  Role roleOf(Operation *gemm) {
    Value x = gemm->getOperand(0);
    Operation *producer = x.getDefiningOp();
    if (producer && isa<AttentionOp, SiluMulOp, GatedDeltaRuleOp, SigmoidMulOp>(producer))
      return Role::RowParallel;
    if (auto q = dyn_cast_or_null<QLinearOp>(producer); q && q.getEpilogue())
      return Role::RowParallel;
    if (producer && isa<GatherRowsOp>(producer))
      return Role::LmHead;
    if (auto q = dyn_cast<QLinearOp>(gemm); q && q.getEpilogue())
      return Role::ColumnParallel;
    for (Operation *user : gemm->getResult(0).getUsers()) {
      if (isa<QkNormOp, RopeOp, QkNormRopeOp, AttentionOp>(user))
        return Role::Qkv;
      if (isa<SiluMulOp>(user))
        return Role::ColumnParallel;
      // Linear attention's q|k|v (into the conv), z and b|a (into the rule),
      // and gated attention's gate: split with the heads, each part by tp.
      if (isa<CausalConv1dOp, GatedDeltaRuleOp>(user))
        return Role::ColumnParallel;
      if (auto g = dyn_cast<SigmoidMulOp>(user); g && g.getGate() == gemm->getResult(0))
        return Role::ColumnParallel;
      if (isa<MoeRouterOp>(user))
        return Role::Replicated;
      if (auto g = dyn_cast<SigmoidGateAddOp>(user); g && g.getGate() == gemm->getResult(0))
        return Role::Replicated;
    }
    return Role::Replicated;
  }

  /// A quantized GEMM repeats its weight's part_rows; keep them in step.
  void syncPartRows(Operation *gemm) {
    if (auto q = dyn_cast<QLinearOp>(gemm))
      if (auto nv = q.getPacked().getDefiningOp<Nvfp4WeightOp>())
        q.setPartRowsAttr(nv.getPartRowsAttr());
  }

  LogicalResult shardGemm(Operation *gemm, llvm::DenseSet<Value> &partial) {
    LogicalResult r = shardGemmImpl(gemm, partial);
    syncPartRows(gemm);
    return r;
  }

  LogicalResult shardGemmImpl(Operation *gemm, llvm::DenseSet<Value> &partial) {
    Value weight = gemm->getOperand(1);
    Value bias;
    if (auto l = dyn_cast<LinearOp>(gemm))
      bias = l.getBias();
    else
      bias = cast<QLinearOp>(gemm).getBias();
    Role role = roleOf(gemm);
    Value result = gemm->getResult(0);
    switch (role) {
    case Role::Replicated:
      return success();
    case Role::Qkv: {
      SmallVector<PartSplit> splits = {
          {-2, tp, 1}, {-2, kvParts, kvReplicas}, {-2, kvParts, kvReplicas}};
      if (failed(shardWeight(gemm, weight, splits, "q|k|v weight")))
        return failure();
      if (bias) {
        SmallVector<PartSplit> biasSplits = {
            {-1, tp, 1}, {-1, kvParts, kvReplicas}, {-1, kvParts, kvReplicas}};
        if (failed(shardWeight(gemm, bias, biasSplits, "q|k|v bias")))
          return failure();
      }
      int64_t localKv = kvHeads / kvParts;
      result.setType(withLastDim(result, (heads / tp + 2 * localKv) * headDim));
      return success();
    }
    case Role::ColumnParallel: {
      if (failed(shardWeight(gemm, weight, {{-2, tp, 1}}, "gate|up weight")))
        return failure();
      result.setType(withLastDim(result, ranked(result).getShape().back() / tp));
      return success();
    }
    case Role::RowParallel: {
      if (failed(shardWeight(gemm, weight, {{-1, tp, 1}}, "weight")))
        return failure();
      partial.insert(result);
      return success();
    }
    case Role::LmHead: {
      if (!volt::sharding::vocabParallel(vocab, tp))
        return success(); // replicated: every rank computes all logits
      if (failed(shardWeight(gemm, weight, {{-2, tp, 1}}, "LM head")))
        return failure();
      int64_t cols = ranked(result).getShape().back();
      result.setType(withLastDim(result, cols / tp));
      OpBuilder b(gemm->getContext());
      b.setInsertionPointAfter(gemm);
      auto gather = b.create<AllGatherOp>(gemm->getLoc(), withLastDim(result, cols), result,
                                          b.getI64IntegerAttr(tp));
      result.replaceAllUsesExcept(gather.getResult(), gather);
      return success();
    }
    }
    return success();
  }

  /// Heads of attention-side ops become this rank's heads.
  void shardHeads(Operation *op) {
    Builder b(op->getContext());
    op->setAttr("num_heads", b.getI64IntegerAttr(heads / tp));
    op->setAttr("num_kv_heads", b.getI64IntegerAttr(kvHeads / kvParts));
    Value r = op->getResult(0);
    if (isa<AttentionOp>(op))
      r.setType(withLastDim(r, heads / tp * headDim));
    else
      r.setType(withLastDim(r, (heads / tp + 2 * kvHeads / kvParts) * headDim));
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto deployment = module->getAttrOfType<DictionaryAttr>("volt.deployment");
    auto modelAttr = module->getAttrOfType<DictionaryAttr>("volt.model");
    tp = tensorParallelSize > 0 ? tensorParallelSize : intAttr(deployment, "tensor_parallel_size");
    if (tp < 1)
      tp = 1;
    Builder b(&getContext());
    module->setAttr("volt.tensor_parallel_size", b.getI64IntegerAttr(tp));
    if (tp == 1)
      return;
    if (!volt::sharding::isValidSize(tp)) {
      module.emitError() << "tensor_parallel_size " << tp << " is not one of 1, 2, 4, 8";
      return signalPassFailure();
    }
    heads = intAttr(modelAttr, "num_heads");
    kvHeads = intAttr(modelAttr, "num_kv_heads");
    headDim = intAttr(modelAttr, "head_dim");
    vocab = intAttr(modelAttr, "vocab_size");
    if (heads <= 0 || kvHeads <= 0 || headDim <= 0 || vocab <= 0) {
      module.emitError() << "sharding needs the module's volt.model attribute (num_heads, "
                            "num_kv_heads, head_dim, vocab_size)";
      return signalPassFailure();
    }
    if (auto why = volt::sharding::headsError(heads, kvHeads, tp)) {
      module.emitError() << *why;
      return signalPassFailure();
    }
    const volt::sharding::KvSplit kv = volt::sharding::kvSplit(kvHeads, tp);
    kvParts = kv.parts;
    kvReplicas = kv.replicas;

    llvm::DenseSet<Value> partial;
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : ops) {
      if (isa<LinearOp, QLinearOp>(op)) {
        if (failed(shardGemm(op, partial)))
          return signalPassFailure();
      } else if (isa<QkNormOp, RopeOp, QkNormRopeOp, AttentionOp>(op)) {
        shardHeads(op);
      } else if (auto e = dyn_cast<EmbeddingOp>(op)) {
        if (!volt::sharding::vocabParallel(vocab, tp))
          continue;
        if (failed(shardWeight(op, e.getTable(), {{-2, tp, 1}}, "embedding table")))
          return signalPassFailure();
        e.setVocabParallel(true);
        OpBuilder ob(op->getContext());
        ob.setInsertionPointAfter(op);
        auto sum = ob.create<AllReduceOp>(op->getLoc(), e.getType(), e.getResult());
        Value(e.getResult()).replaceAllUsesExcept(sum.getResult(), sum);
      } else if (auto moe = dyn_cast<MoeExpertsOp>(op)) {
        if (failed(shardWeight(op, moe.getGateUp(), {{-2, tp, 1}}, "expert gate|up weights")) ||
            failed(shardWeight(op, moe.getDown(), {{-1, tp, 1}}, "expert down weights")))
          return signalPassFailure();
        partial.insert(moe.getResult());
      } else if (auto moe = dyn_cast<MoeQExpertsOp>(op)) {
        if (failed(
                shardWeight(op, moe.getGateUpPacked(), {{-2, tp, 1}}, "expert gate|up weights")) ||
            failed(shardWeight(op, moe.getDownPacked(), {{-1, tp, 1}}, "expert down weights")))
          return signalPassFailure();
        partial.insert(moe.getResult());
      } else if (auto conv = dyn_cast<CausalConv1dOp>(op)) {
        if (failed(shardWeight(op, conv.getWeight(), {{-2, tp, 1}}, "conv weight")))
          return signalPassFailure();
        Value r = conv.getResult();
        r.setType(withLastDim(r, ranked(r).getShape().back() / tp));
      } else if (auto g = dyn_cast<GatedDeltaRuleOp>(op)) {
        if (auto why = volt::sharding::linearHeadsError(g.getKeyHeads(), tp)) {
          g.emitOpError() << *why;
          return signalPassFailure();
        }
        if (failed(shardWeight(op, g.getALog(), {{-1, tp, 1}}, "A_log")) ||
            failed(shardWeight(op, g.getDtBias(), {{-1, tp, 1}}, "dt_bias")))
          return signalPassFailure();
        g.setKeyHeads(g.getKeyHeads() / tp);
        g.setValueHeads(g.getValueHeads() / tp);
        Value r = g.getResult();
        r.setType(withLastDim(r, ranked(r).getShape().back() / tp));
      } else if (auto m = dyn_cast<SigmoidMulOp>(op)) {
        Value r = m.getResult();
        r.setType(withLastDim(r, ranked(m.getX()).getShape().back()));
      } else if (auto silu = dyn_cast<SiluMulOp>(op)) {
        Value r = silu.getResult();
        r.setType(withLastDim(r, ranked(silu.getX()).getShape().back() / 2));
      } else if (auto g = dyn_cast<SigmoidGateAddOp>(op)) {
        // x + sigmoid(gate) * value is linear in the partial sums x and
        // value (the gate is replicated): the sum over ranks is exact.
        if (partial.contains(g.getX()) != partial.contains(g.getValue())) {
          g.emitOpError() << "mixes a partial and a complete value";
          return signalPassFailure();
        }
        if (partial.contains(g.getX()))
          partial.insert(g.getResult());
      } else if (isa<AddOp, AddRmsNormOp>(op)) {
        // A branch added to the residual stream must be complete: sum the
        // ranks' partial results first.
        Value branch = isa<AddOp>(op) ? op->getOperand(1) : op->getOperand(0);
        Value other = isa<AddOp>(op) ? op->getOperand(0) : Value();
        for (Value v : {branch, other}) {
          if (!v || !partial.contains(v))
            continue;
          OpBuilder ob(op);
          auto sum = ob.create<AllReduceOp>(op->getLoc(), v.getType(), v);
          v.replaceUsesWithIf(sum.getResult(),
                              [&](OpOperand &use) { return use.getOwner() == op; });
          partial.erase(v);
        }
      }
    }
  }
};

} // namespace
