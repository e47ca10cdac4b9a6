//===- QuantConfig.cpp ----------------------------------------------------===//
#include "compiler/model/QuantConfig.h"

#include "compiler/model/JsonFields.h"
#include "compiler/model/ModelConfig.h"
#include "runtime/support/Strings.h"

#include <nlohmann/json.hpp>

#include <optional>

namespace volt::model {
namespace {

const std::vector<std::string> kModelOptAlgorithms = {
    "NVFP4", "W4A16_NVFP4", "FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO", "FP8_BLOCK_SCALES",
    "MIXED_PRECISION"};

Status compilePatterns(QuantConfig &q, const std::string &where) {
  for (const std::string &p : q.excludePatterns) {
    if (p.rfind("re:", 0) == 0) {
      try {
        q.regexes.emplace_back(p.substr(3), std::regex::ECMAScript);
      } catch (const std::regex_error &e) {
        return Error(where + ": ignore pattern '" + p +
                     "' is not a valid regular expression: " + e.what());
      }
    } else {
      q.regexes.emplace_back();
    }
  }
  return Status::success();
}

/// A ModelOpt algorithm as a layer format: NVFP4 (W4A4 or weight-only) or
/// FP8 (per tensor, per channel or block-scaled; run weight-only).
std::optional<LayerFormat> modelOptLayerFormat(const std::string &algo) {
  if (algo == "NVFP4" || algo == "W4A16_NVFP4")
    return LayerFormat::Nvfp4;
  if (algo == "FP8" || algo == "FP8_PER_CHANNEL_PER_TOKEN" || algo == "FP8_PB_WO" ||
      algo == "FP8_BLOCK_SCALES")
    return LayerFormat::Fp8;
  return std::nullopt;
}

Status checkNvfp4Group(JsonFields &f) {
  auto group = f.positiveInt("group_size", 16);
  if (!group)
    return group.error();
  if (*group != 16)
    return f.error("group_size", "NVFP4 uses 16-element blocks, found " + std::to_string(*group));
  return Status::success();
}

Result<QuantConfig> modelOptFrom(const nlohmann::json &quant, const std::string &where,
                                 const std::string &source) {
  JsonFields f(quant, where);
  QuantConfig q;
  q.format = QuantFormat::ModelOptNvfp4;
  q.source = source;
  auto algo = f.string("quant_algo");
  if (!algo)
    return algo.error();
  if (std::find(kModelOptAlgorithms.begin(), kModelOptAlgorithms.end(), *algo) ==
      kModelOptAlgorithms.end())
    return f.error("quant_algo",
                   "ModelOpt algorithm '" + *algo +
                       "' is not supported (supported: " + joinList(kModelOptAlgorithms) + ")");
  q.algorithm = *algo;
  q.activationsQuantized = *algo == "NVFP4" || *algo == "FP8" || *algo == "MIXED_PRECISION";
  if (*algo == "MIXED_PRECISION") {
    q.format = QuantFormat::ModelOptMixed;
    const nlohmann::json *layers = f.find("quantized_layers");
    if (!layers || !layers->is_object())
      return f.error("quantized_layers",
                     "MIXED_PRECISION needs an object mapping each quantized module to its "
                     "quant_algo");
    for (const auto &[module, entry] : layers->items()) {
      const std::string at = where + ": quantized_layers.\"" + module + "\"";
      if (!entry.is_object())
        return Error(at + ": expected an object with a quant_algo");
      JsonFields e(entry, at);
      auto layerAlgo = e.string("quant_algo");
      if (!layerAlgo)
        return layerAlgo.error();
      auto format = modelOptLayerFormat(*layerAlgo);
      if (!format)
        return e.error("quant_algo", "ModelOpt algorithm '" + *layerAlgo +
                                         "' is not supported per layer (supported: NVFP4, "
                                         "W4A16_NVFP4, FP8, FP8_PER_CHANNEL_PER_TOKEN, "
                                         "FP8_PB_WO, FP8_BLOCK_SCALES)");
      if (*format == LayerFormat::Nvfp4)
        VOLT_RETURN_IF_ERROR(checkNvfp4Group(e));
      q.layers[module] = *format;
    }
  } else if (modelOptLayerFormat(*algo) == LayerFormat::Fp8) {
    q.format = QuantFormat::ModelOptFp8;
  } else {
    VOLT_RETURN_IF_ERROR(checkNvfp4Group(f));
  }
  for (const char *key : {"exclude_modules", "ignore"}) {
    auto list = f.stringList(key);
    if (!list)
      return list.error();
    q.excludePatterns.insert(q.excludePatterns.end(), list->begin(), list->end());
  }
  VOLT_RETURN_IF_ERROR(compilePatterns(q, where));
  return q;
}

Result<QuantConfig> compressedTensorsFrom(const nlohmann::json &quant, const std::string &where) {
  JsonFields f(quant, where);
  QuantConfig q;
  q.format = QuantFormat::CompressedTensorsNvfp4;
  q.source = "config.json";
  auto format = f.string("format");
  if (!format)
    return format.error();
  if (*format != "nvfp4-pack-quantized")
    return f.error("format", "compressed-tensors format '" + *format +
                                 "' is not supported (supported: nvfp4-pack-quantized)");
  q.algorithm = *format;
  const nlohmann::json *groups = f.find("config_groups");
  if (!groups || !groups->is_object() || groups->empty())
    return f.error("config_groups", "expected an object of quantization groups");
  for (const auto &[name, group] : groups->items()) {
    std::string groupWhere = where + ": config_groups." + name;
    if (!group.is_object())
      return Error(groupWhere + ": expected an object");
    JsonFields g(group, groupWhere);
    const nlohmann::json *weights = g.find("weights");
    if (!weights || !weights->is_object())
      return g.error("weights", "expected an object describing the weight quantization");
    JsonFields w(*weights, groupWhere + ".weights");
    auto bits = w.positiveInt("num_bits");
    if (!bits)
      return bits.error();
    auto type = w.string("type", "float");
    if (!type)
      return type.error();
    auto size = w.positiveInt("group_size", 16);
    if (!size)
      return size.error();
    if (*bits != 4 || *type != "float" || *size != 16)
      return Error(groupWhere +
                   ".weights: expected NVFP4 (num_bits 4, type float, group_size 16), "
                   "found num_bits " +
                   std::to_string(*bits) + ", type " + *type + ", group_size " +
                   std::to_string(*size));
    if (const nlohmann::json *acts = g.find("input_activations"); acts && acts->is_object())
      q.activationsQuantized = true;
  }
  auto ignore = f.stringList("ignore");
  if (!ignore)
    return ignore.error();
  q.excludePatterns = *ignore;
  VOLT_RETURN_IF_ERROR(compilePatterns(q, where));
  return q;
}

/// `quant_method: fp8` (transformers' FineGrainedFP8 and Qwen's FP8
/// releases): E4M3 weights with `weight_scale_inv` per block of
/// `weight_block_size`, activations quantized dynamically (volt runs them
/// weight-only).
Result<QuantConfig> fp8From(const nlohmann::json &quant, const std::string &where) {
  JsonFields f(quant, where);
  QuantConfig q;
  q.format = QuantFormat::Fp8;
  q.source = "config.json";
  q.algorithm = "fp8";
  auto fmt = f.string("fmt", "e4m3");
  if (!fmt)
    return fmt.error();
  if (*fmt != "e4m3")
    return f.error("fmt", "FP8 format '" + *fmt + "' is not supported (supported: e4m3)");
  auto scheme = f.string("activation_scheme", "dynamic");
  if (!scheme)
    return scheme.error();
  q.activationsQuantized = true;
  if (const nlohmann::json *block = f.find("weight_block_size"); block && !block->is_null()) {
    if (!block->is_array() || block->size() != 2 || !(*block)[0].is_number_integer() ||
        !(*block)[1].is_number_integer() || (*block)[0].get<int64_t>() <= 0 ||
        (*block)[1].get<int64_t>() <= 0)
      return f.error("weight_block_size", "expected two positive integers, e.g. [128, 128]");
    q.groupSize = (*block)[0].get<int64_t>();
  } else {
    q.groupSize = 0;
  }
  for (const char *key : {"modules_to_not_convert", "ignored_layers"}) {
    auto list = f.stringList(key);
    if (!list)
      return list.error();
    // transformers matches these as parts of the module name.
    for (const std::string &m : *list)
      q.excludePatterns.push_back("*" + m + "*");
  }
  VOLT_RETURN_IF_ERROR(compilePatterns(q, where));
  return q;
}

} // namespace

LayerFormat QuantConfig::formatOf(const std::string &name) const {
  switch (format) {
  case QuantFormat::None:
    return LayerFormat::Unquantized;
  case QuantFormat::ModelOptMixed: {
    // The module itself, else its nearest listed parent.
    for (std::string prefix = name;;) {
      if (auto it = layers.find(prefix); it != layers.end())
        return isExcluded(name) ? LayerFormat::Unquantized : it->second;
      size_t dot = prefix.rfind('.');
      if (dot == std::string::npos)
        return LayerFormat::Unquantized;
      prefix.resize(dot);
    }
  }
  case QuantFormat::ModelOptFp8:
  case QuantFormat::Fp8:
    return isExcluded(name) ? LayerFormat::Unquantized : LayerFormat::Fp8;
  case QuantFormat::ModelOptNvfp4:
  case QuantFormat::CompressedTensorsNvfp4:
    return isExcluded(name) ? LayerFormat::Unquantized : LayerFormat::Nvfp4;
  }
  return LayerFormat::Unquantized;
}

const char *quantFormatName(QuantFormat format) {
  switch (format) {
  case QuantFormat::None:
    return "unquantized";
  case QuantFormat::ModelOptNvfp4:
    return "ModelOpt NVFP4";
  case QuantFormat::CompressedTensorsNvfp4:
    return "compressed-tensors NVFP4";
  case QuantFormat::ModelOptFp8:
    return "ModelOpt FP8";
  case QuantFormat::ModelOptMixed:
    return "ModelOpt mixed NVFP4 + FP8";
  case QuantFormat::Fp8:
    return "FP8 (block-scaled)";
  }
  return "?";
}

bool QuantConfig::isExcluded(const std::string &name) const {
  for (size_t i = 0; i < excludePatterns.size(); ++i) {
    const std::string &p = excludePatterns[i];
    if (format == QuantFormat::CompressedTensorsNvfp4) {
      if (p.rfind("re:", 0) == 0) {
        if (std::regex_search(name, regexes[i], std::regex_constants::match_continuous))
          return true;
      } else if (p == name) {
        return true;
      }
    } else if (wildcardMatch(p, name)) {
      return true;
    }
  }
  return false;
}

Result<QuantConfig> loadQuantConfig(const std::filesystem::path &modelDir,
                                    const nlohmann::json &configJson) {
  std::error_code ec;
  std::filesystem::path hfQuant = modelDir / "hf_quant_config.json";
  const nlohmann::json *inConfig = nullptr;
  if (configJson.is_object()) {
    auto it = configJson.find("quantization_config");
    if (it != configJson.end() && !it->is_null())
      inConfig = &*it;
  }

  if (inConfig) {
    std::string where = (modelDir / "config.json").string() + ": quantization_config";
    if (!inConfig->is_object())
      return Error(where + ": expected an object");
    JsonFields f(*inConfig, where);
    auto method = f.string("quant_method");
    if (!method)
      return method.error();
    if (*method == "modelopt")
      return modelOptFrom(*inConfig, where, "config.json");
    if (*method == "compressed-tensors")
      return compressedTensorsFrom(*inConfig, where);
    if (*method == "fp8")
      return fp8From(*inConfig, where);
    return f.error("quant_method", "quantization method '" + *method +
                                       "' is not supported (supported: modelopt NVFP4, FP8 and "
                                       "MIXED_PRECISION, compressed-tensors "
                                       "nvfp4-pack-quantized, fp8, or none)");
  }

  if (std::filesystem::is_regular_file(hfQuant, ec)) {
    auto json = readJsonFile(hfQuant);
    if (!json)
      return json.error();
    std::string where = hfQuant.string();
    if (!json->is_object() || !json->contains("quantization") ||
        !(*json)["quantization"].is_object())
      return Error(where + ": expected an object with a 'quantization' object");
    return modelOptFrom((*json)["quantization"], where + ": quantization", "hf_quant_config.json");
  }

  QuantConfig none;
  none.format = QuantFormat::None;
  return none;
}

} // namespace volt::model
