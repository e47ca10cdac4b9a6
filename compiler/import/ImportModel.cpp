//===- ImportModel.cpp ----------------------------------------------------===//
#include "compiler/import/ImportModel.h"

#include "compiler/model/TensorParallel.h"

#include "dialects/Volt/VoltOps.h"
#include "runtime/numerics/Half.h"
#include "runtime/numerics/Nvfp4.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <cmath>
#include <cstring>

namespace volt::import {
namespace {

using namespace mlir;
using model::GatedMlp;
using model::Layer;
using model::Linear;
using model::Param;

/// Builds the ops of one step function. Errors are collected in `error_`
/// and stop the import at the next check.
class Importer {
public:
  Importer(MLIRContext &ctx, const spec::DeploySpec &spec, const model::Model &m,
           const ImportOptions &options)
      : ctx_(ctx), b_(&ctx), spec_(spec), m_(m), c_(m.config), options_(options) {
    loc_ = b_.getUnknownLoc();
    act_ = elementType(c_.torchDtype == "float16"   ? model::DType::F16
                       : c_.torchDtype == "float32" ? model::DType::F32
                                                    : model::DType::BF16);
  }

  Result<OwningOpRef<ModuleOp>> run();

private:
  Type elementType(model::DType d) {
    switch (d) {
    case model::DType::F16:
      return b_.getF16Type();
    case model::DType::F32:
      return b_.getF32Type();
    default:
      return b_.getBF16Type();
    }
  }

  RankedTensorType activation(int64_t cols, Type elem = {}) {
    return RankedTensorType::get({ShapedType::kDynamic, cols}, elem ? elem : act_);
  }

  /// A location naming the module a value comes from ("...input_layernorm"
  /// for its ".weight").
  Location at(StringRef name) {
    for (StringRef suffix : {".weight", ".bias"})
      if (name.ends_with(suffix))
        name = name.drop_back(suffix.size());
    return NameLoc::get(b_.getStringAttr(name));
  }

  ArrayAttr names(const std::vector<std::string> &list) {
    SmallVector<Attribute> attrs;
    for (const std::string &n : list)
      attrs.push_back(b_.getStringAttr(n));
    return b_.getArrayAttr(attrs);
  }

  /// The largest magnitude of a dense tensor's data (0 when unknown).
  float maxAbs(const model::Tensor *t) {
    if (!t || !options_.readWeightRanges)
      return 0.0f;
    return maxAbsIn(*t, 0, t->data().size());
  }

  /// The largest magnitude of a dense linear weight's rows: its view's runs
  /// when it is one (an expert of a stacked tensor reads only its slice).
  float maxAbs(const Linear &l) {
    if (!l.weight || !options_.readWeightRanges)
      return 0.0f;
    if (!l.view)
      return maxAbs(l.weight);
    const model::RowView &v = *l.view;
    const size_t rowBytes = static_cast<size_t>(l.inFeatures) * model::dtypeSize(l.weight->dtype());
    const int64_t groups = std::max<int64_t>(1, v.groups);
    const int64_t run = l.outFeatures / groups;
    const int64_t base = v.expert >= 0 ? v.expert * v.tensorRows : 0;
    float best = 0.0f;
    for (int64_t g = 0; g < groups; ++g) {
      const size_t first = static_cast<size_t>(base + v.offset + g * v.stride) * rowBytes;
      best = std::max(best, maxAbsIn(*l.weight, first, static_cast<size_t>(run) * rowBytes));
    }
    return best;
  }

  /// The largest magnitude of an FP8 linear's weight: E4M3 × scale over its
  /// rows (its view's runs when it is one).
  float maxAbsFp8(const Linear &l) {
    if (!l.weight || !l.weightScale || !options_.readWeightRanges)
      return 0.0f;
    const model::Tensor &scale = *l.weightScale;
    const int64_t in = l.inFeatures;
    const int64_t tensorRows = l.view ? l.view->tensorRows : l.outFeatures;
    const size_t scales = scale.data().size() / model::dtypeSize(scale.dtype());
    const bool perRow = scales == static_cast<size_t>(tensorRows) && tensorRows > 1;
    const int64_t blockCols = (in + model::kFp8Block - 1) / model::kFp8Block;
    l.weight->prefetch();
    auto data = l.weight->data();
    float best = 0.0f;
    auto rowMax = [&](int64_t row) {
      for (int64_t c = 0; c < in; ++c) {
        size_t si = scales == 1 ? 0
                    : perRow    ? static_cast<size_t>(row)
                                : static_cast<size_t>((row / model::kFp8Block) * blockCols +
                                                      c / model::kFp8Block);
        float v = std::fabs(nvfp4::decodeE4M3(data[static_cast<size_t>(row * in + c)])) *
                  scale.floatAt(si);
        best = std::max(best, v);
      }
    };
    if (!l.view) {
      for (int64_t r = 0; r < l.outFeatures; ++r)
        rowMax(r);
      return best;
    }
    const model::RowView &v = *l.view;
    const int64_t groups = std::max<int64_t>(1, v.groups), run = l.outFeatures / groups;
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t r = 0; r < run; ++r)
        rowMax(v.offset + g * v.stride + r);
    return best;
  }

