//===- ModelLoader.cpp - binds a checkpoint's tensors to the model -------===//
//
// Walks the architecture the config describes, finds each weight by its
// Hugging Face name, decides its format from the tensors present, and checks
// every shape and dtype. Errors name the tensor and the file that holds it.
//
//===----------------------------------------------------------------------===//
#include "compiler/model/Model.h"

#include "runtime/numerics/Nvfp4.h"
#include "runtime/support/CheckedMath.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <set>

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

/// Binds tensors by name and remembers which ones were used.
class Binder {
public:
  Binder(const Model &model, const LoadOptions &options)
      : model_(model), ckpt_(model.checkpoint.get()), options_(options),
        denseDtype_(predictedDenseDtype(model.config)) {}

  bool hasWeights() const { return ckpt_ && ckpt_->hasWeights(); }

  const Tensor *take(const std::string &name) {
    if (!hasWeights())
      return nullptr;
    const Tensor *t = ckpt_->find(name);
    if (t)
      used_.insert(name);
    return t;
  }

  std::string located(const Tensor &t) const {
    return inQuotes(t.name()) + " (in " + t.file->path() + ")";
  }

  Error missing(const std::string &name, const std::string &alternative = "") const {
    return Error("missing tensor " + inQuotes(name) + (alternative.empty() ? "" : " or " +
                 inQuotes(alternative)) + " in " + model_.dir.string() + " (" +
                 ckpt_->layout() + ")");
  }

  /// A float parameter of exact shape.
  Result<Param> param(const std::string &name, std::vector<int64_t> shape) {
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
      return Error("tensor " + located(*t) + ": shape " + formatShape(t->shape()) +
                   ", expected " + formatShape(p.shape));
    p.dtype = t->dtype();
    p.tensor = t;
    return p;
  }

  /// A linear layer [out, in], dense or NVFP4 as the tensors present say.
  Result<Linear> linear(const std::string &module, int64_t out, int64_t in, bool withBias = false,
                        bool quantizable = true) {
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
    if (!isFloat(weight->dtype()))
      return Error("tensor " + located(*weight) + ": dtype " +
                   std::string(dtypeName(weight->dtype())) +
                   ", expected BF16/F16/F32 (dense) or U8 (packed NVFP4)");
    std::vector<int64_t> want = {out, in};
    if (weight->shape() != want)
      return Error("tensor " + located(*weight) + ": shape " + formatShape(weight->shape()) +
                   ", expected " + formatShape(want));
    lin.format = WeightFormat::Dense;
    lin.dtype = weight->dtype();
    lin.weight = weight;
    return lin;
  }

  /// Marks checkpoint tensors every NVFP4 linear may carry but volt does not
  /// use; everything else left over is reported as unused.
  std::vector<std::string> unused() const {
    std::vector<std::string> out;
    if (!hasWeights())
      return out;
    for (const Tensor &t : ckpt_->tensors())
      if (!used_.count(t.name()))
        out.push_back(t.name());
    return out;
  }

private:
  Linear predict(Linear lin, bool quantizable) const {
    bool quantized = model_.quant.format != QuantFormat::None && quantizable &&
                     !model_.quant.isExcluded(lin.module) && lin.inFeatures % 16 == 0;
    lin.format = quantized ? WeightFormat::Nvfp4 : WeightFormat::Dense;
    lin.dtype = quantized ? DType::U8 : denseDtype_;
    lin.globalScale = std::nanf("");
    return lin;
  }

  Result<Linear> nvfp4(Linear lin, const Tensor &packed, const std::string &globalName,
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
                   ", expected " + formatShape(wantPacked) + " for a [" + std::to_string(out) +
                   ", " + std::to_string(in) + "] NVFP4 weight");
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
      return Error("tensor " + located(*global) + ": global scale must be one F32 (shape [] or "
                   "[1]), found " + std::string(dtypeName(global->dtype())) + " " +
                   formatShape(global->shape()));
    float value;
    std::memcpy(&value, global->data().data(), sizeof value);
    if (!std::isfinite(value) || value <= 0.0f)
      return Error("tensor " + located(*global) + ": global scale must be a positive finite "
                   "number, found " + std::to_string(value));
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

