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
      if (*layerAlgo == "FP8_PB_WO" || *layerAlgo == "FP8_BLOCK_SCALES")
        q.fp8BlockLayers.insert(module);
    }
  } else if (modelOptLayerFormat(*algo) == LayerFormat::Fp8) {
    q.format = QuantFormat::ModelOptFp8;
    q.fp8Block = *algo == "FP8_PB_WO" || *algo == "FP8_BLOCK_SCALES";
  } else {
    VOLT_RETURN_IF_ERROR(checkNvfp4Group(f));
  }
  for (const char *key : {"exclude_modules", "ignore"}) {
    auto list = f.stringList(key);
    if (!list)
      return list.error();
    q.excludePatterns.insert(q.excludePatterns.end(), list->begin(), list->end());
  }
  if (const nlohmann::json *kv = f.find("kv_cache_quant_algo"); kv && !kv->is_null()) {
    if (!kv->is_string())
      return f.error("kv_cache_quant_algo", "expected a string or null");
    q.kvCacheQuant = kv->get<std::string>();
  }
  VOLT_RETURN_IF_ERROR(compilePatterns(q, where));
  return q;
}

/// Whether `pattern` (a compressed-tensors target or ignore entry) names
/// module `name`: a `re:` regex matched from the start, else the exact name.
bool ctMatches(const std::string &pattern, const std::regex &regex, const std::string &name) {
  if (pattern.rfind("re:", 0) == 0)
    return std::regex_search(name, regex, std::regex_constants::match_continuous);
  return pattern == name;
}

const std::vector<std::string> kCompressedTensorsFormats = {"nvfp4-pack-quantized",
                                                            "float-quantized", "mixed-precision"};

/// One compressed-tensors quantization group's weight scheme: NVFP4
/// (num_bits 4, type float, group_size 16) or FP8 E4M3 (num_bits 8, type
/// float, per tensor, per channel or per 128 x 128 block).
Result<LayerFormat> ctGroupFormat(JsonFields &g, const std::string &groupWhere,
                                  const std::string &format) {
  const nlohmann::json *weights = g.find("weights");
  if (!weights || !weights->is_object())
    return g.error("weights", "expected an object describing the weight quantization");
  const std::string at = groupWhere + ".weights";
  JsonFields w(*weights, at);
  auto bits = w.positiveInt("num_bits");
  if (!bits)
    return bits.error();
  auto type = w.string("type", "float");
  if (!type)
    return type.error();
  if (format == "nvfp4-pack-quantized") {
    auto size = w.positiveInt("group_size", 16);
    if (!size)
      return size.error();
    if (*bits != 4 || *type != "float" || *size != 16)
      return Error(at + ": expected NVFP4 (num_bits 4, type float, group_size 16), found num_bits " +
                   std::to_string(*bits) + ", type " + *type + ", group_size " +
                   std::to_string(*size));
    return LayerFormat::Nvfp4;
  }
  // float-quantized
  if (*bits != 8 || *type != "float")
    return Error(at + ": expected FP8 E4M3 (num_bits 8, type float) for format float-quantized, "
                      "found num_bits " +
                 std::to_string(*bits) + ", type " + *type);
  auto strategy = w.string("strategy", "tensor");
  if (!strategy)
    return strategy.error();
  if (*strategy == "block") {
    const nlohmann::json *block = w.find("block_structure");
    if (!block || !block->is_array() || block->size() != 2 || !(*block)[0].is_number_integer() ||
        !(*block)[1].is_number_integer() || (*block)[0].get<int64_t>() != 128 ||
        (*block)[1].get<int64_t>() != 128)
      return w.error("block_structure",
                     "block-scaled FP8 is read with 128 x 128 blocks; expected [128, 128]");
  } else if (*strategy != "tensor" && *strategy != "channel") {
    return w.error("strategy", "FP8 weight strategy '" + *strategy +
                                   "' is not supported (supported: tensor, channel, block)");
  }
  return LayerFormat::Fp8;
}

