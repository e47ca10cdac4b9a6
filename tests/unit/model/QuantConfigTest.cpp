// The quantization claim: ModelOpt (both file forms), compressed-tensors,
// exclusion patterns, and the methods volt rejects.
#include "compiler/model/QuantConfig.h"

#include "TestFiles.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace volt::model {
namespace {

using nlohmann::json;
using testing::freshDir;
using testing::spit;

Result<QuantConfig> load(const json &config, const std::string &hfQuant = "") {
  auto dir = freshDir("quant");
  if (!hfQuant.empty())
    spit(dir / "hf_quant_config.json", hfQuant);
  return loadQuantConfig(dir, config);
}

TEST(QuantConfig, Unquantized) {
  auto q = load(json::object());
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->format, QuantFormat::None);
}

TEST(QuantConfig, ModelOptHfQuantConfig) {
  auto q = load(json::object(), R"({"producer": {"name": "modelopt"}, "quantization":
      {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16,
       "exclude_modules": ["lm_head", "model.layers.*.mlp.gate"]}})");
  ASSERT_TRUE(q.ok()) << q.message();
  EXPECT_EQ(q->format, QuantFormat::ModelOptNvfp4);
  EXPECT_EQ(q->source, "hf_quant_config.json");
  EXPECT_TRUE(q->activationsQuantized);
  EXPECT_TRUE(q->isExcluded("lm_head"));
  EXPECT_TRUE(q->isExcluded("model.layers.17.mlp.gate"));
  EXPECT_FALSE(q->isExcluded("model.layers.17.mlp.gate_proj"));
  EXPECT_FALSE(q->isExcluded("model.layers.0.self_attn.q_proj"));
}

TEST(QuantConfig, ModelOptInConfigJson) {
  json config = {{"quantization_config",
                  {{"quant_method", "modelopt"},
                   {"quant_algo", "W4A16_NVFP4"},
                   {"ignore", {"lm_head"}}}}};
  auto q = load(config);
  ASSERT_TRUE(q.ok()) << q.message();
  EXPECT_EQ(q->format, QuantFormat::ModelOptNvfp4);
  EXPECT_EQ(q->source, "config.json");
  EXPECT_FALSE(q->activationsQuantized);
  EXPECT_TRUE(q->isExcluded("lm_head"));
}

TEST(QuantConfig, ModelOptAlgorithmsVoltDoesNotRun) {
  for (const char *algo : {"NVFP4_AWQ", "FP8", "MIXED_PRECISION", "W4A8_AWQ"}) {
    auto q = load(json::object(), std::string(R"({"quantization": {"quant_algo": ")") + algo +
                                      "\"}}");
    ASSERT_FALSE(q.ok()) << algo;
    EXPECT_NE(q.message().find(std::string("'") + algo + "' is not supported"), std::string::npos)
        << q.message();
  }
}

json compressedTensors(const std::string &format = "nvfp4-pack-quantized") {
  return {{"quantization_config",
           {{"quant_method", "compressed-tensors"},
            {"format", format},
            {"config_groups",
             {{"group_0",
               {{"targets", {"Linear"}},
                {"weights", {{"num_bits", 4}, {"type", "float"}, {"group_size", 16}}},
                {"input_activations", nullptr}}}}},
            {"ignore", {"lm_head", "re:.*mlp\\.gate$"}}}}};
}

TEST(QuantConfig, CompressedTensors) {
  auto q = load(compressedTensors());
  ASSERT_TRUE(q.ok()) << q.message();
  EXPECT_EQ(q->format, QuantFormat::CompressedTensorsNvfp4);
  EXPECT_FALSE(q->activationsQuantized);
  EXPECT_TRUE(q->isExcluded("lm_head"));
  EXPECT_FALSE(q->isExcluded("lm_head_extra")) << "plain entries are exact names";
  EXPECT_TRUE(q->isExcluded("model.layers.3.mlp.gate"));
  EXPECT_FALSE(q->isExcluded("model.layers.3.mlp.gate_proj"));
}

TEST(QuantConfig, CompressedTensorsFormatsVoltDoesNotRun) {
  auto q = load(compressedTensors("pack-quantized"));
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("'pack-quantized' is not supported"), std::string::npos)
      << q.message();
  json c = compressedTensors();
  c["quantization_config"]["config_groups"]["group_0"]["weights"]["num_bits"] = 8;
  q = load(c);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("config_groups.group_0.weights"), std::string::npos) << q.message();
  c = compressedTensors();
  c["quantization_config"]["ignore"] = {"re:("};
  q = load(c);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("not a valid regular expression"), std::string::npos)
      << q.message();
}

TEST(QuantConfig, OtherMethodsAreRejectedByName) {
  for (const char *method : {"gptq", "awq", "fp8", "mxfp4", "bitsandbytes"}) {
    auto q = load({{"quantization_config", {{"quant_method", method}}}});
    ASSERT_FALSE(q.ok()) << method;
    EXPECT_NE(q.message().find(std::string("'") + method + "' is not supported"),
              std::string::npos)
        << q.message();
  }
}

TEST(QuantConfig, MalformedHfQuantConfig) {
  auto q = load(json::object(), "{\"quantization\": ");
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("hf_quant_config.json:1:"), std::string::npos) << q.message();
  q = load(json::object(), "{\"quantization\": {\"quant_algo\": \"NVFP4\", \"group_size\": 32}}");
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("16-element blocks"), std::string::npos) << q.message();
}

} // namespace
} // namespace volt::model
