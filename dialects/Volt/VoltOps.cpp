//===- VoltOps.cpp - verifiers of the volt ops ---------------------------===//
//
// Every op checks the shapes and element types that its definition relies
// on, so that a malformed graph fails where it is made, with a message that
// names the operand and the dimension.
//
//===----------------------------------------------------------------------===//
#include "dialects/Volt/VoltOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"

#include <numeric>

using namespace mlir;
using namespace volt::ir;

namespace {

RankedTensorType ranked(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The size of the last dimension (kDynamic when unknown).
int64_t lastDim(Value v) { return ranked(v).getShape().back(); }

/// Two sizes agree when equal or when either is dynamic.
bool compatible(int64_t a, int64_t b) {
  return a == b || ShapedType::isDynamic(a) || ShapedType::isDynamic(b);
}

std::string shapeString(Value v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << v.getType();
  return s;
}

/// Checks `v` has `rank` dimensions; the message names `what`.
LogicalResult expectRank(Operation *op, Value v, int64_t rank, StringRef what) {
  if (ranked(v).getRank() != rank)
    return op->emitOpError() << what << " must have rank " << rank << ", found " << shapeString(v);
  return success();
}

/// Checks an activation: rank 2, `[?, cols]` (cols may be dynamic).
LogicalResult expectActivation(Operation *op, Value v, int64_t cols, StringRef what) {
  if (failed(expectRank(op, v, 2, what)))
    return failure();
  if (!compatible(lastDim(v), cols))
    return op->emitOpError() << what << " must have " << cols << " columns, found "
                             << shapeString(v);
  return success();
}

/// Checks the weight attributes shared by volt.weight and volt.nvfp4_weight
/// against the (rows, cols) of the logical weight and the experts count.
LogicalResult verifyWeightAttrs(Operation *op, ArrayAttr names, ArrayRef<int64_t> partRows,
                                int64_t experts, ArrayRef<int64_t> shape) {
  if (names.empty())
    return op->emitOpError() << "needs at least one checkpoint tensor name";
  if (partRows.empty())
    return op->emitOpError() << "needs part_rows";
  if (experts < 0)
    return op->emitOpError() << "experts must be non-negative, found " << experts;
  int64_t perExpert = static_cast<int64_t>(partRows.size());
  int64_t wantNames = experts > 0 ? experts * perExpert : perExpert;
  if (static_cast<int64_t>(names.size()) != wantNames)
    return op->emitOpError() << "has " << names.size() << " names for " << perExpert << " part(s)"
                             << (experts > 0 ? " per expert" : "") << "; expected " << wantNames;
  // [rows, cols] or [rows] (biases, norm weights), with a leading experts
  // dimension when stacked.
  int64_t base = experts > 0 ? 1 : 0;
  if (static_cast<int64_t>(shape.size()) != base + 2 &&
      static_cast<int64_t>(shape.size()) != base + 1)
    return op->emitOpError() << "must have rank " << base + 1 << " or " << base + 2
                             << (experts > 0 ? " ([experts, rows(, cols)])" : " ([rows(, cols)])");
  if (experts > 0 && shape[0] != experts)
    return op->emitOpError() << "stacks " << experts << " experts but its leading dimension is "
                             << shape[0];
  int64_t rows = std::accumulate(partRows.begin(), partRows.end(), int64_t{0});
  for (int64_t r : partRows)
    if (r <= 0)
      return op->emitOpError() << "part_rows must be positive";
  int64_t haveRows = shape[base];
  if (rows != haveRows)
    return op->emitOpError() << "part_rows sum to " << rows << " but the weight has " << haveRows
                             << " rows";
  return success();
}

/// Checks an NVFP4 (packed, scales) pair of logical shape [..., rows, cols].
LogicalResult verifyNvfp4Pair(Operation *op, Value packed, Value scales,
                              SmallVectorImpl<int64_t> &logical) {
  auto p = ranked(packed).getShape();
  auto s = ranked(scales).getShape();
  if (p.size() != s.size() || p.size() < 2)
    return op->emitOpError() << "packed data and block scales must have the same rank (2 or 3), "
                                "found "
                             << shapeString(packed) << " and " << shapeString(scales);
  for (size_t i = 0; i + 1 < p.size(); ++i)
    if (p[i] != s[i])
      return op->emitOpError() << "packed data " << shapeString(packed) << " and block scales "
                               << shapeString(scales) << " disagree in dimension " << i;
  int64_t cols = p.back() * 2;
  if (cols % 16 != 0 || s.back() * 16 != cols)
    return op->emitOpError() << "block scales " << shapeString(scales)
                             << " must have one scale per 16 of the " << cols
                             << " columns that packed data " << shapeString(packed) << " holds";
  logical.assign(p.begin(), p.end());
  logical.back() = cols;
  return success();
}

LogicalResult verifyGlobalScales(Operation *op, ArrayRef<float> scales, size_t want) {
  if (scales.size() != want)
    return op->emitOpError() << "has " << scales.size() << " global scales; expected " << want;
  for (float g : scales)
    if (!(g > 0.0f) || !std::isfinite(g))
      return op->emitOpError() << "global scales must be positive and finite, found " << g;
  return success();
}

} // namespace

/// `views`, when present: five numbers per name (expert, offset, stride,
/// groups, tensor_rows).
static LogicalResult verifyRowViews(Operation *op, std::optional<ArrayRef<int64_t>> views,
                             size_t names) {
  if (!views)
    return success();
  if (views->size() != 5 * names)
    return op->emitOpError() << "has " << views->size() << " view numbers for " << names
                             << " names; expected 5 per name (expert, offset, stride, groups, "
                                "tensor_rows)";
  for (size_t i = 0; i < names; ++i) {
    const int64_t *v = views->data() + 5 * i;
    if (v[0] < -1 || v[1] < 0 || v[2] < 0 || v[3] < 1 || v[4] < 1)
      return op->emitOpError() << "has an invalid row view for name " << i << ": expert " << v[0]
                               << ", offset " << v[1] << ", stride " << v[2] << ", groups "
                               << v[3] << ", tensor_rows " << v[4];
  }
  return success();
}

/// `shards`, when present, holds one #volt.shard per part.
static LogicalResult verifyShards(Operation *op, std::optional<ArrayAttr> shards, size_t parts,
                                  size_t rank) {
  if (!shards)
    return success();
  if (shards->size() != parts)
    return op->emitOpError() << "has " << shards->size() << " shards for " << parts << " parts";
  for (Attribute a : *shards) {
    auto shard = dyn_cast<ShardAttr>(a);
    if (!shard)
      return op->emitOpError() << "shards must be #volt.shard attributes";
    if (shard.getDim() < 0 || shard.getDim() >= static_cast<int64_t>(rank) ||
        shard.getParts() < 1 || shard.getReplicas() < 1)
      return op->emitOpError() << "has an invalid shard " << shard;
  }
  return success();
}

LogicalResult WeightOp::verify() {
  if (failed(verifyWeightAttrs(*this, getNames(), getPartRows(), getExperts(),
                               getResult().getType().getShape())) ||
      failed(verifyRowViews(*this, getViews(), getNames().size())))
    return failure();
  if (auto scales = getScaleNames(); scales && scales->size() != getNames().size())
    return emitOpError() << "has " << scales->size() << " scale_names for "
                         << getNames().size() << " names";
  if (getFp8Rows()) {
    auto scales = getScaleNames();
    bool allScaled = scales.has_value();
    if (scales)
      for (Attribute a : *scales)
        allScaled &= !cast<StringAttr>(a).getValue().empty();
    if (!allScaled)
      return emitOpError() << "has fp8_rows but not a scale for every name";
    if (getAddOne())
      return emitOpError() << "has fp8_rows with add_one (FP8 rows serve linear layers and "
                              "experts only)";
  }
  return verifyShards(*this, getShards(), getPartRows().size(), getResult().getType().getRank());
}

LogicalResult Nvfp4WeightOp::verify() {
  SmallVector<int64_t> logical;
  if (failed(verifyNvfp4Pair(*this, getPacked(), getScales(), logical)))
    return failure();
  if (failed(verifyWeightAttrs(*this, getNames(), getPartRows(), getExperts(), logical)) ||
      failed(verifyRowViews(*this, getViews(), getNames().size())))
    return failure();
  if (failed(verifyShards(*this, getShards(), getPartRows().size(), logical.size())))
    return failure();
  return verifyGlobalScales(*this, getGlobalScales(), getNames().size());
}

LogicalResult DequantOp::verify() {
  SmallVector<int64_t> logical;
  if (failed(verifyNvfp4Pair(*this, getPacked(), getScales(), logical)))
    return failure();
  if (ranked(getResult()).getShape() != ArrayRef<int64_t>(logical))
    return emitOpError() << "result " << shapeString(getResult())
                         << " must have the logical shape of the packed weight";
  int64_t rows = std::accumulate(getPartRows().begin(), getPartRows().end(), int64_t{0});
  if (rows != logical[logical.size() - 2])
    return emitOpError() << "part_rows sum to " << rows << " but the weight has "
                         << logical[logical.size() - 2] << " rows";
  int64_t experts = logical.size() == 3 ? logical[0] : 1;
  return verifyGlobalScales(*this, getGlobalScales(), getPartRows().size() * experts);
}

LogicalResult EmbeddingOp::verify() {
  if (failed(expectRank(*this, getTokens(), 1, "tokens")) ||
      failed(expectRank(*this, getTable(), 2, "table")))
    return failure();
  return expectActivation(*this, getResult(), lastDim(getTable()), "result");
}

LogicalResult RmsNormOp::verify() {
  if (failed(expectRank(*this, getWeight(), 1, "weight")))
    return failure();
  if (!compatible(lastDim(getX()), lastDim(getWeight())))
    return emitOpError() << "weight " << shapeString(getWeight())
                         << " must match the last dimension of " << shapeString(getX());
  if (ranked(getX()).getShape() != ranked(getResult()).getShape())
    return emitOpError() << "result must have the shape of the input";
  return success();
}

LogicalResult AddOp::verify() {
  if (ranked(getLhs()).getShape() != ranked(getRhs()).getShape() ||
      ranked(getLhs()).getShape() != ranked(getResult()).getShape())
    return emitOpError() << "operands and result must have one shape, found "
                         << shapeString(getLhs()) << " and " << shapeString(getRhs());
  return success();
}

LogicalResult AddRmsNormOp::verify() {
  if (failed(expectRank(*this, getWeight(), 1, "weight")))
    return failure();
  auto shape = ranked(getX()).getShape();
  if (ranked(getResidual()).getShape() != shape || ranked(getResult()).getShape() != shape ||
      ranked(getResidualOut()).getShape() != shape)
    return emitOpError() << "input, residual and results must have one shape";
  if (getResidual().getType() != getResidualOut().getType())
    return emitOpError() << "residual_out must have the residual's type";
  if (!compatible(shape.back(), lastDim(getWeight())))
    return emitOpError() << "weight must match the last dimension";
  return success();
}

LogicalResult LinearOp::verify() {
  if (failed(expectRank(*this, getWeight(), 2, "weight")))
    return failure();
  auto w = ranked(getWeight()).getShape();
  if (failed(expectActivation(*this, getX(), w[1], "input")) ||
      failed(expectActivation(*this, getResult(), w[0], "result")))
    return failure();
  if (getBias() &&
      (failed(expectRank(*this, getBias(), 1, "bias")) || !compatible(lastDim(getBias()), w[0])))
    return emitOpError() << "bias must have " << w[0] << " elements";
  return success();
}

LogicalResult QLinearOp::verify() {
  SmallVector<int64_t> logical;
  if (failed(verifyNvfp4Pair(*this, getPacked(), getScales(), logical)))
    return failure();
  if (logical.size() != 2)
    return emitOpError() << "weight must have rank 2";
  int64_t rows = std::accumulate(getPartRows().begin(), getPartRows().end(), int64_t{0});
  if (rows != logical[0])
    return emitOpError() << "part_rows sum to " << rows << " but the weight has " << logical[0]
                         << " rows";
  if (failed(verifyGlobalScales(*this, getGlobalScales(), getPartRows().size())))
    return failure();
  if (failed(expectActivation(*this, getX(), logical[1], "input")))
    return failure();
  int64_t outCols = logical[0];
  if (auto epilogue = getEpilogue()) {
    if (*epilogue != "silu_mul")
      return emitOpError() << "unknown epilogue '" << *epilogue << "' (valid: silu_mul)";
    if (getPartRows().size() != 2 || getPartRows()[0] != getPartRows()[1])
      return emitOpError() << "the silu_mul epilogue needs two parts (gate, up) of equal rows";
    outCols = logical[0] / 2;
  }
  if (getBias() && !compatible(lastDim(getBias()), logical[0]))
    return emitOpError() << "bias must have " << logical[0] << " elements";
  return expectActivation(*this, getResult(), outCols, "result");
}

LogicalResult SiluMulOp::verify() {
  int64_t in = lastDim(getX());
  if (!ShapedType::isDynamic(in) && in % 2 != 0)
    return emitOpError() << "input must have an even last dimension (gate | up), found "
                         << shapeString(getX());
  return expectActivation(*this, getResult(), ShapedType::isDynamic(in) ? in : in / 2, "result");
}

namespace {
LogicalResult verifyHeads(Operation *op, Value qkv, int64_t heads, int64_t kvHeads,
                          int64_t headDim) {
  if (heads <= 0 || kvHeads <= 0 || headDim <= 0 || headDim % 2 != 0)
    return op->emitOpError() << "needs positive head counts and an even head_dim";
  if (heads % kvHeads != 0)
    return op->emitOpError() << "num_heads " << heads << " is not a multiple of num_kv_heads "
                             << kvHeads;
  return expectActivation(op, qkv, (heads + 2 * kvHeads) * headDim, "qkv");
}
} // namespace

LogicalResult QkNormOp::verify() {
  if (failed(verifyHeads(*this, getQkv(), getNumHeads(), getNumKvHeads(), getHeadDim())))
    return failure();
  for (Value w : {getQWeight(), getKWeight()})
    if (failed(expectRank(*this, w, 1, "norm weight")) || lastDim(w) != getHeadDim())
      return emitOpError() << "norm weights must have head_dim " << getHeadDim() << " elements";
  return success();
}

/// rotary_dim, when given: even, positive, at most head_dim.
static LogicalResult verifyRotaryDim(Operation *op, std::optional<int64_t> rotary,
                                     int64_t headDim) {
  if (rotary && (*rotary <= 0 || *rotary % 2 != 0 || *rotary > headDim))
    return op->emitOpError() << "rotary_dim " << *rotary
                             << " must be even, positive and at most head_dim " << headDim;
  return success();
}

LogicalResult RopeOp::verify() {
  if (failed(expectRank(*this, getPositions(), 1, "positions")) ||
      failed(verifyRotaryDim(*this, getRotaryDim(), getHeadDim())))
    return failure();
  return verifyHeads(*this, getQkv(), getNumHeads(), getNumKvHeads(), getHeadDim());
}

LogicalResult QkNormRopeOp::verify() {
  if (failed(expectRank(*this, getPositions(), 1, "positions")) ||
      failed(verifyRotaryDim(*this, getRotaryDim(), getHeadDim())))
    return failure();
  if (static_cast<bool>(getQWeight()) != static_cast<bool>(getKWeight()))
    return emitOpError() << "needs both q and k norm weights, or neither";
  if (getQWeight())
    for (Value w : {getQWeight(), getKWeight()})
      if (failed(expectRank(*this, w, 1, "norm weight")) || lastDim(w) != getHeadDim())
        return emitOpError() << "norm weights must have head_dim " << getHeadDim() << " elements";
  return verifyHeads(*this, getQkv(), getNumHeads(), getNumKvHeads(), getHeadDim());
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyHeads(*this, getQkv(), getNumHeads(), getNumKvHeads(), getHeadDim())))
    return failure();
  if (getLayer() < 0)
    return emitOpError() << "layer must be non-negative";
  return expectActivation(*this, getResult(), getNumHeads() * getHeadDim(), "result");
}

