//===- ModelConfig.cpp ----------------------------------------------------===//
#include "compiler/model/ModelConfig.h"

#include "compiler/model/Family.h"
#include "compiler/model/JsonFields.h"
#include "runtime/support/Strings.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace volt::model {
namespace {

/// Options no family implements; present and not null/false, they are
/// rejected by name instead of being silently ignored.
Status rejectUnsupportedOptions(const JsonFields &f) {
  if (const nlohmann::json *scaling = f.find("rope_scaling")) {
    std::string type = "(unknown)";
    if (scaling->is_object()) {
      for (const char *key : {"rope_type", "type"})
        if (scaling->contains(key) && (*scaling)[key].is_string())
          type = (*scaling)[key].get<std::string>();
    }
    if (type != "default")
      return f.error("rope_scaling", "RoPE scaling type '" + type +
                                         "' is not supported (supported: none, 'default')");
  }
  auto act = f.string("hidden_act", "silu");
  if (!act)
    return act.error();
  if (*act != "silu")
    return f.error("hidden_act", "activation '" + *act + "' is not supported (supported: silu)");
  if (const nlohmann::json *sw = f.find("use_sliding_window"); sw && sw->is_boolean() && *sw)
    return f.error("use_sliding_window", "sliding-window attention is not supported");
  return Status::success();
}

/// transformers 5 writes RoPE as `rope_parameters` {rope_type, rope_theta,
/// ...} instead of top-level `rope_theta` / `rope_scaling`: its theta wins,
/// and any type but default is rejected by name.
Status readRopeParameters(const JsonFields &f, ModelConfig &c) {
  const nlohmann::json *rp = f.find("rope_parameters");
  if (!rp)
    return Status::success();
  if (!rp->is_object())
    return f.error("rope_parameters", "expected an object");
  JsonFields r(*rp, f.where() + ": rope_parameters");
  std::string type;
  VOLT_READ(type, r.string("rope_type", "default"));
  if (type != "default")
    return f.error("rope_parameters", "RoPE type '" + type +
                                          "' is not supported (supported: default)");
  VOLT_READ(c.ropeTheta, r.positiveNumber("rope_theta", c.ropeTheta));
  return Status::success();
}

/// Each layer's mixer: `layer_types` in the family's words, else the
/// family's first layer type for every layer.
Status readLayerTypes(const JsonFields &f, ModelConfig &c) {
  const auto &types = c.family->layerTypes;
  if (!f.has("layer_types")) {
    c.mixers.assign(static_cast<size_t>(c.numHiddenLayers), types.front().second);
    return Status::success();
  }
  auto names = f.stringList("layer_types");
  if (!names)
    return names.error();
  if (static_cast<int64_t>(names->size()) != c.numHiddenLayers)
    return f.error("layer_types", std::to_string(names->size()) + " entries for " +
                                      std::to_string(c.numHiddenLayers) + " layers");
  std::vector<std::string> valid;
  for (const auto &t : types)
    valid.push_back(t.first);
  for (size_t i = 0; i < names->size(); ++i) {
    auto it = std::find_if(types.begin(), types.end(),
                           [&](const auto &t) { return t.first == (*names)[i]; });
    if (it == types.end())
      return f.error("layer_types", "layer " + std::to_string(i) + " is '" + (*names)[i] +
                                        "', which " + c.architecture +
                                        " does not have (it has: " + joinList(valid) + ")");
    c.mixers.push_back(it->second);
  }
  return Status::success();
}

} // namespace

bool ModelConfig::hasMixer(MixerKind k) const {
  return std::find(mixers.begin(), mixers.end(), k) != mixers.end();
}

bool ModelConfig::isMoeLayer(int64_t i) const {
  if (!isMoe())
    return false;
  if (std::find(mlpOnlyLayers.begin(), mlpOnlyLayers.end(), i) != mlpOnlyLayers.end())
    return false;
  return (i + 1) % decoderSparseStep == 0;
}

