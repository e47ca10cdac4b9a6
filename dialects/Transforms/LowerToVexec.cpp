//===- LowerToVexec.cpp - the step as buffers and launches ---------------===//
#include "dialects/Transforms/Passes.h"
#include "dialects/Vexec/VexecOps.h"
#include "dialects/Volt/VoltOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

namespace volt {
#define GEN_PASS_DEF_LOWERTOVEXEC
#include "dialects/Transforms/Passes.h.inc"
} // namespace volt

using namespace mlir;
namespace vx = volt::vexec;
namespace vi = volt::ir;

namespace {

RankedTensorType ranked(Value v) { return cast<RankedTensorType>(v.getType()); }

int64_t elementBytes(Type t) {
  if (t.isF32() || t.isInteger(32))
    return 4;
  if (t.isF16() || t.isBF16())
    return 2;
  return 1;
}

/// Lowers one `@step` function.
class Lowering {
public:
  Lowering(ModuleOp module, func::FuncOp step)
      : module_(module), step_(step), b_(module.getContext()),
        loc_(UnknownLoc::get(module.getContext())) {}

  LogicalResult run();

private:
  /// A readable name for what `op` computes.
  std::string nameOf(Operation *op) {
    if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
      return loc.getName().str();
    return op->getName().stripDialect().str() + "." + std::to_string(counter_++);
  }

  Value alloc(StringRef name, Type dtype, int64_t perToken, int64_t fixed = 0) {
    return b_.create<vx::AllocOp>(loc(), vx::BufferType::get(ctx()), b_.getStringAttr(name),
                                  TypeAttr::get(dtype), b_.getI64IntegerAttr(perToken),
                                  b_.getI64IntegerAttr(fixed), IntegerAttr());
  }

  /// The buffer of an activation result: `[?, cols]` per token, or the step
  /// output when the function returns it.
  Value resultBuffer(Value v, StringRef name) {
    if (auto it = returned_.find(v); it != returned_.end()) {
      Value out = b_.create<vx::OutputOp>(loc(), vx::BufferType::get(ctx()),
                                          b_.getStringAttr(it->second));
      buffers_[v] = out;
      return out;
    }
    auto t = ranked(v);
    int64_t perRow = elementBytes(t.getElementType());
    for (int64_t d : t.getShape().drop_front())
      perRow *= d;
    // Rows selected for logits (gather_rows, and what is computed from
    // them: the LM head) number at most max_logits_rows (max_num_seqs
    // without speculative decoding), not T.
    bool perSequence = false;
    if (Operation *def = v.getDefiningOp())
      for (Value in : def->getOperands())
        perSequence |= perSequence_.contains(in) || isa_and_nonnull<vi::GatherRowsOp>(def);
    if (perSequence && maxNumSeqs_ > 0) {
      perSequence_.insert(v);
      Value buf = alloc(name, t.getElementType(), 0, perRow * maxNumSeqs_);
      buffers_[v] = buf;
      return buf;
    }
    Value buf = alloc(name, t.getElementType(), perRow);
    buffers_[v] = buf;
    return buf;
  }

  Value buffer(Value v) { return buffers_.lookup(v); }

  /// Reuses `in`'s buffer for `out` (in-place ops); every other use of
  /// `in` must come before `op`, since `op` overwrites it.
  LogicalResult inPlace(Operation *op, Value in, Value out) {
    for (Operation *user : in.getUsers())
      if (user != op && !user->isBeforeInBlock(op))
        return op->emitOpError() << "updates its input in place, but the input is used after it";
    buffers_[out] = buffer(in);
    return success();
  }

  /// The step's state slots, made at the first op with state.
  Value stateSlots() {
    if (!stateSlots_)
      stateSlots_ = b_.create<vx::InputOp>(loc(), vx::BufferType::get(ctx()),
                                           b_.getStringAttr("state_slots"));
    return stateSlots_;
  }
  Value stateSnapshots() {
    if (!stateSnapshots_)
      stateSnapshots_ = b_.create<vx::InputOp>(loc(), vx::BufferType::get(ctx()),
                                               b_.getStringAttr("state_snapshots"));
    return stateSnapshots_;
  }