LogicalResult EmaScanOp::verify() {
  if (failed(expectRank(*this, getX(), 2, "x")) ||
      failed(expectRank(*this, getDecay(), 1, "decay")))
    return failure();
  const int64_t dim = lastDim(getX());
  if (!ShapedType::isDynamic(dim) && lastDim(getDecay()) != dim)
    return emitOpError() << "decay has " << lastDim(getDecay()) << " channels for " << dim;
  if (getLayerAttr().getInt() < 0)
    return emitOpError() << "layer must be non-negative";
  return expectActivation(*this, getResult(), dim, "result");
}

LogicalResult CausalConv1dOp::verify() {
  if (failed(expectRank(*this, getX(), 2, "x")) ||
      failed(expectRank(*this, getWeight(), 2, "weight")))
    return failure();
  const int64_t dim = lastDim(getX());
  auto w = ranked(getWeight()).getShape();
  if (!ShapedType::isDynamic(dim) && w[0] != dim)
    return emitOpError() << "weight has " << w[0] << " channels for " << dim;
  if (w[1] < 2)
    return emitOpError() << "the kernel must be at least 2 wide, found " << w[1];
  if (getLayer() < 0)
    return emitOpError() << "layer must be non-negative";
  return expectActivation(*this, getResult(), dim, "result");
}