Result<ModelConfig> parseModelConfig(const nlohmann::json &json, const std::string &fileName) {
  if (!json.is_object())
    return Error(fileName + ": expected a JSON object at the top level");
  JsonFields top(json, fileName);
  ModelConfig c;

  auto archs = top.stringList("architectures");
  if (!archs)
    return archs.error();
  const std::vector<std::string> supported = supportedArchitectures();
  if (archs->empty())
    return Error(fileName + ": missing field 'architectures' (supported: " + joinList(supported) +
                 ")");
  c.architecture = archs->front();
  c.family = familyByArchitecture(c.architecture);
  if (!c.family)
    return top.error("architectures", "unsupported architecture '" + c.architecture +
                                          "' (supported: " + joinList(supported) + ")");
  // A multimodal checkpoint: the language model's fields are its text_config
  // (transformers substitutes a default model when it is missing; volt
  // refuses), its tensors under model.language_model.
  const auto &nested = c.family->nestedArchitectures;
  c.nestedTextConfig = std::find(nested.begin(), nested.end(), c.architecture) != nested.end();
  const nlohmann::json *text = &json;
  if (c.nestedTextConfig) {
    text = top.find("text_config");
    if (!text)
      return Error(fileName + ": missing field 'text_config' (" + c.architecture +
                   " keeps the language model's config there)");
    if (!text->is_object())
      return top.error("text_config", "expected an object");
    c.tensorPrefix = "model.language_model.";
  }
  JsonFields f(*text, c.nestedTextConfig ? fileName + ": text_config" : fileName);

  VOLT_READ(c.vocabSize, f.positiveInt("vocab_size"));
  VOLT_READ(c.hiddenSize, f.positiveInt("hidden_size"));
  VOLT_READ(c.numHiddenLayers, f.positiveInt("num_hidden_layers"));
  VOLT_READ(c.numAttentionHeads, f.positiveInt("num_attention_heads"));
  VOLT_READ(c.numKeyValueHeads, f.positiveInt("num_key_value_heads", c.numAttentionHeads));
  if (c.hiddenSize % c.numAttentionHeads != 0 && !f.has("head_dim"))
    return f.error("hidden_size", "hidden_size " + std::to_string(c.hiddenSize) +
                                      " is not a multiple of num_attention_heads " +
                                      std::to_string(c.numAttentionHeads) +
                                      " and no head_dim is given");
  VOLT_READ(c.headDim, f.positiveInt("head_dim", c.hiddenSize / c.numAttentionHeads));
  VOLT_READ(c.maxPositionEmbeddings, f.positiveInt("max_position_embeddings"));
  VOLT_READ(c.rmsNormEps, f.positiveNumber("rms_norm_eps", 1e-6));
  VOLT_READ(c.ropeTheta, f.positiveNumber("rope_theta", 10000.0));
  VOLT_RETURN_IF_ERROR(readRopeParameters(f, c));
  // A multimodal model ties its LM head by its own (top-level) field.
  VOLT_READ(c.tieWordEmbeddings,
            (c.nestedTextConfig ? top : f).boolean("tie_word_embeddings", false));
  // Newer transformers write "dtype", older "torch_dtype"; a nested config
  // may leave them to the top level.
  const JsonFields &dtypeFields =
      f.has("dtype") || f.has("torch_dtype") || !c.nestedTextConfig ? f : top;
  VOLT_READ(c.torchDtype, dtypeFields.string("torch_dtype", "bfloat16"));
  if (dtypeFields.has("dtype"))
    VOLT_READ(c.torchDtype, dtypeFields.string("dtype"));
  static const std::vector<std::string> dtypes = {"bfloat16", "float16", "float32"};
  if (std::find(dtypes.begin(), dtypes.end(), c.torchDtype) == dtypes.end())
    return dtypeFields.error(dtypeFields.has("dtype") ? "dtype" : "torch_dtype",
                             "unsupported dtype '" + c.torchDtype +
                                 "' (supported: " + joinList(dtypes) + ")");

  if (c.numAttentionHeads % c.numKeyValueHeads != 0)
    return f.error("num_key_value_heads", "num_attention_heads " +
                                              std::to_string(c.numAttentionHeads) +
                                              " is not a multiple of num_key_value_heads " +
                                              std::to_string(c.numKeyValueHeads));
  if (c.headDim % 2 != 0)
    return f.error("head_dim", "RoPE needs an even head_dim, found " + std::to_string(c.headDim));

  VOLT_RETURN_IF_ERROR(readLayerTypes(f, c));
  c.rotaryDim = c.headDim;
  VOLT_RETURN_IF_ERROR(c.family->parseConfig(f, c));

  if (c.isMoe()) {
    if (c.numExpertsPerTok > c.numExperts)
      return f.error("num_experts_per_tok",
                     "num_experts_per_tok " + std::to_string(c.numExpertsPerTok) +
                         " exceeds the number of experts " + std::to_string(c.numExperts));
    for (int64_t layer : c.mlpOnlyLayers)
      if (layer < 0 || layer >= c.numHiddenLayers)
        return f.error("mlp_only_layers", "layer " + std::to_string(layer) + " is outside 0.." +
                                              std::to_string(c.numHiddenLayers - 1));
    for (int64_t i = 0; i < c.numHiddenLayers; ++i)
      if (!c.isMoeLayer(i) && c.intermediateSize == 0)
        return f.error("intermediate_size", "layer " + std::to_string(i) +
                                                " is a dense MLP layer, so intermediate_size "
                                                "must be a positive integer");
  }
  VOLT_RETURN_IF_ERROR(rejectUnsupportedOptions(f));
  return c;
}

Result<nlohmann::json> readJsonFile(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error(path.string() + ": cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error &e) {
    // Turn the byte position into line:column.
    size_t line = 1, column = 1;
    for (size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string what = e.what();
    if (auto pos = what.find("syntax error"); pos != std::string::npos)
      what = what.substr(pos);
    return Error(path.string() + ":" + std::to_string(line) + ":" + std::to_string(column) +
                 ": invalid JSON: " + what);
  } catch (const nlohmann::json::exception &e) {
    return Error(path.string() + ": invalid JSON: " + e.what());
  }
}

Result<ModelConfig> loadModelConfig(const std::filesystem::path &modelDir) {
  std::filesystem::path path = modelDir / "config.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return Error(path.string() + ": not found (a Hugging Face model directory holds config.json)");
  auto json = readJsonFile(path);
  if (!json)
    return json.error();
  return parseModelConfig(*json, path.string());
}

} // namespace volt::model