  void launch(Operation *from, StringRef kind, ArrayRef<Value> operands,
              ArrayRef<NamedAttribute> params, StringRef name = "") {
    ArrayAttr kernels = from->getAttrOfType<ArrayAttr>("volt.kernels");
    if (!kernels)
      kernels = b_.getArrayAttr({});
    b_.create<vx::LaunchOp>(loc(), b_.getStringAttr(kind), operands, b_.getDictionaryAttr(params),
                            kernels, b_.getStringAttr(name.empty() ? nameOf(from) : name.str()));
  }

  /// A launch whose kernel is not one of `from`'s variants (MoE's align and
  /// combine steps): one variant of the named kernel on GPU targets.
  void launchAux(Operation *from, StringRef kind, StringRef kernel, ArrayRef<Value> operands,
                 ArrayRef<NamedAttribute> params, StringRef name) {
    ArrayAttr fromKernels = from->getAttrOfType<ArrayAttr>("volt.kernels");
    SmallVector<Attribute> kernels;
    if (fromKernels && !fromKernels.empty())
      kernels.push_back(b_.getDictionaryAttr(
          {b_.getNamedAttr("max_tokens", b_.getI64IntegerAttr(int64_t{1} << 30)),
           b_.getNamedAttr("kernel", b_.getStringAttr(kernel)),
           b_.getNamedAttr("threads", b_.getI64IntegerAttr(256))}));
    b_.create<vx::LaunchOp>(loc(), b_.getStringAttr(kind), operands, b_.getDictionaryAttr(params),
                            b_.getArrayAttr(kernels), b_.getStringAttr(name));
  }

  /// One variant of `kernel` on GPU targets, none on the cpu (a launch
  /// with no volt op to take its variants from).
  ArrayAttr targetKernels(StringRef kernel) {
    auto target = module_->getAttrOfType<DictionaryAttr>("volt.target");
    auto arch = target ? target.getAs<StringAttr>("arch") : StringAttr();
    if (!arch || arch.getValue() == "cpu")
      return b_.getArrayAttr({});
    return b_.getArrayAttr({b_.getDictionaryAttr(
        {b_.getNamedAttr("max_tokens", b_.getI64IntegerAttr(int64_t{1} << 30)),
         b_.getNamedAttr("kernel", b_.getStringAttr(kernel)),
         b_.getNamedAttr("threads", b_.getI64IntegerAttr(128))})});
  }

  NamedAttribute i64(StringRef name, int64_t v) {
    return b_.getNamedAttr(name, b_.getI64IntegerAttr(v));
  }
  NamedAttribute f32(StringRef name, float v) {
    return b_.getNamedAttr(name, b_.getF32FloatAttr(v));
  }
  NamedAttribute flag(StringRef name, bool v) { return b_.getNamedAttr(name, b_.getBoolAttr(v)); }
  NamedAttribute str(StringRef name, StringRef v) {
    return b_.getNamedAttr(name, b_.getStringAttr(v));
  }

  LogicalResult lowerWeight(Operation *op);
  LogicalResult lowerOp(Operation *op);
  LogicalResult lowerExperts(Operation *op, Value x, Value ids, Value weights, Value gateUp,
                             Value down, bool quantized);

  MLIRContext *ctx() { return module_.getContext(); }
  Location loc() { return loc_; }