LogicalResult GatedDeltaRuleOp::verify() {
  const int64_t hk = getKeyHeads(), hv = getValueHeads(), dk = getKeyDim(), dv = getValueDim();
  if (hk <= 0 || hv <= 0 || dk <= 0 || dv <= 0 || hv % hk != 0)
    return emitOpError() << "needs positive heads and dims with value_heads a multiple of "
                            "key_heads, found "
                         << hk << " key heads, " << hv << " value heads, dims " << dk << " and "
                         << dv;
  if (failed(expectActivation(*this, getQkv(), 2 * hk * dk + hv * dv, "qkv")) ||
      failed(expectActivation(*this, getGates(), 2 * hv, "gates")) ||
      failed(expectActivation(*this, getZ(), hv * dv, "z")))
    return failure();
  for (auto [v, n, what] : {std::tuple{getALog(), hv, "a_log"}, std::tuple{getDtBias(), hv, "dt_bias"},
                            std::tuple{getNormWeight(), dv, "norm_weight"}})
    if (failed(expectRank(*this, v, 1, what)) || lastDim(v) != n)
      return emitOpError() << what << " must have " << n << " elements";
  if (getLayer() < 0)
    return emitOpError() << "layer must be non-negative";
  return expectActivation(*this, getResult(), hv * dv, "result");
}