Result<QuantConfig> compressedTensorsFrom(const nlohmann::json &quant, const std::string &where) {
  JsonFields f(quant, where);
  QuantConfig q;
  q.format = QuantFormat::CompressedTensors;
  q.source = "config.json";
  auto format = f.string("format");
  if (!format)
    return format.error();
  if (std::find(kCompressedTensorsFormats.begin(), kCompressedTensorsFormats.end(), *format) ==
      kCompressedTensorsFormats.end())
    return f.error("format", "compressed-tensors format '" + *format +
                                 "' is not supported (supported: " +
                                 joinList(kCompressedTensorsFormats) + ")");
  q.algorithm = *format;
  const nlohmann::json *groups = f.find("config_groups");
  if (!groups || !groups->is_object() || groups->empty())
    return f.error("config_groups", "expected an object of quantization groups");
  for (const auto &[name, group] : groups->items()) {
    std::string groupWhere = where + ": config_groups." + name;
    if (!group.is_object())
      return Error(groupWhere + ": expected an object");
    JsonFields g(group, groupWhere);
    // Under mixed-precision each group names its own format.
    std::string groupFormat = *format;
    if (*format == "mixed-precision" || g.find("format")) {
      auto own = g.string("format");
      if (!own)
        return own.error();
      if (*own != "nvfp4-pack-quantized" && *own != "float-quantized")
        return g.error("format", "group format '" + *own +
                                     "' is not supported (supported: nvfp4-pack-quantized, "
                                     "float-quantized)");
      groupFormat = *own;
    }
    VOLT_ASSIGN_OR_RETURN(LayerFormat layerFormat, ctGroupFormat(g, groupWhere, groupFormat));
    QuantConfig::Group out;
    out.name = name;
    out.format = layerFormat;
    if (const nlohmann::json *w = g.find("weights"); layerFormat == LayerFormat::Fp8 && w &&
                                                     w->is_object() && w->contains("strategy"))
      out.fp8Block = (*w)["strategy"] == "block";
    auto targets = g.stringList("targets");
    if (!targets)
      return targets.error();
    if (targets->empty())
      return g.error("targets", "expected the modules the group quantizes, e.g. [\"Linear\"]");
    out.targets = *targets;
    for (const std::string &t : out.targets) {
      if (t.rfind("re:", 0) != 0) {
        out.regexes.emplace_back();
        continue;
      }
      try {
        out.regexes.emplace_back(t.substr(3), std::regex::ECMAScript);
      } catch (const std::regex_error &e) {
        return Error(groupWhere + ": target '" + t +
                     "' is not a valid regular expression: " + e.what());
      }
    }
    q.groups.push_back(std::move(out));
    if (const nlohmann::json *acts = g.find("input_activations"); acts && acts->is_object())
      q.activationsQuantized = true;
  }
  auto ignore = f.stringList("ignore");
  if (!ignore)
    return ignore.error();
  q.excludePatterns = *ignore;
  if (const nlohmann::json *kv = f.find("kv_cache_scheme"); kv && !kv->is_null()) {
    if (!kv->is_object())
      return f.error("kv_cache_scheme", "expected an object or null");
    const bool fp8 = kv->value("type", std::string()) == "float" && kv->value("num_bits", 0) == 8;
    q.kvCacheQuant = fp8 ? "FP8" : kv->dump();
  }
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
    q.fp8Block = true;
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

bool QuantConfig::fp8BlockScaled(const std::string &name) const {
  switch (format) {
  case QuantFormat::ModelOptMixed:
    for (std::string prefix = name;;) {
      if (layers.count(prefix))
        return fp8BlockLayers.count(prefix) > 0;
      size_t dot = prefix.rfind('.');
      if (dot == std::string::npos)
        return false;
      prefix.resize(dot);
    }
  case QuantFormat::ModelOptFp8:
  case QuantFormat::Fp8:
    return fp8Block;
  case QuantFormat::CompressedTensors:
    for (const Group &g : groups)
      for (size_t i = 0; i < g.targets.size(); ++i)
        if (g.targets[i] == "Linear" || ctMatches(g.targets[i], g.regexes[i], name))
          return g.fp8Block;
    return false;
  default:
    return false;
  }
}

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
    return isExcluded(name) ? LayerFormat::Unquantized : LayerFormat::Nvfp4;
  case QuantFormat::CompressedTensors:
    if (isExcluded(name))
      return LayerFormat::Unquantized;
    for (const Group &g : groups)
      for (size_t i = 0; i < g.targets.size(); ++i)
        if (g.targets[i] == "Linear" || ctMatches(g.targets[i], g.regexes[i], name))
          return g.format;
    return LayerFormat::Unquantized;
  }
  return LayerFormat::Unquantized;
}

bool QuantConfig::claimsNvfp4() const {
  switch (format) {
  case QuantFormat::None:
  case QuantFormat::ModelOptFp8:
  case QuantFormat::Fp8:
    return false;
  case QuantFormat::ModelOptNvfp4:
    return true;
  case QuantFormat::ModelOptMixed:
    for (const auto &[module, f] : layers)
      if (f == LayerFormat::Nvfp4)
        return true;
    return false;
  case QuantFormat::CompressedTensors:
    for (const Group &g : groups)
      if (g.format == LayerFormat::Nvfp4)
        return true;
    return false;
  }
  return false;
}

std::string QuantConfig::name() const {
  if (format != QuantFormat::CompressedTensors)
    return quantFormatName(format);
  bool nvfp4 = false, fp8 = false;
  for (const Group &g : groups) {
    nvfp4 |= g.format == LayerFormat::Nvfp4;
    fp8 |= g.format == LayerFormat::Fp8;
  }
  if (nvfp4 && fp8)
    return "compressed-tensors mixed NVFP4 + FP8";
  return fp8 ? "compressed-tensors FP8" : "compressed-tensors NVFP4";
}

const char *quantFormatName(QuantFormat format) {
  switch (format) {
  case QuantFormat::None:
    return "unquantized";
  case QuantFormat::ModelOptNvfp4:
    return "ModelOpt NVFP4";
  case QuantFormat::CompressedTensors:
    return "compressed-tensors";
  case QuantFormat::ModelOptFp8:
    return "ModelOpt FP8";
  case QuantFormat::ModelOptMixed:
    return "ModelOpt mixed NVFP4 + FP8";
  case QuantFormat::Fp8:
    return "FP8 (block-scaled)";
  }
  return "?";
}

std::string QuantConfig::kvCacheNote() const {
  return "the checkpoint asks for a " + kvCacheQuant +
         " KV cache; it is served with an FP16 one (sm_70 has no FP8 arithmetic; the KV-cache "
         "scales are not used)";
}

bool QuantConfig::isExcluded(const std::string &name) const {
  for (size_t i = 0; i < excludePatterns.size(); ++i) {
    const std::string &p = excludePatterns[i];
    if (format == QuantFormat::CompressedTensors) {
      if (ctMatches(p, regexes[i], name))
        return true;
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
                                       "nvfp4-pack-quantized, float-quantized and "
                                       "mixed-precision, fp8, or none)");
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