  /// The largest magnitude of bytes [first, first + size) of a dense tensor.
  static float maxAbsIn(const model::Tensor &t, size_t first, size_t size) {
    t.file->prefetch(*t.entry, first, std::min<uint64_t>(first + size, t.entry->numBytes()));
    auto all = t.data();
    if (first >= all.size())
      return 0.0f;
    auto data = all.subspan(first, std::min(size, all.size() - first));
    float best = 0.0f;
    switch (t.dtype()) {
    case model::DType::BF16:
    case model::DType::F16:
      for (size_t i = 0; i + 1 < data.size(); i += 2) {
        uint16_t h;
        std::memcpy(&h, data.data() + i, 2);
        float v = t.dtype() == model::DType::BF16 ? bf16ToFloat(h) : halfToFloat(h);
        best = std::max(best, std::fabs(v));
      }
      break;
    case model::DType::F32:
      for (size_t i = 0; i + 3 < data.size(); i += 4) {
        float v;
        std::memcpy(&v, data.data() + i, 4);
        best = std::max(best, std::fabs(v));
      }
      break;
    default:
      break;
    }
    return best;
  }

  /// The `views` attribute of a weight whose names (expert-major, parts
  /// within) have these views; null when every name is a whole tensor.
  DenseI64ArrayAttr viewsAttr(const std::vector<const model::RowView *> &views,
                              const std::vector<int64_t> &partRows) {
    bool any = false;
    for (const model::RowView *v : views)
      any |= v != nullptr;
    if (!any)
      return {};
    SmallVector<int64_t> numbers;
    for (size_t i = 0; i < views.size(); ++i) {
      const model::RowView whole{-1, 0, 0, 1, partRows[i % partRows.size()]};
      const model::RowView &v = views[i] ? *views[i] : whole;
      numbers.append({v.expert, v.offset, v.stride, v.groups, v.tensorRows});
    }
    return b_.getDenseI64ArrayAttr(numbers);
  }

  /// A dense weight of `rows` (sum of parts) x `cols` (0: rank 1), stacked
  /// over `experts` when positive.
  Value denseWeight(const std::vector<std::string> &tensorNames,
                    const std::vector<int64_t> &partRows, int64_t cols, int64_t experts,
                    model::DType dtype, float absMax, DenseI64ArrayAttr views = {},
                    bool addOne = false) {
    SmallVector<int64_t> shape;
    if (experts > 0)
      shape.push_back(experts);
    int64_t rows = 0;
    for (int64_t r : partRows)
      rows += r;
    shape.push_back(rows);
    if (cols > 0)
      shape.push_back(cols);
    auto op = b_.create<ir::WeightOp>(
        at(tensorNames.front()), RankedTensorType::get(shape, elementType(dtype)),
        names(tensorNames), b_.getDenseI64ArrayAttr(partRows), b_.getI64IntegerAttr(experts),
        absMax > 0.0f ? b_.getF32FloatAttr(absMax + (addOne ? 1.0f : 0.0f)) : FloatAttr(),
        ArrayAttr(), views, addOne ? b_.getUnitAttr() : UnitAttr(), ArrayAttr(), UnitAttr());
    return op.getResult();
  }

  /// A norm's weight: 1 + w for the families that store norms zero-centred.
  Value normParam(const Param &p) {
    return denseWeight({p.name}, {p.shape[0]}, 0, 0, p.dtype, maxAbs(p.tensor), {},
                       c_.zeroCentredNorms);
  }

