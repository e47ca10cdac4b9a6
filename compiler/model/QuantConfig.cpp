//===- QuantConfig.cpp ----------------------------------------------------===//
#include "compiler/model/QuantConfig.h"

#include "compiler/model/JsonFields.h"
#include "compiler/model/ModelConfig.h"
#include "runtime/support/Strings.h"

#include <nlohmann/json.hpp>

namespace volt::model {
namespace {

const std::vector<std::string> kModelOptAlgorithms = {"NVFP4", "W4A16_NVFP4"};

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
  q.activationsQuantized = *algo == "NVFP4";
  auto group = f.positiveInt("group_size", 16);
  if (!group)
    return group.error();
  if (*group != 16)
    return f.error("group_size", "NVFP4 uses 16-element blocks, found " + std::to_string(*group));
  q.groupSize = *group;
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

} // namespace

const char *quantFormatName(QuantFormat format) {
  switch (format) {
  case QuantFormat::None:
    return "unquantized";
  case QuantFormat::ModelOptNvfp4:
    return "ModelOpt NVFP4";
  case QuantFormat::CompressedTensorsNvfp4:
    return "compressed-tensors NVFP4";
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
    return f.error("quant_method", "quantization method '" + *method +
                                       "' is not supported (supported: modelopt NVFP4, "
                                       "compressed-tensors nvfp4-pack-quantized, or none)");
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