  Status verifyBlockScales(const Tensor &scales, int64_t perRow) const {
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

  const Model &model_;
  const Checkpoint *ckpt_;
  LoadOptions options_;
  DType denseDtype_;
  std::set<std::string> used_;
};

#define VOLT_BIND(lhs, expr)                                                                       \
  do {                                                                                             \
    auto r_ = (expr);                                                                              \
    if (!r_)                                                                                       \
      return r_.error();                                                                           \
    lhs = std::move(*r_);                                                                          \
  } while (false)

Result<GatedMlp> gatedMlp(Binder &b, const std::string &prefix, const char *gate, const char *up,
                          const char *down, int64_t hidden, int64_t width) {
  GatedMlp m;
  VOLT_BIND(m.gate, b.linear(prefix + gate, width, hidden));
  VOLT_BIND(m.up, b.linear(prefix + up, width, hidden));
  VOLT_BIND(m.down, b.linear(prefix + down, hidden, width));
  return m;
}

Result<Layer> bindLayer(Binder &b, const ModelConfig &c, int64_t i) {
  Layer l;
  l.index = i;
  std::string p = "model.layers." + std::to_string(i) + ".";
  int64_t h = c.hiddenSize, hd = c.headDim;
  VOLT_BIND(l.inputNorm, b.param(p + "input_layernorm.weight", {h}));
  VOLT_BIND(l.postAttentionNorm, b.param(p + "post_attention_layernorm.weight", {h}));
  std::string a = p + "self_attn.";
  VOLT_BIND(l.q, b.linear(a + "q_proj", c.numAttentionHeads * hd, h, c.qkvBias));
  VOLT_BIND(l.k, b.linear(a + "k_proj", c.numKeyValueHeads * hd, h, c.qkvBias));
  VOLT_BIND(l.v, b.linear(a + "v_proj", c.numKeyValueHeads * hd, h, c.qkvBias));
  VOLT_BIND(l.o, b.linear(a + "o_proj", h, c.numAttentionHeads * hd));
  if (c.qkNorm) {
    VOLT_BIND(l.qNorm, b.param(a + "q_norm.weight", {hd}));
    VOLT_BIND(l.kNorm, b.param(a + "k_norm.weight", {hd}));
  }
  l.isMoe = c.isMoeLayer(i);
  if (!l.isMoe) {
    VOLT_BIND(l.mlp, gatedMlp(b, p + "mlp.", "gate_proj", "up_proj", "down_proj", h,
                              c.intermediateSize));
    return l;
  }
  bool mixtral = c.family == Family::Mixtral;
  std::string m = p + (mixtral ? "block_sparse_moe." : "mlp.");
  VOLT_BIND(l.router, b.linear(m + "gate", c.numExperts, h));
  for (int64_t e = 0; e < c.numExperts; ++e) {
    std::string ep = m + "experts." + std::to_string(e) + ".";
    GatedMlp expert;
    if (mixtral)
      VOLT_BIND(expert, gatedMlp(b, ep, "w1", "w3", "w2", h, c.moeIntermediateSize));
    else
      VOLT_BIND(expert, gatedMlp(b, ep, "gate_proj", "up_proj", "down_proj", h,
                                 c.moeIntermediateSize));
    l.experts.push_back(std::move(expert));
  }
  if (c.sharedExpertIntermediateSize > 0) {
    VOLT_BIND(l.sharedExpert, gatedMlp(b, m + "shared_expert.", "gate_proj", "up_proj",
                                       "down_proj", h, c.sharedExpertIntermediateSize));
    VOLT_BIND(l.sharedExpertGate, b.linear(m + "shared_expert_gate", 1, h));
  }
  return l;
}

} // namespace

uint64_t Param::numElements() const { return checkedProduct(shape).value_or(0); }

uint64_t Linear::numParams() const {
  return static_cast<uint64_t>(outFeatures) * static_cast<uint64_t>(inFeatures) +
         (bias ? bias->numElements() : 0);
}

uint64_t Linear::bytes() const {
  uint64_t n = static_cast<uint64_t>(outFeatures) * static_cast<uint64_t>(inFeatures);
  uint64_t w = isNvfp4() ? n / 2 + n / nvfp4::kBlockSize + 4 : n * dtypeSize(dtype);
  return w + (bias ? bias->bytes() : 0);
}

Result<Model> loadModel(const std::filesystem::path &dir, const LoadOptions &options) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return Error(dir.string() + ": model directory not found");
  Model model;
  model.dir = dir;
  std::filesystem::path configPath = dir / "config.json";
  if (!std::filesystem::is_regular_file(configPath, ec))
    return Error(configPath.string() +
                 ": not found (a Hugging Face model directory holds config.json)");
  auto json = readJsonFile(configPath);
  if (!json)
    return json.error();
  VOLT_BIND(model.config, parseModelConfig(*json, configPath.string()));
  VOLT_BIND(model.quant, loadQuantConfig(dir, *json));
  auto ckpt = Checkpoint::open(dir);
  if (!ckpt)
    return ckpt.error();
  model.checkpoint = std::make_unique<Checkpoint>(std::move(*ckpt));

  const ModelConfig &c = model.config;
  Binder b(model, options);
  VOLT_BIND(model.embedTokens, b.param("model.embed_tokens.weight", {c.vocabSize, c.hiddenSize}));
  for (int64_t i = 0; i < c.numHiddenLayers; ++i) {
    Layer layer;
    VOLT_BIND(layer, bindLayer(b, c, i));
    model.layers.push_back(std::move(layer));
  }
  VOLT_BIND(model.finalNorm, b.param("model.norm.weight", {c.hiddenSize}));
  if (c.tieWordEmbeddings) {
    model.lmHeadTied = true;
    model.lmHead.module = "lm_head";
    model.lmHead.outFeatures = c.vocabSize;
    model.lmHead.inFeatures = c.hiddenSize;
    model.lmHead.format = WeightFormat::Dense;
    model.lmHead.dtype = model.embedTokens.dtype;
    model.lmHead.weight = model.embedTokens.tensor;
    b.take("lm_head.weight"); // some exports write the tied copy too
  } else {
    VOLT_BIND(model.lmHead, b.linear("lm_head", c.vocabSize, c.hiddenSize));
  }
  for (std::string &name : b.unused()) {
    // Known companions of quantized layers that volt does not need.
    static const char *ignorable[] = {".input_scale", ".input_global_scale", ".k_scale",
                                      ".v_scale", ".rotary_emb.inv_freq"};
    bool known = false;
    for (const char *suffix : ignorable)
      known |= name.size() > std::strlen(suffix) &&
               name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0;
    if (!known)
      model.unusedTensors.push_back(std::move(name));
  }
  return model;
}

} // namespace volt::model