LogicalResult SigmoidMulOp::verify() {
  auto shape = ranked(getX()).getShape();
  if (ranked(getGate()).getShape() != shape || ranked(getResult()).getShape() != shape)
    return emitOpError() << "input, gate and result must have one shape";
  return success();
}

LogicalResult ConcatOp::verify() {
  auto a = ranked(getA()), b = ranked(getB()), r = ranked(getResult());
  if (a.getRank() != 2 || b.getRank() != 2 || r.getRank() != 2)
    return emitOpError() << "expects rank-2 operands and result";
  if (a.getElementType() != b.getElementType() || a.getElementType() != r.getElementType())
    return emitOpError() << "operands and result must have one element type";
  int64_t ad = a.getShape()[1], bd = b.getShape()[1], rd = r.getShape()[1];
  if (!ShapedType::isDynamic(ad) && !ShapedType::isDynamic(bd) && !ShapedType::isDynamic(rd) &&
      ad + bd != rd)
    return emitOpError() << "result width " << rd << " must be " << ad << " + " << bd;
  return success();
}

LogicalResult MoeRouterOp::verify() {
  if (failed(expectRank(*this, getLogits(), 2, "logits")))
    return failure();
  int64_t experts = lastDim(getLogits());
  if (getTopK() <= 0 || (!ShapedType::isDynamic(experts) && getTopK() > experts))
    return emitOpError() << "top_k " << getTopK() << " must be in 1.." << experts;
  if (failed(expectActivation(*this, getIds(), getTopK(), "ids")) ||
      failed(expectActivation(*this, getWeights(), getTopK(), "weights")))
    return failure();
  return success();
}

