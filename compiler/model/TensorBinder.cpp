//===- TensorBinder.cpp ---------------------------------------------------===//
#include "compiler/model/TensorBinder.h"

#include "runtime/numerics/Nvfp4.h"

#include <cmath>
#include <cstring>

namespace volt::model {
namespace {

std::string inQuotes(const std::string &s) { return "'" + s + "'"; }

DType predictedDenseDtype(const ModelConfig &c) {
  if (c.torchDtype == "float16")
    return DType::F16;
  if (c.torchDtype == "float32")
    return DType::F32;
  return DType::BF16;
}

bool isFloat(DType d) { return d == DType::BF16 || d == DType::F16 || d == DType::F32; }

} // namespace

TensorBinder::TensorBinder(const Model &model, const LoadOptions &options)
    : model_(model), ckpt_(model.checkpoint.get()), options_(options),
      denseDtype_(predictedDenseDtype(model.config)) {}

bool TensorBinder::hasWeights() const { return ckpt_ && ckpt_->hasWeights(); }

const Tensor *TensorBinder::take(const std::string &name) {
  if (!hasWeights())
    return nullptr;
  const Tensor *t = ckpt_->find(name);
  if (t)
    used_.insert(name);
  return t;
}

std::string TensorBinder::located(const Tensor &t) const {
  return inQuotes(t.name()) + " (in " + t.file->path() + ")";
}

Error TensorBinder::missing(const std::string &name, const std::string &alternative) const {
  return Error("missing tensor " + inQuotes(name) +
               (alternative.empty() ? "" : " or " + inQuotes(alternative)) + " in " +
               model_.dir.string() + " (" + ckpt_->layout() + ")");
}

Result<Param> TensorBinder::param(const std::string &name, std::vector<int64_t> shape) {
  Param p;
  p.name = name;
  p.shape = std::move(shape);
  p.dtype = denseDtype_;
  if (!hasWeights())
    return p;
  const Tensor *t = take(name);
  if (!t)
    return missing(name);
  if (!isFloat(t->dtype()))
    return Error("tensor " + located(*t) + ": dtype " + std::string(dtypeName(t->dtype())) +
                 ", expected BF16, F16 or F32");
  if (t->shape() != p.shape)
    return Error("tensor " + located(*t) + ": shape " + formatShape(t->shape()) + ", expected " +
                 formatShape(p.shape));
  p.dtype = t->dtype();
  p.tensor = t;
  return p;
}

Result<Linear> TensorBinder::linear(const std::string &module, int64_t out, int64_t in,
                                    bool withBias, bool quantizable) {
  Linear lin;
  lin.module = module;
  lin.outFeatures = out;
  lin.inFeatures = in;
  if (withBias) {
    auto b = param(module + ".bias", {out});
    if (!b)
      return b.error();
    lin.bias = std::move(*b);
  }
  if (!hasWeights())
    return predict(std::move(lin), quantizable);

  if (const Tensor *awq = take(module + ".pre_quant_scale"))
    return Error("tensor " + located(*awq) +
                 ": NVFP4 AWQ checkpoints (pre_quant_scale) are not supported");
  const Tensor *packed = take(module + ".weight_packed");
  const Tensor *weight = packed ? nullptr : take(module + ".weight");
  if (packed)
    return nvfp4(std::move(lin), *packed, module + ".weight_global_scale", true);
  if (!weight)
    return missing(module + ".weight", module + ".weight_packed");
  if (weight->dtype() == DType::U8)
    return nvfp4(std::move(lin), *weight, module + ".weight_scale_2", false);
  if (weight->dtype() == DType::F8E4M3)
    return fp8(std::move(lin), *weight);
  if (!isFloat(weight->dtype()))
    return Error("tensor " + located(*weight) + ": dtype " +
                 std::string(dtypeName(weight->dtype())) +
                 ", expected BF16/F16/F32 (dense), U8 (packed NVFP4) or F8_E4M3 (FP8)");
  std::vector<int64_t> want = {out, in};
  if (weight->shape() != want)
    return Error("tensor " + located(*weight) + ": shape " + formatShape(weight->shape()) +
                 ", expected " + formatShape(want));
  lin.format = WeightFormat::Dense;
  lin.dtype = weight->dtype();
  lin.weight = weight;
  return lin;
}

namespace {

// The parts' runs cover every row of the tensor once.
Status checkTiling(const std::string &name, int64_t tensorRows,
                   const std::vector<TensorBinder::Rows> &parts) {
  std::vector<int> hits(static_cast<size_t>(tensorRows), 0);
  for (const auto &p : parts) {
    if (p.groups < 1 || p.rows % p.groups != 0)
      return Error("internal error: a view of '" + name + "' has " + std::to_string(p.rows) +
                   " rows in " + std::to_string(p.groups) + " runs");
    const int64_t run = p.rows / p.groups;
    for (int64_t g = 0; g < p.groups; ++g)
      for (int64_t r = 0; r < run; ++r) {
        const int64_t row = p.offset + g * p.stride + r;
        if (row < 0 || row >= tensorRows || hits[static_cast<size_t>(row)]++)
          return Error("internal error: the views of '" + name + "' do not tile its " +
                       std::to_string(tensorRows) + " rows");
      }
  }
  for (int h : hits)
    if (h != 1)
      return Error("internal error: the views of '" + name + "' do not tile its " +
                   std::to_string(tensorRows) + " rows");
  return Status::success();
}

RowView viewOf(const TensorBinder::Rows &p, int64_t tensorRows) {
  return {-1, p.offset, p.stride, p.groups, tensorRows};
}

} // namespace

Result<std::vector<Linear>> TensorBinder::linearParts(const std::string &module,
                                                      int64_t tensorRows, int64_t in,
                                                      const std::vector<Rows> &parts) {
  VOLT_RETURN_IF_ERROR(checkTiling(module, tensorRows, parts));
  VOLT_ASSIGN_OR_RETURN(Linear whole, linear(module, tensorRows, in));
  std::vector<Linear> out;
  for (const Rows &p : parts) {
    Linear part = whole;
    part.outFeatures = p.rows;
    part.view = viewOf(p, tensorRows);
    out.push_back(std::move(part));
  }
  return out;
}

bool TensorBinder::has(const std::string &name) const {
  return hasWeights() && ckpt_->find(name) != nullptr;
}

Result<std::vector<Linear>> TensorBinder::expertParts(const std::string &name, int64_t experts,
                                                      int64_t expert, int64_t tensorRows,
                                                      int64_t in, const std::vector<Rows> &parts) {
  VOLT_RETURN_IF_ERROR(checkTiling(name, tensorRows, parts));
  const Tensor *t = take(name);
  if (!t)
    return missing(name);
  if (!isFloat(t->dtype()))
    return Error("tensor " + located(*t) + ": dtype " + std::string(dtypeName(t->dtype())) +
                 ", expected BF16, F16 or F32 (experts stored stacked are read dense; a "
                 "quantized export stores them per expert)");
  std::vector<int64_t> want = {experts, tensorRows, in};
  if (t->shape() != want)
    return Error("tensor " + located(*t) + ": shape " + formatShape(t->shape()) + ", expected " +
                 formatShape(want) + " (experts, rows, inputs)");
  std::vector<Linear> out;
  for (const Rows &p : parts) {
    Linear part;
    part.module = name;
    part.outFeatures = p.rows;
    part.inFeatures = in;
    part.format = WeightFormat::Dense;
    part.dtype = t->dtype();
    part.weight = t;
    part.view = RowView{expert, p.offset, p.stride, p.groups, tensorRows};
    out.push_back(std::move(part));
  }
  return out;
}

Result<std::vector<Param>> TensorBinder::paramParts(const std::string &name,
                                                    std::vector<int64_t> shape,
                                                    const std::vector<Rows> &parts) {
  const int64_t tensorRows = shape.front();
  VOLT_RETURN_IF_ERROR(checkTiling(name, tensorRows, parts));
  const size_t rank = shape.size();
  int64_t cols = 1;
  for (size_t d = 1; d < rank; ++d)
    cols *= shape[d];
  VOLT_ASSIGN_OR_RETURN(Param whole, param(name, std::move(shape)));
  std::vector<Param> out;
  for (const Rows &p : parts) {
    Param part = whole;
    part.shape = rank > 1 ? std::vector<int64_t>{p.rows, cols} : std::vector<int64_t>{p.rows};
    part.view = viewOf(p, tensorRows);
    out.push_back(std::move(part));
  }
  return out;
}

std::vector<std::string> TensorBinder::unused() const {
  std::vector<std::string> out;
  if (!hasWeights())
    return out;
  for (const Tensor &t : ckpt_->tensors())
    if (!used_.count(t.name()))
      out.push_back(t.name());
  return out;
}

Linear TensorBinder::predict(Linear lin, bool quantizable) const {
  const LayerFormat claimed =
      quantizable ? model_.quant.formatOf(lin.module) : LayerFormat::Unquantized;
  if (claimed == LayerFormat::Nvfp4 && lin.inFeatures % 16 == 0) {
    lin.format = WeightFormat::Nvfp4;
    lin.dtype = DType::U8;
  } else if (claimed == LayerFormat::Fp8) {
    lin.format = WeightFormat::Fp8;
    lin.dtype = DType::F8E4M3;
    lin.fp8BlockScaled = model_.quant.fp8BlockScaled(lin.module);
  } else {
    lin.format = WeightFormat::Dense;
    lin.dtype = denseDtype_;
  }
  lin.globalScale = std::nanf("");
  return lin;
}

Result<Linear> TensorBinder::fp8(Linear lin, const Tensor &weight) {
  const std::string &module = lin.module;
  const int64_t out = lin.outFeatures, in = lin.inFeatures;
  std::vector<int64_t> want = {out, in};
  if (weight.shape() != want)
    return Error("tensor " + located(weight) + ": shape " + formatShape(weight.shape()) +
                 ", expected " + formatShape(want) + " for an FP8 weight");
  // ModelOpt names the multiplier weight_scale, transformers' block FP8
  // weight_scale_inv (the inverse of the quantization scale: also a
  // multiplier).
  const Tensor *scale = take(module + ".weight_scale");
  if (!scale)
    scale = take(module + ".weight_scale_inv");
  if (!scale)
    return Error("tensor " + located(weight) + " is FP8 but has no " +
                 inQuotes(module + ".weight_scale") + " or " +
                 inQuotes(module + ".weight_scale_inv") + " sibling (its scale)");
  const std::vector<int64_t> &shape = scale->shape();
  const int64_t blocksOut = (out + kFp8Block - 1) / kFp8Block,
                blocksIn = (in + kFp8Block - 1) / kFp8Block;
  const bool perTensor = scale->entry->numElements() == 1 && shape.size() <= 1;
  const bool perRow = (shape.size() == 1 && shape[0] == out) ||
                      (shape.size() == 2 && shape[0] == out && shape[1] == 1);
  const bool perBlock = shape.size() == 2 && shape[0] == blocksOut && shape[1] == blocksIn;
  if (scale->dtype() != DType::F32 && scale->dtype() != DType::BF16 &&
      scale->dtype() != DType::F16)
    return Error("tensor " + located(*scale) + ": FP8 scales must be F32, BF16 or F16, found " +
                 std::string(dtypeName(scale->dtype())));
  if (!perTensor && !perRow && !perBlock)
    return Error("tensor " + located(*scale) + ": shape " + formatShape(shape) +
                 ", expected [] (per tensor), " + formatShape(std::vector<int64_t>{out}) + " (per output row) or " +
                 formatShape(std::vector<int64_t>{blocksOut, blocksIn}) + " (per 128 x 128 block) for a " +
                 formatShape(want) + " FP8 weight");
  // Every scale is read: there are few of them, and a bad one would make
  // the whole tensor wrong.
  const size_t scales = scale->data().size() / dtypeSize(scale->dtype());
  for (size_t i = 0; i < scales; ++i) {
    const float v = scale->floatAt(i);
    if (!std::isfinite(v) || v < 0.0f)
      return Error("tensor " + located(*scale) + ": scale " + std::to_string(i) + " is " +
                   std::to_string(v) + "; FP8 scales must be finite and non-negative");
  }
  if (options_.verifyData) {
    weight.prefetch();
    auto data = weight.data();
    for (size_t i = 0; i < data.size(); ++i)
      if ((data[i] & 0x7F) == 0x7F)
        return Error("tensor " + located(weight) + ": element [" +
                     std::to_string(i / static_cast<size_t>(in)) + ", " +
                     std::to_string(i % static_cast<size_t>(in)) + "] is NaN");
  }
  lin.format = WeightFormat::Fp8;
  lin.dtype = DType::F8E4M3;
  lin.weight = &weight;
  lin.weightScale = scale;
  lin.fp8BlockScaled = perBlock && !perTensor;
  // Static activation scales (W8A8) mean nothing to a weight-only kernel.
  take(module + ".input_scale");
  return lin;
}

Result<Linear> TensorBinder::nvfp4(Linear lin, const Tensor &packed, const std::string &globalName,
                                   bool globalIsDivisor) {
  const std::string &module = lin.module;
  int64_t out = lin.outFeatures, in = lin.inFeatures;
  if (packed.dtype() != DType::U8)
    return Error("tensor " + located(packed) + ": packed NVFP4 data must be U8, found " +
                 std::string(dtypeName(packed.dtype())));
  if (in % nvfp4::kBlockSize != 0)
    return Error("tensor " + located(packed) + ": NVFP4 needs the input dimension " +
                 std::to_string(in) + " to be a multiple of 16");
  std::vector<int64_t> wantPacked = {out, in / 2};
  if (packed.shape() != wantPacked)
    return Error("tensor " + located(packed) + ": shape " + formatShape(packed.shape()) +
                 ", expected " + formatShape(wantPacked) + " for a [" + std::to_string(out) + ", " +
                 std::to_string(in) + "] NVFP4 weight");
  const Tensor *scales = take(module + ".weight_scale");
  if (!scales)
    return Error("tensor " + located(packed) + " is packed NVFP4 but has no " +
                 inQuotes(module + ".weight_scale") + " sibling (block scales)");
  std::vector<int64_t> wantScales = {out, in / nvfp4::kBlockSize};
  if (scales->dtype() != DType::F8E4M3)
    return Error("tensor " + located(*scales) + ": block scales must be F8_E4M3, found " +
                 std::string(dtypeName(scales->dtype())));
  if (scales->shape() != wantScales)
    return Error("tensor " + located(*scales) + ": shape " + formatShape(scales->shape()) +
                 ", expected " + formatShape(wantScales));
  const Tensor *global = take(globalName);
  if (!global)
    return Error("tensor " + located(packed) + " is packed NVFP4 but has no " +
                 inQuotes(globalName) + " sibling (global scale)");
  if (global->dtype() != DType::F32 || global->entry->numElements() != 1 ||
      global->shape().size() > 1)
    return Error("tensor " + located(*global) +
                 ": global scale must be one F32 (shape [] or [1]), found " +
                 std::string(dtypeName(global->dtype())) + " " + formatShape(global->shape()));
  float value;
  std::memcpy(&value, global->data().data(), sizeof value);
  if (!std::isfinite(value) || value <= 0.0f)
    return Error("tensor " + located(*global) +
                 ": global scale must be a positive finite number, found " + std::to_string(value));
  lin.format = WeightFormat::Nvfp4;
  lin.dtype = DType::U8;
  lin.weight = &packed;
  lin.blockScales = scales;
  lin.globalScale = globalIsDivisor ? 1.0f / value : value;
  if (!std::isfinite(lin.globalScale) || lin.globalScale <= 0.0f)
    return Error("tensor " + located(*global) + ": global scale " + std::to_string(value) +
                 " has no finite positive reciprocal");
  // W4A4 activation scales are meaningless without FP4 hardware.
  take(module + ".input_scale");
  take(module + ".input_global_scale");
  if (options_.verifyData)
    VOLT_RETURN_IF_ERROR(verifyBlockScales(*scales, in / nvfp4::kBlockSize));
  return lin;
}

Status TensorBinder::verifyBlockScales(const Tensor &scales, int64_t perRow) const {
  scales.prefetch();
  auto bytes = scales.data();
  for (size_t i = 0; i < bytes.size(); ++i) {
    uint8_t b = bytes[i];
    bool nan = (b & 0x7F) == 0x7F;
    bool negative = (b & 0x80) && (b & 0x7F);
    if (nan || negative)
      return Error("tensor " + located(scales) + ": block scale at [" +
                   std::to_string(i / static_cast<size_t>(perRow)) + ", " +
                   std::to_string(i % static_cast<size_t>(perRow)) + "] is " +
                   (nan ? "NaN" : "negative (" + std::to_string(nvfp4::decodeE4M3(b)) + ")") +
                   "; block scales must be finite and non-negative");
  }
  return Status::success();
}

} // namespace volt::model