  /// A weight made of parameters that are rows of one tensor (a conv
  /// weight's q, k and v channels).
  Value paramParts(const std::vector<const Param *> &parts) {
    std::vector<std::string> names;
    std::vector<int64_t> rows;
    std::vector<const model::RowView *> views;
    for (const Param *p : parts) {
      names.push_back(p->name);
      rows.push_back(p->shape[0]);
      views.push_back(p->view ? &*p->view : nullptr);
    }
    const Param &first = *parts.front();
    int64_t cols = first.shape.size() == 2 ? first.shape[1] : 0;
    return denseWeight(names, rows, cols, 0, first.dtype, maxAbs(first.tensor),
                       viewsAttr(views, rows));
  }

  Value param(const Param &p) {
    int64_t cols = p.shape.size() == 2 ? p.shape[1] : 0;
    return denseWeight({p.name}, {p.shape[0]}, cols, 0, p.dtype, maxAbs(p.tensor),
                       viewsAttr({p.view ? &*p.view : nullptr}, {p.shape[0]}));
  }

  /// A weight made of `parts` (the same input width) for each of
  /// `perExpert.size()` experts (or one unstacked weight when `stacked` is
  /// false); NVFP4 parts come back dequantized through `volt.dequant`.
  Value linearWeight(const std::vector<std::vector<const Linear *>> &perExpert, bool stacked) {
    const Linear &first = *perExpert.front().front();
    std::vector<std::string> tensorNames;
    std::vector<int64_t> partRows;
    std::vector<const model::RowView *> views;
    SmallVector<float> scales;
    float absMax = 0.0f;
    // FP8 parts are dense weights once packed (E4M3 x scale in FP16), so
    // they fuse with BF16/F16 ones; NVFP4 parts fuse only with NVFP4.
    auto formatName = [](const Linear &l) {
      return l.isNvfp4() ? std::string("NVFP4") : std::string(model::dtypeName(l.dtype));
    };
    std::vector<std::string> fp8Scales; // per name: its FP8 scale tensor, or ""
    bool anyFp8 = false, allDense = true, allFp8Rows = true;
    for (size_t e = 0; e < perExpert.size(); ++e) {
      for (const Linear *l : perExpert[e]) {
        if (l->isNvfp4() != first.isNvfp4() || l->inFeatures != first.inFeatures ||
            (!l->isNvfp4() && !l->isFp8() && !first.isFp8() && l->dtype != first.dtype)) {
          error_ = "'" + l->module + "' and '" + first.module +
                   "' are fused into one GEMM but differ in format or dtype (" + formatName(*l) +
                   " vs " + formatName(first) +
                   "); volt needs the parts of a fused projection in one format";
          return {};
        }
        tensorNames.push_back(l->isNvfp4() ? l->module : l->weightTensorName());
        views.push_back(l->view ? &*l->view : nullptr);
        if (e == 0)
          partRows.push_back(l->outFeatures);
        scales.push_back(l->globalScale);
        anyFp8 |= l->isFp8();
        allFp8Rows &= l->isFp8() && !l->fp8BlockScaled;
        allDense &= l->format == model::WeightFormat::Dense;
        fp8Scales.push_back(!l->isFp8()        ? std::string()
                                 : l->weightScale ? l->weightScale->name()
                                                  : l->module + ".weight_scale");
        if (!l->isNvfp4())
          absMax = std::max(absMax, l->isFp8() ? maxAbsFp8(*l) : maxAbs(*l));
      }
    }
    int64_t experts = stacked ? static_cast<int64_t>(perExpert.size()) : 0;
    bool fromDense = allDense && options_.quantizeNvfp4 && model::quantizedByDefault(first);
    const DenseI64ArrayAttr viewNumbers = viewsAttr(views, partRows);
    if (!first.isNvfp4() && !fromDense) {
      Value w = denseWeight(tensorNames, partRows, first.inFeatures, experts,
                            first.isFp8() ? model::DType::F16 : first.dtype, absMax, viewNumbers);
      if (anyFp8)
        w.getDefiningOp()->setAttr("scale_names",
                                   b_.getStrArrayAttr(SmallVector<StringRef>(
                                       fp8Scales.begin(), fp8Scales.end())));
      // Every part FP8 with a scale per tensor or per row (of every
      // expert): kept as E4M3 with row scales.
      if (allFp8Rows)
        w.getDefiningOp()->setAttr("fp8_rows", b_.getUnitAttr());
      return w;
    }
    if (fromDense) {
      // ModelOpt's recipe: one global scale per tensor, amax / (6 * 448).
      scales.clear();
      for (const auto &parts : perExpert)
        for (const Linear *l : parts) {
          float amax = maxAbs(*l);
          scales.push_back(amax > 0.0f ? amax / (6.0f * 448.0f) : 1.0f);
        }
    }

    if (!m_.hasWeights()) // config only: the scales are not known yet
      for (float &s : scales)
        s = 1.0f;
    int64_t rows = 0;
    for (int64_t r : partRows)
      rows += r;
    SmallVector<int64_t> packedShape, scaleShape, logical;
    if (experts > 0) {
      packedShape.push_back(experts);
      scaleShape.push_back(experts);
      logical.push_back(experts);
    }
    packedShape.append({rows, first.inFeatures / 2});
    scaleShape.append({rows, first.inFeatures / 16});
    logical.append({rows, first.inFeatures});
    auto packedType =
        RankedTensorType::get(packedShape, IntegerType::get(&ctx_, 8, IntegerType::Unsigned));
    auto scaleType = RankedTensorType::get(scaleShape, b_.getType<Float8E4M3FNType>());
    auto w = b_.create<ir::Nvfp4WeightOp>(
        at(tensorNames.front()), packedType, scaleType, names(tensorNames),
        b_.getDenseI64ArrayAttr(partRows), b_.getDenseF32ArrayAttr(scales),
        b_.getI64IntegerAttr(experts), ArrayAttr(), fromDense ? b_.getUnitAttr() : UnitAttr(),
        viewNumbers);
    auto d = b_.create<ir::DequantOp>(at(tensorNames.front()), RankedTensorType::get(logical, act_),
                                      w.getPacked(), w.getScales(), b_.getDenseF32ArrayAttr(scales),
                                      b_.getDenseI64ArrayAttr(partRows));
    return d.getResult();
  }