namespace {
/// Checks the routing operands of the MoE ops and returns k.
LogicalResult verifyRouting(Operation *op, Value ids, Value weights) {
  if (failed(expectRank(op, ids, 2, "ids")) || failed(expectRank(op, weights, 2, "weights")))
    return failure();
  if (ranked(ids).getShape() != ranked(weights).getShape())
    return op->emitOpError() << "ids and weights must have one shape";
  return success();
}

/// Checks stacked expert weights [E, 2I, H] (gate|up) and [E, H, I] (down).
LogicalResult verifyExpertShapes(Operation *op, ArrayRef<int64_t> gateUp, ArrayRef<int64_t> down,
                                 Value x, Value result) {
  if (gateUp.size() != 3 || down.size() != 3)
    return op->emitOpError() << "expert weights must have rank 3 ([experts, rows, cols])";
  if (gateUp[0] != down[0])
    return op->emitOpError() << "gate_up has " << gateUp[0] << " experts but down has " << down[0];
  int64_t hidden = gateUp[2], width = down[2];
  if (gateUp[1] != 2 * width || down[1] != hidden)
    return op->emitOpError() << "gate_up [E, 2I, H] and down [E, H, I] disagree: gate_up rows "
                             << gateUp[1] << ", down " << down[1] << "x" << width << ", hidden "
                             << hidden;
  if (failed(expectActivation(op, x, hidden, "input")) ||
      failed(expectActivation(op, result, hidden, "result")))
    return failure();
  return success();
}
} // namespace