  ModuleOp module_;
  func::FuncOp step_;
  OpBuilder b_;
  Location loc_;
  llvm::DenseMap<Value, Value> buffers_;
  /// Attention metadata: the engine's per-step sequence layout.
  Value slotMapping_, seqStarts_, contextLens_, blockTables_;
  /// The step's state slots, made at the first op with state.
  Value stateSlots_;
  Value stateSnapshots_;
  /// The returned values and the step outputs they are (logits, hidden).
  llvm::DenseMap<Value, std::string> returned_;
  int counter_ = 0;
  /// max_logits_rows (or max_num_seqs) of the deployment (0: unknown, size
  /// everything per token).
  int64_t maxNumSeqs_ = 0;
  llvm::DenseSet<Value> perSequence_;
};

LogicalResult Lowering::lowerWeight(Operation *op) {
  bool nvfp4 = isa<vi::Nvfp4WeightOp>(op);
  ArrayAttr names =
      nvfp4 ? cast<vi::Nvfp4WeightOp>(op).getNames() : cast<vi::WeightOp>(op).getNames();
  DenseI64ArrayAttr partRows = nvfp4 ? cast<vi::Nvfp4WeightOp>(op).getPartRowsAttr()
                                     : cast<vi::WeightOp>(op).getPartRowsAttr();
  int64_t experts =
      nvfp4 ? cast<vi::Nvfp4WeightOp>(op).getExperts() : cast<vi::WeightOp>(op).getExperts();
  ArrayAttr shards =
      nvfp4 ? cast<vi::Nvfp4WeightOp>(op).getShardsAttr() : cast<vi::WeightOp>(op).getShardsAttr();
  SmallVector<int64_t> shape(ranked(op->getResult(0)).getShape());
  if (nvfp4)
    shape.back() *= 2;
  // The entry is named after its first tensor; fused parts add their last
  // path component ("...self_attn.q_proj|k_proj|v_proj").
  std::string name = cast<StringAttr>(names[0]).getValue().str();
  size_t parts = partRows.size();
  for (size_t p = 1; p < parts; ++p) {
    StringRef part = cast<StringAttr>(names[p]).getValue();
    name += "|" + part.substr(part.rfind('.') + 1).str();
  }
  if (experts > 0)
    name += " (" + std::to_string(experts) + " experts)";
  const bool fp8 = !nvfp4 && cast<vi::WeightOp>(op).getFp8Rows();
  Type dtype = nvfp4 ? Type(IntegerType::get(ctx(), 8, IntegerType::Unsigned))
               : fp8 ? Type(b_.getType<Float8E4M3FNType>())
                     : ranked(op->getResult(0)).getElementType();
  auto w = b_.create<vx::WeightOp>(
      loc(), vx::BufferType::get(ctx()), b_.getStringAttr(name), names, partRows,
      b_.getStringAttr(nvfp4 ? "nvfp4" : fp8 ? "fp8" : "dense"), TypeAttr::get(dtype),
      b_.getDenseI64ArrayAttr(shape), b_.getI64IntegerAttr(experts),
      nvfp4 ? cast<vi::Nvfp4WeightOp>(op).getGlobalScalesAttr() : DenseF32ArrayAttr(), shards,
      nvfp4 && cast<vi::Nvfp4WeightOp>(op).getFromDense() ? b_.getUnitAttr() : UnitAttr(),
      nvfp4 ? cast<vi::Nvfp4WeightOp>(op).getViewsAttr() : cast<vi::WeightOp>(op).getViewsAttr(),
      !nvfp4 && cast<vi::WeightOp>(op).getAddOne() ? b_.getUnitAttr() : UnitAttr(),
      nvfp4 ? ArrayAttr() : cast<vi::WeightOp>(op).getScaleNamesAttr());
  for (Value r : op->getResults())
    buffers_[r] = w;
  return success();
}

LogicalResult Lowering::lowerExperts(Operation *op, Value x, Value ids, Value weights, Value gateUp,
                                     Value down, bool quantized) {
  std::string name = nameOf(op);
  auto gu = ranked(gateUp).getShape(), d = ranked(down).getShape();
  int64_t experts = gu[0], hidden = d[1], width = quantized ? d[2] * 2 : d[2];
  int64_t k = ranked(ids).getShape().back();
  Type f16 = b_.getF16Type(), i32 = b_.getI32Type();
  Value order = alloc(name + ".order", i32, k * 4);
  Value starts = alloc(name + ".expert_starts", i32, 0, (experts + 1) * 4);
  launchAux(op, "MoeAlign", "moe_align", {buffer(ids), order, starts},
            {i64("num_experts", experts), i64("top_k", k)}, name + ".align");
  StringRef gemm = quantized ? "MoeGroupedQLinear" : "MoeGroupedLinear";
  Value h = alloc(name + ".h", f16, k * width * 2);
  launch(op, gemm, {buffer(x), order, starts, buffer(gateUp), h},
         {i64("dim", hidden), i64("out_features", 2 * width), i64("num_experts", experts),
          i64("top_k", k), flag("gather_tokens", true), str("epilogue", "silu_mul")},
         name + ".gate_up");
  Value y = alloc(name + ".down", f16, k * hidden * 2);
  launch(op, gemm, {h, order, starts, buffer(down), y},
         {i64("dim", width), i64("out_features", hidden), i64("num_experts", experts),
          i64("top_k", k), flag("gather_tokens", false)},
         name + ".down");
  Value out = resultBuffer(op->getResult(0), name);
  launchAux(op, "MoeCombine", "moe_combine", {y, order, buffer(weights), out},
            {i64("dim", hidden), i64("top_k", k), flag("accumulate", false)}, name + ".combine");
  return success();
}

LogicalResult Lowering::lowerOp(Operation *op) {
  std::string name = nameOf(op);
  auto outDtype = [&](Value v) {
    return str("out_dtype", ranked(v).getElementType().isF32() ? "f32" : "f16");
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<vi::WeightOp, vi::Nvfp4WeightOp>([&](Operation *w) { return lowerWeight(w); })
      .Case<vi::EmbeddingOp>([&](vi::EmbeddingOp e) {
        Value out = resultBuffer(e.getResult(), name);
        auto table = ranked(e.getTable()).getShape();
        launch(op, "Embedding", {buffer(e.getTokens()), buffer(e.getTable()), out},
               {i64("dim", table[1]), i64("vocab_rows", table[0]),
                flag("vocab_parallel", e.getVocabParallel())});
        return success();
      })
      .Case<vi::RmsNormOp>([&](vi::RmsNormOp n) {
        Value out = resultBuffer(n.getResult(), name);
        launch(op, "RmsNorm", {buffer(n.getX()), buffer(n.getWeight()), out},
               {i64("dim", ranked(n.getX()).getShape().back()),
                f32("eps", n.getEps().convertToFloat())});
        return success();
      })
      .Case<vi::AddRmsNormOp>([&](vi::AddRmsNormOp n) -> LogicalResult {
        Value out = resultBuffer(n.getResult(), name);
        if (failed(inPlace(op, n.getResidual(), n.getResidualOut())))
          return failure();
        launch(op, "AddRmsNorm",
               {buffer(n.getX()), buffer(n.getResidual()), buffer(n.getWeight()), out},
               {i64("dim", ranked(n.getX()).getShape().back()),
                f32("eps", n.getEps().convertToFloat())});
        return success();
      })
      .Case<vi::LinearOp>([&](vi::LinearOp l) {
        Value out = resultBuffer(l.getResult(), name);
        SmallVector<Value> operands = {buffer(l.getX()), buffer(l.getWeight())};
        if (l.getBias())
          operands.push_back(buffer(l.getBias()));
        operands.push_back(out);
        auto w = ranked(l.getWeight()).getShape();
        launch(op, "Linear", operands,
               {i64("dim", w[1]), i64("out_features", w[0]), outDtype(l.getResult())});
        return success();
      })
      .Case<vi::QLinearOp>([&](vi::QLinearOp q) {
        Value out = resultBuffer(q.getResult(), name);
        SmallVector<Value> operands = {buffer(q.getX()), buffer(q.getPacked())};
        if (q.getBias())
          operands.push_back(buffer(q.getBias()));
        operands.push_back(out);
        auto p = ranked(q.getPacked()).getShape();
        SmallVector<NamedAttribute> params = {i64("dim", p[1] * 2), i64("out_features", p[0]),
                                              outDtype(q.getResult())};
        if (q.getEpilogue())
          params.push_back(str("epilogue", *q.getEpilogue()));
        launch(op, "QLinear", operands, params);
        return success();
      })
      .Case<vi::QkNormRopeOp>([&](vi::QkNormRopeOp r) -> LogicalResult {
        if (failed(inPlace(op, r.getQkv(), r.getResult())))
          return failure();
        SmallVector<Value> operands = {buffer(r.getQkv()), buffer(r.getPositions())};
        if (r.getQWeight()) {
          operands.push_back(buffer(r.getQWeight()));
          operands.push_back(buffer(r.getKWeight()));
        }
        SmallVector<NamedAttribute> params = {
            i64("num_heads", r.getNumHeads()), i64("num_kv_heads", r.getNumKvHeads()),
            i64("head_dim", r.getHeadDim()), f32("eps", r.getEps().convertToFloat()),
            f32("rope_theta", r.getTheta().convertToFloat())};
        if (auto rotary = r.getRotaryDim())
          params.push_back(i64("rotary_dim", *rotary));
        launch(op, "QkNormRope", operands, params);
        return success();
      })
      .Case<vi::AttentionOp>([&](vi::AttentionOp a) {
        Value out = resultBuffer(a.getResult(), name);
        Value kv = b_.create<vx::KvCacheOp>(loc(), vx::BufferType::get(ctx()),
                                            b_.getI64IntegerAttr(a.getLayer()));
        launch(op, "Attention",
               {buffer(a.getQkv()), kv, slotMapping_, seqStarts_, contextLens_, blockTables_, out},
               {i64("num_heads", a.getNumHeads()), i64("num_kv_heads", a.getNumKvHeads()),
                i64("head_dim", a.getHeadDim()), i64("layer", a.getLayer())});
        return success();
      })
      .Case<vi::EmaScanOp>([&](vi::EmaScanOp e) {
        Value out = resultBuffer(e.getResult(), name);
        const int64_t dim = ranked(e.getX()).getShape().back();
        // Each sequence's state: dim FP32 values in the group's slot.
        Value state = b_.create<vx::StateOp>(
            loc(), vx::BufferType::get(ctx()), b_.getStringAttr("ema"), e.getLayerAttr(),
            TypeAttr::get(b_.getF32Type()), b_.getI64IntegerAttr(dim * 4));
        launch(op, "EmaScan",
               {buffer(e.getX()), buffer(e.getDecay()), state, seqStarts_, contextLens_,
                stateSlots(), stateSnapshots(), out},
               {i64("dim", dim), i64("layer", e.getLayerAttr().getInt())});
        return success();
      })
      .Case<vi::CausalConv1dOp>([&](vi::CausalConv1dOp c) {
        Value out = resultBuffer(c.getResult(), name);
        auto w = ranked(c.getWeight()).getShape();
        const int64_t dim = w[0], kernel = w[1];
        // Each sequence's last K - 1 inputs, in the activation dtype.
        Value state = b_.create<vx::StateOp>(
            loc(), vx::BufferType::get(ctx()), b_.getStringAttr("conv"), c.getLayerAttr(),
            TypeAttr::get(b_.getF16Type()), b_.getI64IntegerAttr((kernel - 1) * dim * 2));
        launch(op, "CausalConv1d",
               {buffer(c.getX()), buffer(c.getWeight()), state, seqStarts_, contextLens_,
                stateSlots(), stateSnapshots(), out},
               {i64("dim", dim), i64("kernel", kernel), i64("layer", c.getLayer())});
        return success();
      })
      .Case<vi::GatedDeltaRuleOp>([&](vi::GatedDeltaRuleOp g) {
        Value out = resultBuffer(g.getResult(), name);
        const int64_t bytes = g.getValueHeads() * g.getKeyDim() * g.getValueDim() * 4;
        Value state = b_.create<vx::StateOp>(
            loc(), vx::BufferType::get(ctx()), b_.getStringAttr("gdn"), g.getLayerAttr(),
            TypeAttr::get(b_.getF32Type()), b_.getI64IntegerAttr(bytes));
        launch(op, "GatedDeltaRule",
               {buffer(g.getQkv()), buffer(g.getGates()), buffer(g.getZ()), buffer(g.getALog()),
                buffer(g.getDtBias()), buffer(g.getNormWeight()), state, seqStarts_,
                contextLens_, stateSlots(), stateSnapshots(), out},
               {i64("key_heads", g.getKeyHeads()), i64("value_heads", g.getValueHeads()),
                i64("key_dim", g.getKeyDim()), i64("value_dim", g.getValueDim()),
                f32("eps", g.getEps().convertToFloat()), i64("layer", g.getLayer())});
        return success();
      })
      .Case<vi::SigmoidMulOp>([&](vi::SigmoidMulOp m) {
        Value out = resultBuffer(m.getResult(), name);
        launch(op, "SigmoidMul", {buffer(m.getX()), buffer(m.getGate()), out},
               {i64("dim", ranked(m.getResult()).getShape().back())});
        return success();
      })
      .Case<vi::SiluMulOp>([&](vi::SiluMulOp s) {
        Value out = resultBuffer(s.getResult(), name);
        launch(op, "SiluMul", {buffer(s.getX()), out},
               {i64("dim", ranked(s.getResult()).getShape().back())});
        return success();
      })
      .Case<vi::MoeRouterOp>([&](vi::MoeRouterOp r) {
        Value ids = resultBuffer(r.getIds(), name + ".ids");
        Value weights = resultBuffer(r.getWeights(), name + ".weights");
        launch(op, "MoeRouter", {buffer(r.getLogits()), ids, weights},
               {i64("num_experts", ranked(r.getLogits()).getShape().back()),
                i64("top_k", r.getTopK()), flag("renormalize", r.getRenormalize())});
        return success();
      })
      .Case<vi::MoeQExpertsOp>([&](vi::MoeQExpertsOp m) {
        return lowerExperts(op, m.getX(), m.getIds(), m.getWeights(), m.getGateUpPacked(),
                            m.getDownPacked(), true);
      })
      .Case<vi::MoeExpertsOp>([&](vi::MoeExpertsOp m) {
        return lowerExperts(op, m.getX(), m.getIds(), m.getWeights(), m.getGateUp(), m.getDown(),
                            false);
      })
      .Case<vi::SigmoidGateAddOp>([&](vi::SigmoidGateAddOp g) -> LogicalResult {
        if (failed(inPlace(op, g.getX(), g.getResult())))
          return failure();
        launch(op, "SigmoidGateAdd", {buffer(g.getX()), buffer(g.getValue()), buffer(g.getGate())},
               {i64("dim", ranked(g.getX()).getShape().back())});
        return success();
      })
      .Case<vi::AllReduceOp>([&](vi::AllReduceOp r) -> LogicalResult {
        if (failed(inPlace(op, r.getX(), r.getResult())))
          return failure();
        launch(op, "AllReduce", {buffer(r.getX())},
               {i64("dim", ranked(r.getX()).getShape().back())});
        return success();
      })
      .Case<vi::AllGatherOp>([&](vi::AllGatherOp g) {
        Value out = resultBuffer(g.getResult(), name);
        launch(op, "AllGather", {buffer(g.getX()), out},
               {i64("dim", ranked(g.getX()).getShape().back()), i64("parts", g.getParts())});
        return success();
      })
      .Case<vi::ConcatOp>([&](vi::ConcatOp c) {
        Value out = resultBuffer(c.getResult(), name);
        launch(op, "Concat", {buffer(c.getA()), buffer(c.getB()), out},
               {i64("a_dim", ranked(c.getA()).getShape().back()),
                i64("b_dim", ranked(c.getB()).getShape().back())});
        return success();
      })
      .Case<vi::GatherRowsOp>([&](vi::GatherRowsOp g) {
        Value out = resultBuffer(g.getResult(), name);
        launch(op, "GatherRows", {buffer(g.getX()), buffer(g.getRows()), out},
               {i64("dim", ranked(g.getX()).getShape().back())});
        return success();
      })
      .Case<func::ReturnOp>([&](func::ReturnOp) { return success(); })
      .Case<vi::DequantOp>([&](vi::DequantOp d) {
        return d.emitOpError() << "must be fused into its GEMM before lowering "
                                  "(--volt-fuse-dequant-into-gemm)";
      })
      .Case<vi::AddOp, vi::QkNormOp, vi::RopeOp>([&](Operation *o) {
        return o->emitOpError() << "must be fused before lowering (--volt-fuse-elementwise)";
      })
      .Default([&](Operation *o) { return o->emitOpError() << "has no lowering to vexec"; });
}

LogicalResult Lowering::run() {
  // Result 0 is the logits; a step with a draft program also returns its
  // hidden states (volt.output "hidden").
  if (step_.getNumResults() < 1 || step_.getNumResults() > 2)
    return step_.emitOpError() << "must return the logits, and optionally the hidden states";
  Operation *ret = step_.getBody().back().getTerminator();
  for (unsigned i = 0; i < step_.getNumResults(); ++i) {
    auto role = step_.getResultAttrOfType<StringAttr>(i, "volt.output");
    std::string name = role ? role.getValue().str() : (i == 0 ? "logits" : "");
    if (name != (i == 0 ? "logits" : "hidden"))
      return step_.emitOpError() << "result " << i << " must be the "
                                 << (i == 0 ? "logits" : "hidden states");
    if (returned_.count(ret->getOperand(i)))
      return step_.emitOpError() << "returns one value as two outputs";
    returned_[ret->getOperand(i)] = name;
  }
  if (auto deployment = module_->getAttrOfType<DictionaryAttr>("volt.deployment"))
    if (auto rows = deployment.getAs<IntegerAttr>("max_logits_rows"))
      maxNumSeqs_ = rows.getInt();
    else if (auto seqs = deployment.getAs<IntegerAttr>("max_num_seqs"))
      maxNumSeqs_ = seqs.getInt();
  b_.setInsertionPointToEnd(module_.getBody());
  auto fn = b_.create<func::FuncOp>(step_.getLoc(), "step_vexec", b_.getFunctionType({}, {}));
  Block *body = fn.addEntryBlock();
  b_.setInsertionPointToStart(body);
  auto input = [&](StringRef name) {
    return b_.create<vx::InputOp>(loc(), vx::BufferType::get(ctx()), b_.getStringAttr(name))
        .getResult();
  };
  for (BlockArgument arg : step_.getArguments()) {
    auto role = step_.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "volt.input");
    if (!role)
      return step_.emitOpError() << "argument " << arg.getArgNumber() << " has no volt.input role";
    if (role.getValue() == "hidden") {
      // A draft step starts from hidden rows the last step left: gathered
      // by StepInput.HiddenRows from StepOutput.Hidden.
      auto t = ranked(arg);
      int64_t dim = t.getShape().back();
      Value rows = input("hidden_rows");
      Value store =
          b_.create<vx::OutputOp>(loc(), vx::BufferType::get(ctx()), b_.getStringAttr("hidden"));
      Value buf = alloc("hidden_in", t.getElementType(), elementBytes(t.getElementType()) * dim);
      buffers_[arg] = buf;
      b_.create<vx::LaunchOp>(loc(), b_.getStringAttr("GatherHidden"), ValueRange{store, rows, buf},
                              b_.getDictionaryAttr({i64("dim", dim)}), targetKernels("gather_hidden"),
                              b_.getStringAttr("hidden_rows"));
      continue;
    }
    if (role.getValue() == "attention") {
      slotMapping_ = input("slot_mapping");
      seqStarts_ = input("seq_starts");
      contextLens_ = input("context_lens");
      blockTables_ = input("block_tables");
      continue;
    }
    buffers_[arg] = input(role.getValue());
  }
  for (Operation &op : step_.getBody().front())
    if (failed(lowerOp(&op)))
      return failure();
  b_.create<func::ReturnOp>(loc());
  StringAttr name = step_.getSymNameAttr();
  step_.erase();
  fn.setSymName(name);
  return success();
}

struct LowerToVexecPass : volt::impl::LowerToVexecBase<LowerToVexecPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("step");
    if (!step) {
      module.emitError() << "no @step function to lower";
      return signalPassFailure();
    }
    // The target's step, then the MTP head's draft program if there is one.
    auto draft = module.lookupSymbol<func::FuncOp>("draft");
    for (func::FuncOp fn : {step, draft}) {
      if (!fn)
        continue;
      Lowering lowering(module, fn);
      if (failed(lowering.run()))
        return signalPassFailure();
    }
  }
};

} // namespace