  /// x · [parts]ᵀ (+ biases): one fused linear.
  Value linear(Value x, const std::vector<const Linear *> &parts, Type outElem = {}) {
    Value w = linearWeight({parts}, false);
    if (!w)
      return {};
    Value bias;
    if (parts.front()->bias) {
      std::vector<std::string> biasNames;
      std::vector<int64_t> rows;
      for (const Linear *l : parts) {
        if (!l->bias) {
          error_ = "'" + l->module + "' has no bias but the projections fused with it do";
          return {};
        }
        biasNames.push_back(l->bias->name);
        rows.push_back(l->bias->shape[0]);
      }
      bias = denseWeight(biasNames, rows, 0, 0, parts.front()->bias->dtype,
                         maxAbs(parts.front()->bias->tensor));
    }
    int64_t out = 0;
    for (const Linear *l : parts)
      out += l->outFeatures;
    auto op =
        b_.create<ir::LinearOp>(at(parts.front()->module), activation(out, outElem), x, w, bias);
    return op.getResult();
  }

  Value rmsNorm(Value x, const Param &w) {
    return b_.create<ir::RmsNormOp>(at(w.name), x.getType(), x, normParam(w),
                                    b_.getF32FloatAttr(static_cast<float>(c_.rmsNormEps)));
  }

  Value add(Value a, Value b) { return b_.create<ir::AddOp>(loc_, a.getType(), a, b); }

  Value attention(Value h, const model::Attention &a, int64_t layer, Value positions,
                  Value metadata);
  Value gatedDeltaNet(Value h, const model::GatedDeltaNet &g, int64_t layer, Value metadata);
  Value mixer(Value h, const Layer &l, Value positions, Value metadata);
  Value mlp(Value h, const GatedMlp &m, const std::string &name);
  Value moe(Value h, const model::Moe &m);
  /// One decoder layer on the residual stream (`h`: its input norm's
  /// output); the new residual, null on error.
  Value decoderLayer(Value residual, Value h, const Layer &l, Value positions, Value metadata);
  /// The LM head over the gathered rows.
  Value lmHead(Value last, Type logitsType);
  /// The MTP head's draft program (docs/design/speculative.md).
  LogicalResult buildDraft(ModuleOp module);