LogicalResult MoeExpertsOp::verify() {
  if (failed(verifyRouting(*this, getIds(), getWeights())))
    return failure();
  return verifyExpertShapes(*this, ranked(getGateUp()).getShape(), ranked(getDown()).getShape(),
                            getX(), getResult());
}

LogicalResult MoeQExpertsOp::verify() {
  if (failed(verifyRouting(*this, getIds(), getWeights())))
    return failure();
  SmallVector<int64_t> gateUp, down;
  if (failed(verifyNvfp4Pair(*this, getGateUpPacked(), getGateUpBlockScales(), gateUp)) ||
      failed(verifyNvfp4Pair(*this, getDownPacked(), getDownBlockScales(), down)))
    return failure();
  if (failed(verifyExpertShapes(*this, gateUp, down, getX(), getResult())))
    return failure();
  if (failed(verifyGlobalScales(*this, getGateUpScales(), 2 * gateUp[0])) ||
      failed(verifyGlobalScales(*this, getDownScales(), down[0])))
    return failure();
  return success();
}

LogicalResult SigmoidGateAddOp::verify() {
  auto shape = ranked(getX()).getShape();
  if (ranked(getValue()).getShape() != shape || ranked(getResult()).getShape() != shape)
    return emitOpError() << "input, value and result must have one shape";
  return expectActivation(*this, getGate(), 1, "gate");
}

LogicalResult AllGatherOp::verify() {
  if (getParts() < 1)
    return emitOpError() << "parts must be at least 1";
  int64_t in = lastDim(getX());
  int64_t want = ShapedType::isDynamic(in) ? in : in * getParts();
  return expectActivation(*this, getResult(), want, "result");
}

LogicalResult GatherRowsOp::verify() {
  if (failed(expectRank(*this, getRows(), 1, "rows")))
    return failure();
  return expectActivation(*this, getResult(), lastDim(getX()), "result");
}

#define GET_OP_CLASSES
#include "dialects/Volt/VoltOps.cpp.inc"
