//===- ModelLoader.cpp - binds a checkpoint's tensors to the model -------===//
//
// Walks the architecture the config describes: the embedding, each layer as
// its family binds it (compiler/model/families/), the final norm and the LM
// head; every weight found by its Hugging Face name through a TensorBinder.
//
//===----------------------------------------------------------------------===//
#include "compiler/model/Family.h"
#include "compiler/model/Model.h"
#include "compiler/model/TensorBinder.h"

#include "runtime/numerics/Nvfp4.h"
#include "runtime/support/CheckedMath.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>

namespace volt::model {

uint64_t Param::numElements() const { return checkedProduct(shape).value_or(0); }

uint64_t Linear::numParams() const {
  return static_cast<uint64_t>(outFeatures) * static_cast<uint64_t>(inFeatures) +
         (bias ? bias->numElements() : 0);
}

uint64_t Linear::bytes() const {
  uint64_t n = static_cast<uint64_t>(outFeatures) * static_cast<uint64_t>(inFeatures);
  uint64_t w = isNvfp4() ? n / 2 + n / nvfp4::kBlockSize + 4 : n * dtypeSize(dtype);
  if (isFp8())
    w += weightScale ? weightScale->data().size() : 4;
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

  // A text-only architecture of a multimodal family (Qwen3_5ForCausalLM)
  // may come with the multimodal checkpoint's tensor names, as transformers
  // accepts.
  const std::string nestedPrefix = "model.language_model.";
  if (model.hasWeights() && !model.config.family->nestedArchitectures.empty() &&
      !model.checkpoint->find(model.config.tensorPrefix + "embed_tokens.weight") &&
      model.checkpoint->find(nestedPrefix + "embed_tokens.weight"))
    model.config.tensorPrefix = nestedPrefix;
  const ModelConfig &c = model.config;
  TensorBinder b(model, options);
  VOLT_BIND(model.embedTokens,
            b.param(c.tensorPrefix + "embed_tokens.weight", {c.vocabSize, c.hiddenSize}));
  for (int64_t i = 0; i < c.numHiddenLayers; ++i) {
    Layer layer;
    VOLT_BIND(layer, c.family->bindLayer(b, c, i));
    model.layers.push_back(std::move(layer));
  }
  VOLT_BIND(model.finalNorm, b.param(c.tensorPrefix + "norm.weight", {c.hiddenSize}));
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
  if (options.bindMtp) {
    // Speculative decoding with the checkpoint's own draft head.
    if (!c.family->bindMtp)
      return Error(model.dir.string() + ": " + c.architecture +
                   " has no multi-token-prediction head (mtp.*) that volt reads; speculative "
                   "method mtp needs a Qwen3-Next or Qwen3.5 / Qwen3.6 checkpoint with one");
    if (c.numMtpLayers < 1)
      return Error(model.dir.string() + ": config.json: " + c.mtpLayersKey +
                   " is 0 or absent: the checkpoint has no multi-token-prediction head "
                   "(speculative method mtp needs one)");
    if (model.hasWeights()) {
      if (!model.checkpoint->find("mtp.fc.weight"))
        return Error(model.dir.string() + ": config.json says " + c.mtpLayersKey + " = " +
                     std::to_string(c.numMtpLayers) +
                     ", but the checkpoint has no tensor mtp.fc.weight: its MTP head was "
                     "left out of the export (speculative method mtp needs it)");
      VOLT_BIND(model.mtp, c.family->bindMtp(b, c));
    }
  }
  for (const auto &[prefix, what] : c.family->setAsidePrefixes)
    model.setAside.push_back({what, prefix, 0});
  for (std::string &name : b.unused()) {
    auto aside = std::find_if(model.setAside.begin(), model.setAside.end(),
                              [&](const Model::SetAside &s) { return name.starts_with(s.prefix); });
    if (aside != model.setAside.end()) {
      ++aside->tensors;
      continue;
    }
    // Known companions of quantized layers that volt does not need.
    static const char *ignorable[] = {".input_scale", ".input_global_scale", ".k_scale", ".v_scale",
                                      ".rotary_emb.inv_freq"};
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