  MLIRContext &ctx_;
  OpBuilder b_;
  const spec::DeploySpec &spec_;
  const model::Model &m_;
  const model::ModelConfig &c_;
  ImportOptions options_;
  Location loc_ = UnknownLoc();
  Type act_;
  std::string error_;
};

Value Importer::attention(Value h, const model::Attention &l, int64_t layer, Value positions,
                          Value metadata) {
  Value qkv = linear(h, {&l.q, &l.k, &l.v});
  if (!qkv)
    return {};
  auto heads = b_.getI64IntegerAttr(c_.numAttentionHeads);
  auto kvHeads = b_.getI64IntegerAttr(c_.numKeyValueHeads);
  auto headDim = b_.getI64IntegerAttr(c_.headDim);
  Location where = at(l.q.module.substr(0, l.q.module.rfind('.')));
  if (l.qNorm)
    qkv = b_.create<ir::QkNormOp>(where, qkv.getType(), qkv, normParam(*l.qNorm),
                                  normParam(*l.kNorm), heads, kvHeads, headDim,
                                  b_.getF32FloatAttr(static_cast<float>(c_.rmsNormEps)));
  qkv = b_.create<ir::RopeOp>(
      where, qkv.getType(), qkv, positions, heads, kvHeads, headDim,
      b_.getF32FloatAttr(static_cast<float>(c_.ropeTheta)),
      c_.rotaryDim != c_.headDim ? b_.getI64IntegerAttr(c_.rotaryDim) : IntegerAttr());
  Value o =
      b_.create<ir::AttentionOp>(where, activation(c_.numAttentionHeads * c_.headDim), qkv,
                                 metadata, b_.getI64IntegerAttr(layer), heads, kvHeads, headDim);
  if (l.gate) {
    Value gate = linear(h, {&*l.gate});
    if (!gate)
      return {};
    o = b_.create<ir::SigmoidMulOp>(at(l.gate->module + ".gate"), o.getType(), o, gate);
  }
  return linear(o, {&l.o});
}

Value Importer::gatedDeltaNet(Value h, const model::GatedDeltaNet &g, int64_t layer,
                              Value metadata) {
  Value qkv = linear(h, {&g.q, &g.k, &g.v});
  Value z = qkv ? linear(h, {&g.z}) : Value();
  Value gates = z ? linear(h, {&g.b, &g.a}) : Value();
  if (!gates)
    return {};
  const std::string module = g.out.module.substr(0, g.out.module.rfind('.'));
  Value conv = b_.create<ir::CausalConv1dOp>(at(module + ".conv1d"), qkv.getType(), qkv,
                                             paramParts({&g.convQ, &g.convK, &g.convV}), metadata,
                                             b_.getI64IntegerAttr(layer));
  auto i64 = [&](int64_t v) { return b_.getI64IntegerAttr(v); };
  Value o = b_.create<ir::GatedDeltaRuleOp>(
      at(module), z.getType(), conv, gates, z, param(g.aLog), param(g.dtBias), param(g.norm),
      metadata, i64(layer), i64(c_.linearNumKeyHeads), i64(c_.linearNumValueHeads),
      i64(c_.linearKeyHeadDim), i64(c_.linearValueHeadDim),
      b_.getF32FloatAttr(static_cast<float>(c_.rmsNormEps)));
  return linear(o, {&g.out});
}

Value Importer::mixer(Value h, const Layer &l, Value positions, Value metadata) {
  if (const model::Attention *a = l.attention())
    return attention(h, *a, l.index, positions, metadata);
  if (const model::GatedDeltaNet *g = l.gatedDeltaNet())
    return gatedDeltaNet(h, *g, l.index, metadata);
  const model::Ema &e = *l.ema();
  return b_.create<ir::EmaScanOp>(at(e.decay.name), h.getType(), h, param(e.decay), metadata,
                                  b_.getI64IntegerAttr(l.index));
}

Value Importer::mlp(Value h, const GatedMlp &m, const std::string &name) {
  Value gateUp = linear(h, {&m.gate, &m.up});
  if (!gateUp)
    return {};
  Value act = b_.create<ir::SiluMulOp>(at(name), activation(m.gate.outFeatures), gateUp);
  return linear(act, {&m.down});
}

Value Importer::moe(Value h, const model::Moe &l) {
  Location where = at(l.router.module.substr(0, l.router.module.rfind('.')));
  Value logits = linear(h, {&l.router}, b_.getF32Type());
  if (!logits)
    return {};
  int64_t k = c_.numExpertsPerTok;
  auto router = b_.create<ir::MoeRouterOp>(
      where, RankedTensorType::get({ShapedType::kDynamic, k}, b_.getI32Type()),
      RankedTensorType::get({ShapedType::kDynamic, k}, b_.getF32Type()), logits,
      b_.getI64IntegerAttr(k), c_.normTopkProb ? b_.getUnitAttr() : UnitAttr());
  std::vector<std::vector<const Linear *>> gateUp, down;
  for (const GatedMlp &e : l.experts) {
    gateUp.push_back({&e.gate, &e.up});
    down.push_back({&e.down});
  }
  Value gu = linearWeight(gateUp, true);
  Value d = gu ? linearWeight(down, true) : Value();
  if (!d)
    return {};
  // The experts' two GEMMs run one kernel family: FP8 rows only when both
  // the gate|up and the down weights are (a mixed export's FP8 half is
  // held in FP16 like other FP8 weights the kernels cannot read as such).
  auto gw = gu.getDefiningOp<ir::WeightOp>(), dw = d.getDefiningOp<ir::WeightOp>();
  if (gw && dw && gw.getFp8Rows() != dw.getFp8Rows()) {
    gw->removeAttr("fp8_rows");
    dw->removeAttr("fp8_rows");
  }
  Value y = b_.create<ir::MoeExpertsOp>(where, h.getType(), h, router.getIds(), router.getWeights(),
                                        gu, d);
  if (l.sharedExpert) {
    Value shared = mlp(h, *l.sharedExpert, l.router.module + "_shared_expert");
    Value gate = shared ? linear(h, {&*l.sharedExpertGate}) : Value();
    if (!gate)
      return {};
    y = b_.create<ir::SigmoidGateAddOp>(where, y.getType(), y, shared, gate);
  }
  return y;
}

Value Importer::decoderLayer(Value residual, Value h, const Layer &l, Value positions,
                             Value metadata) {
  Value mixed = mixer(h, l, positions, metadata);
  if (!mixed)
    return {};
  residual = add(residual, mixed);
  h = rmsNorm(residual, l.postAttentionNorm);
  Value ffn = l.moe() ? moe(h, *l.moe())
                      : mlp(h, *l.mlp(), "model.layers." + std::to_string(l.index) + ".mlp");
  if (!ffn)
    return {};
  return add(residual, ffn);
}

Value Importer::lmHead(Value last, Type logitsType) {
  if (m_.lmHeadTied)
    return b_.create<ir::LinearOp>(at("lm_head"), logitsType, last, param(m_.embedTokens), Value());
  return linear(last, {&m_.lmHead}, b_.getF32Type());
}

LogicalResult Importer::buildDraft(ModuleOp module) {
  // @draft(tokens, positions, attention, logits_rows, hidden): token t is
  // the token after position t, hidden the target's (or the previous
  // draft step's) normed hidden state at that position. x =
  // mtp.fc([pre_fc_norm_embedding(embed(token)) | pre_fc_norm_hidden(hidden)]),
  // the MTP decoder layer(s), mtp.norm; the shared LM head gives the
  // draft, and the normed state feeds the next draft step.
  const model::MtpHead &mtp = *m_.mtp;
  b_.setInsertionPointToEnd(module.getBody());
  auto ids = RankedTensorType::get({ShapedType::kDynamic}, b_.getI32Type());
  auto logitsType = activation(c_.vocabSize, b_.getF32Type());
  // The hidden rows are kept in FP16, the activation dtype (StepOutput.Hidden).
  auto hiddenType = activation(c_.hiddenSize, b_.getF16Type());
  auto fn = b_.create<func::FuncOp>(
      loc_, "draft",
      b_.getFunctionType({ids, ids, ir::AttentionMetadataType::get(&ctx_), ids, hiddenType},
                         {logitsType, activation(c_.hiddenSize)}));
  const char *roles[] = {"tokens", "positions", "attention", "logits_rows", "hidden"};
  for (unsigned i = 0; i < 5; ++i)
    fn.setArgAttr(i, "volt.input", b_.getStringAttr(roles[i]));
  fn.setResultAttr(0, "volt.output", b_.getStringAttr("logits"));
  fn.setResultAttr(1, "volt.output", b_.getStringAttr("hidden"));
  Block *body = fn.addEntryBlock();
  b_.setInsertionPointToStart(body);
  Value tokens = body->getArgument(0), positions = body->getArgument(1),
        metadata = body->getArgument(2), rows = body->getArgument(3),
        hidden = body->getArgument(4);
  Value e = b_.create<ir::EmbeddingOp>(at(m_.embedTokens.name), activation(c_.hiddenSize), tokens,
                                       param(m_.embedTokens), UnitAttr());
  Value en = rmsNorm(e, mtp.preFcNormEmbedding);
  // In the activation dtype, as the embedding's norm (the hidden rows
  // arrive in FP16, which LegalizeDtypes makes every activation).
  Value hn = b_.create<ir::RmsNormOp>(at(mtp.preFcNormHidden.name), activation(c_.hiddenSize),
                                      hidden, normParam(mtp.preFcNormHidden),
                                      b_.getF32FloatAttr(static_cast<float>(c_.rmsNormEps)));
  Value both = b_.create<ir::ConcatOp>(at("mtp.fc"), activation(2 * c_.hiddenSize), en, hn);
  Value residual = linear(both, {&mtp.fc});
  if (!residual)
    return failure();
  for (const Layer &l : mtp.layers) {
    residual = decoderLayer(residual, rmsNorm(residual, l.inputNorm), l, positions, metadata);
    if (!residual)
      return failure();
  }
  Value normed = rmsNorm(residual, mtp.norm);
  Value last = b_.create<ir::GatherRowsOp>(loc_, normed.getType(), normed, rows);
  Value logits = lmHead(last, logitsType);
  if (!logits)
    return failure();
  b_.create<func::ReturnOp>(loc_, ValueRange{logits, normed});
  return success();
}

Result<OwningOpRef<ModuleOp>> Importer::run() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc_);
  const spec::Sku &sku = spec_.sku;
  auto i64 = [&](int64_t v) { return b_.getI64IntegerAttr(v); };
  auto f64 = [&](double v) { return b_.getF64FloatAttr(v); };
  module->getOperation()->setAttr(
      "volt.target",
      b_.getDictionaryAttr({
          b_.getNamedAttr("name", b_.getStringAttr(sku.name)),
          b_.getNamedAttr("arch", b_.getStringAttr(std::string(spec::archName(sku.arch)))),
          b_.getNamedAttr("memory_bytes", i64(static_cast<int64_t>(sku.memoryBytes))),
          b_.getNamedAttr("sm_count", i64(sku.smCount)),
          b_.getNamedAttr("memory_bandwidth_gbps", f64(sku.memoryBandwidthPracticalGbps)),
          b_.getNamedAttr("fp16_tensor_tflops", f64(sku.fp16TensorTflops)),
          b_.getNamedAttr("shared_memory_per_block_optin_bytes",
                          i64(static_cast<int64_t>(sku.sharedMemoryPerBlockOptinBytes))),
          b_.getNamedAttr("registers_per_sm", i64(sku.registersPerSm)),
          b_.getNamedAttr("bf16", b_.getBoolAttr(sku.dtypes.bf16)),
          b_.getNamedAttr("cuda_context_bytes",
                          i64(static_cast<int64_t>(sku.memoryReserve.cudaContextBytes))),
          b_.getNamedAttr("nccl_bytes", i64(static_cast<int64_t>(sku.memoryReserve.ncclBytes))),
      }));
  module->getOperation()->setAttr(
      "volt.deployment",
      b_.getDictionaryAttr({
          b_.getNamedAttr("tensor_parallel_size", i64(spec_.tensorParallelSize)),
          b_.getNamedAttr("max_model_len", i64(options_.maxModelLen)),
          b_.getNamedAttr("max_num_seqs", i64(spec_.maxNumSeqs)),
          // Logits rows per step: one per sequence plus its drafts.
          b_.getNamedAttr("max_logits_rows",
                          i64(spec_.maxNumSeqs * (1 + spec_.speculative.numSpeculativeTokens))),
          // Recurrent-state slots per layer: one per sequence plus, when
          // verifying drafts, a copy after each draft-carrying token to roll
          // back to (docs/design/speculative.md).
          b_.getNamedAttr("num_state_slots",
                          i64(spec_.maxNumSeqs * (1 + spec_.speculative.numSpeculativeTokens))),
          b_.getNamedAttr("max_num_batched_tokens", i64(spec_.maxNumBatchedTokens)),
          b_.getNamedAttr("gpu_memory_utilization", f64(spec_.gpuMemoryUtilization)),
          b_.getNamedAttr("kv_block_size", i64(spec_.kvCache.blockSize)),
      }));
  module->getOperation()->setAttr(
      "volt.model", b_.getDictionaryAttr({
                        b_.getNamedAttr("architecture", b_.getStringAttr(c_.architecture)),
                        b_.getNamedAttr("vocab_size", i64(c_.vocabSize)),
                        b_.getNamedAttr("hidden_size", i64(c_.hiddenSize)),
                        b_.getNamedAttr("num_layers", i64(c_.numHiddenLayers)),
                        b_.getNamedAttr("num_heads", i64(c_.numAttentionHeads)),
                        b_.getNamedAttr("num_kv_heads", i64(c_.numKeyValueHeads)),
                        b_.getNamedAttr("head_dim", i64(c_.headDim)),
                        b_.getNamedAttr("num_experts", i64(c_.numExperts)),
                        b_.getNamedAttr("top_k", i64(c_.numExpertsPerTok)),
                        b_.getNamedAttr("max_position_embeddings", i64(c_.maxPositionEmbeddings)),
                    }));

  b_.setInsertionPointToEnd(module->getBody());
  auto ids = RankedTensorType::get({ShapedType::kDynamic}, b_.getI32Type());
  auto logitsType = activation(c_.vocabSize, b_.getF32Type());
  // With MTP drafting the target step also returns its hidden states.
  const bool drafting = spec_.speculative.method == spec::SpeculativeMethod::Mtp && m_.mtp;
  SmallVector<Type> results = {logitsType};
  if (drafting)
    results.push_back(activation(c_.hiddenSize));
  auto fnType =
      b_.getFunctionType({ids, ids, ir::AttentionMetadataType::get(&ctx_), ids}, results);
  auto fn = b_.create<func::FuncOp>(loc_, "step", fnType);
  fn.setResultAttr(0, "volt.output", b_.getStringAttr("logits"));
  if (drafting)
    fn.setResultAttr(1, "volt.output", b_.getStringAttr("hidden"));
  fn.setArgAttr(0, "volt.input", b_.getStringAttr("tokens"));
  fn.setArgAttr(1, "volt.input", b_.getStringAttr("positions"));
  fn.setArgAttr(2, "volt.input", b_.getStringAttr("attention"));
  fn.setArgAttr(3, "volt.input", b_.getStringAttr("logits_rows"));
  Block *body = fn.addEntryBlock();
  b_.setInsertionPointToStart(body);
  Value tokens = body->getArgument(0), positions = body->getArgument(1),
        metadata = body->getArgument(2), rows = body->getArgument(3);

  Value residual = b_.create<ir::EmbeddingOp>(at(m_.embedTokens.name), activation(c_.hiddenSize),
                                              tokens, param(m_.embedTokens), UnitAttr());
  Value h = rmsNorm(residual, m_.layers.front().inputNorm);
  for (size_t i = 0; i < m_.layers.size(); ++i) {
    const Layer &l = m_.layers[i];
    if (i > 0)
      h = rmsNorm(residual, l.inputNorm);
    residual = decoderLayer(residual, h, l, positions, metadata);
    if (!residual)
      return Error(error_);
  }
  Value normed = rmsNorm(residual, m_.finalNorm);
  Value last = b_.create<ir::GatherRowsOp>(loc_, normed.getType(), normed, rows);
  Value logits = lmHead(last, logitsType);
  if (!logits)
    return Error(error_);
  if (!drafting) {
    b_.create<func::ReturnOp>(loc_, logits);
  } else {
    // The draft program starts from every token's normed hidden state.
    b_.create<func::ReturnOp>(loc_, ValueRange{logits, normed});
    if (failed(buildDraft(*module)))
      return Error(error_);
  }
  std::string why;
  {
    ScopedDiagnosticHandler capture(&ctx_, [&](Diagnostic &d) {
      if (why.empty())
        why = d.str();
      return success();
    });
    if (succeeded(mlir::verify(*module)))
      return module;
  }
  return Error("internal error: the imported module does not verify: " + why);
}

} // namespace

void loadDialects(MLIRContext &context) {
  context.getOrLoadDialect<ir::VoltDialect>();
  context.getOrLoadDialect<func::FuncDialect>();
}

Result<OwningOpRef<ModuleOp>> importModel(MLIRContext &context, const spec::DeploySpec &spec,
                                          const model::Model &model, const ImportOptions &options) {
  loadDialects(context);
  Importer importer(context, spec, model, options);
  return importer.run();
}

} // namespace volt::import
