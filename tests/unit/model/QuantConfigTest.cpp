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
  EXPECT_EQ(q->kvCacheQuant, "FP8");
  EXPECT_NE(q->kvCacheNote().find("served with an FP16 one"), std::string::npos);
}

// An FP8 KV cache asked for (ModelOpt kv_cache_quant_algo, compressed-tensors
// kv_cache_scheme) is recorded, so that voltc says it serves FP16; null is
// none; a malformed value is an error naming the field.
TEST(QuantConfig, KvCacheQuantizationIsReadAndNamed) {
  auto none = load(json::object(), R"({"quantization": {"quant_algo": "NVFP4",
      "kv_cache_quant_algo": null}})");
  ASSERT_TRUE(none.ok()) << none.message();
  EXPECT_TRUE(none->kvCacheQuant.empty());
  auto bad = load(json::object(), R"({"quantization": {"quant_algo": "NVFP4",
      "kv_cache_quant_algo": 8}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("kv_cache_quant_algo"), std::string::npos) << bad.message();
  json ct = {{"quantization_config",
              {{"quant_method", "compressed-tensors"},
               {"format", "float-quantized"},
               {"config_groups",
                {{"group_0",
                  {{"targets", {"Linear"}},
                   {"weights", {{"num_bits", 8}, {"type", "float"}, {"strategy", "channel"}}}}}}},
               {"kv_cache_scheme", {{"num_bits", 8}, {"type", "float"}, {"strategy", "tensor"}}}}}};
  auto q = load(ct);
  ASSERT_TRUE(q.ok()) << q.message();
  EXPECT_EQ(q->kvCacheQuant, "FP8");
  ct["quantization_config"]["kv_cache_scheme"] = "fp8";
  auto badCt = load(ct);
  ASSERT_FALSE(badCt.ok());
  EXPECT_NE(badCt.message().find("kv_cache_scheme"), std::string::npos) << badCt.message();
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
  for (const char *algo : {"NVFP4_AWQ", "NVFP4_SVD", "W4A8_AWQ", "INT8_SQ"}) {
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
  EXPECT_EQ(q->format, QuantFormat::CompressedTensors);
  EXPECT_EQ(q->name(), "compressed-tensors NVFP4");
  EXPECT_TRUE(q->claimsNvfp4());
  EXPECT_EQ(q->formatOf("model.layers.3.mlp.experts.1.up_proj"), LayerFormat::Nvfp4);
  EXPECT_EQ(q->formatOf("lm_head"), LayerFormat::Unquantized);
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

// llm-compressor's FP8_DYNAMIC (per-channel weights, dynamic per-token
// activations) and FP8_BLOCK schemes.
json compressedTensorsFp8(const std::string &strategy, json block = nullptr) {
  json c = compressedTensors("float-quantized");
  json &w = c["quantization_config"]["config_groups"]["group_0"]["weights"];
  w = {{"num_bits", 8}, {"type", "float"}, {"strategy", strategy}, {"symmetric", true},
       {"dynamic", false}, {"block_structure", block}};
  c["quantization_config"]["config_groups"]["group_0"]["input_activations"] = {
      {"num_bits", 8}, {"type", "float"}, {"strategy", "token"}, {"dynamic", true}};
  return c;
}

TEST(QuantConfig, CompressedTensorsFp8) {
  for (const char *strategy : {"channel", "tensor"}) {
    auto q = load(compressedTensorsFp8(strategy));
    ASSERT_TRUE(q.ok()) << q.message();
    EXPECT_EQ(q->format, QuantFormat::CompressedTensors);
    EXPECT_EQ(q->name(), "compressed-tensors FP8");
    EXPECT_FALSE(q->claimsNvfp4());
    EXPECT_TRUE(q->activationsQuantized);
    EXPECT_EQ(q->formatOf("model.layers.0.self_attn.o_proj"), LayerFormat::Fp8);
    EXPECT_EQ(q->formatOf("model.layers.0.mlp.gate"), LayerFormat::Unquantized);
    EXPECT_EQ(q->formatOf("lm_head"), LayerFormat::Unquantized);
  }
  auto q = load(compressedTensorsFp8("block", {128, 128}));
  ASSERT_TRUE(q.ok()) << q.message();
  EXPECT_EQ(q->formatOf("model.layers.0.mlp.down_proj"), LayerFormat::Fp8);

  q = load(compressedTensorsFp8("block", {64, 64}));
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("config_groups.group_0.weights: field 'block_structure'"),
            std::string::npos)
      << q.message();
  q = load(compressedTensorsFp8("group"));
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("strategy 'group' is not supported"), std::string::npos)
      << q.message();
  json c = compressedTensorsFp8("channel");
  c["quantization_config"]["config_groups"]["group_0"]["weights"]["type"] = "int";
  q = load(c);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("group_0.weights: expected FP8 E4M3"), std::string::npos)
      << q.message();
}

// mixed-precision: each group names its format; the first group that
// targets a module decides.
TEST(QuantConfig, CompressedTensorsMixedPrecisionGroups) {
  json c = compressedTensors("mixed-precision");
  json &groups = c["quantization_config"]["config_groups"];
  groups["group_0"]["format"] = "nvfp4-pack-quantized";
  groups["group_0"]["targets"] = {"re:.*mlp\\.experts\\..*", "lm_head"};
  groups["group_1"] = compressedTensorsFp8("tensor")["quantization_config"]["config_groups"]
                                                     ["group_0"];
  groups["group_1"]["format"] = "float-quantized";
  groups["group_1"]["targets"] = {"re:.*self_attn\\..*_proj$"};
  c["quantization_config"]["ignore"] = {"re:.*mlp\\.gate$"};
  auto q = load(c);
  ASSERT_TRUE(q.ok()) << q.message();
  EXPECT_EQ(q->name(), "compressed-tensors mixed NVFP4 + FP8");
  EXPECT_TRUE(q->claimsNvfp4());
  EXPECT_EQ(q->formatOf("model.layers.2.mlp.experts.5.down_proj"), LayerFormat::Nvfp4);
  EXPECT_EQ(q->formatOf("lm_head"), LayerFormat::Nvfp4);
  EXPECT_EQ(q->formatOf("model.layers.2.self_attn.q_proj"), LayerFormat::Fp8);
  EXPECT_EQ(q->formatOf("model.layers.2.linear_attn.out_proj"), LayerFormat::Unquantized)
      << "no group targets it";
  EXPECT_EQ(q->formatOf("model.layers.2.mlp.gate"), LayerFormat::Unquantized);

  groups["group_1"].erase("format");
  q = load(c);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("config_groups.group_1: missing field 'format'"), std::string::npos)
      << q.message();
  groups["group_1"]["format"] = "int-quantized";
  q = load(c);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("group format 'int-quantized' is not supported"), std::string::npos)
      << q.message();
  groups["group_1"]["format"] = "float-quantized";
  groups["group_1"]["targets"] = json::array();
  q = load(c);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("group_1: field 'targets'"), std::string::npos) << q.message();
  groups["group_1"]["targets"] = {"re:(["};
  q = load(c);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("group_1: target 're:([' is not a valid regular expression"),
            std::string::npos)
      << q.message();
}

TEST(QuantConfig, OtherMethodsAreRejectedByName) {
  for (const char *method : {"gptq", "awq", "mxfp4", "bitsandbytes"}) {
    auto q = load({{"quantization_config", {{"quant_method", method}}}});
    ASSERT_FALSE(q.ok()) << method;
    EXPECT_NE(q.message().find(std::string("'") + method + "' is not supported"),
              std::string::npos)
        << q.message();
  }
}

// NVIDIA's Qwen3.6 NVFP4 export: FP8 attention, NVFP4 experts listed under
// their parent module, BF16 the rest.
const char *kMixed = R"({"quantization": {"quant_algo": "MIXED_PRECISION",
  "kv_cache_quant_algo": "FP8",
  "exclude_modules": ["model.layers.*.mlp.gate", "model.layers.0.mlp.experts.7*"],
  "quantized_layers": {
    "model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"},
    "model.layers.0.mlp.experts": {"quant_algo": "NVFP4", "group_size": 16},
    "lm_head": {"quant_algo": "NVFP4", "group_size": 16}}}})";

TEST(QuantConfig, ModelOptMixedPrecisionPerLayer) {
  auto q = load(json::object(), kMixed);
  ASSERT_TRUE(q.ok()) << q.message();
  EXPECT_EQ(q->format, QuantFormat::ModelOptMixed);
  EXPECT_EQ(q->formatOf("model.layers.0.self_attn.q_proj"), LayerFormat::Fp8);
  EXPECT_EQ(q->formatOf("model.layers.0.mlp.experts.3.gate_proj"), LayerFormat::Nvfp4)
      << "a listed parent covers its modules";
  EXPECT_EQ(q->formatOf("lm_head"), LayerFormat::Nvfp4);
  EXPECT_EQ(q->formatOf("model.layers.0.self_attn.k_proj"), LayerFormat::Unquantized)
      << "unlisted modules are unquantized";
  EXPECT_EQ(q->formatOf("model.layers.0.self_attn.q_proj_extra"), LayerFormat::Unquantized);
  EXPECT_EQ(q->formatOf("model.layers.0.mlp.experts.7.up_proj"), LayerFormat::Unquantized)
      << "the exclude list still applies";
}

TEST(QuantConfig, ModelOptFp8) {
  auto q = load(json::object(),
                R"({"quantization": {"quant_algo": "FP8", "exclude_modules": ["lm_head"]}})");
  ASSERT_TRUE(q.ok()) << q.message();
  EXPECT_EQ(q->format, QuantFormat::ModelOptFp8);
  EXPECT_TRUE(q->activationsQuantized);
  EXPECT_EQ(q->formatOf("model.layers.0.mlp.down_proj"), LayerFormat::Fp8);
  EXPECT_EQ(q->formatOf("lm_head"), LayerFormat::Unquantized);
}

// Which FP8 is scaled per 128 x 128 block (kept dense in FP16) rather than
// per tensor or per row (kept as E4M3 rows), by each claim.
TEST(QuantConfig, Fp8BlockScalingByClaim) {
  auto mixed = load(json::object(), R"({"quantization": {"quant_algo": "MIXED_PRECISION",
    "quantized_layers": {
      "model.layers.0.self_attn": {"quant_algo": "FP8"},
      "model.layers.1.self_attn": {"quant_algo": "FP8_PB_WO"}}}})");
  ASSERT_TRUE(mixed.ok()) << mixed.message();
  EXPECT_FALSE(mixed->fp8BlockScaled("model.layers.0.self_attn.q_proj"));
  EXPECT_TRUE(mixed->fp8BlockScaled("model.layers.1.self_attn.q_proj"));
  EXPECT_FALSE(mixed->fp8BlockScaled("model.layers.2.self_attn.q_proj"));
  for (const char *algo : {"FP8", "FP8_PER_CHANNEL_PER_TOKEN"}) {
    auto q = load(json::object(), std::string(R"({"quantization": {"quant_algo": ")") + algo +
                                      R"("}})");
    ASSERT_TRUE(q.ok()) << q.message();
    EXPECT_FALSE(q->fp8BlockScaled("model.layers.0.mlp.down_proj")) << algo;
  }
  auto blocks = load(json::object(), R"({"quantization": {"quant_algo": "FP8_BLOCK_SCALES"}})");
  ASSERT_TRUE(blocks.ok()) << blocks.message();
  EXPECT_TRUE(blocks->fp8BlockScaled("model.layers.0.mlp.down_proj"));
  for (const char *strategy : {"channel", "tensor"}) {
    auto q = load(compressedTensorsFp8(strategy));
    ASSERT_TRUE(q.ok()) << q.message();
    EXPECT_FALSE(q->fp8BlockScaled("model.layers.0.self_attn.o_proj")) << strategy;
  }
  auto ct = load(compressedTensorsFp8("block", {128, 128}));
  ASSERT_TRUE(ct.ok()) << ct.message();
  EXPECT_TRUE(ct->fp8BlockScaled("model.layers.0.self_attn.o_proj"));
  auto method = load({{"quantization_config",
                       {{"quant_method", "fp8"}, {"weight_block_size", {128, 128}}}}});
  ASSERT_TRUE(method.ok()) << method.message();
  EXPECT_TRUE(method->fp8BlockScaled("model.layers.0.self_attn.o_proj"));
}

TEST(QuantConfig, MixedPrecisionErrorsNameTheLayer) {
  auto q = load(json::object(), R"({"quantization": {"quant_algo": "MIXED_PRECISION"}})");
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("quantized_layers"), std::string::npos) << q.message();
  q = load(json::object(), R"({"quantization": {"quant_algo": "MIXED_PRECISION",
      "quantized_layers": {"model.layers.3.mlp.down_proj": {"quant_algo": "W4A8_AWQ"}}}})");
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("quantized_layers.\"model.layers.3.mlp.down_proj\""),
            std::string::npos)
      << q.message();
  EXPECT_NE(q.message().find("'W4A8_AWQ' is not supported"), std::string::npos) << q.message();
  q = load(json::object(), R"({"quantization": {"quant_algo": "MIXED_PRECISION",
      "quantized_layers": {"lm_head": "FP8"}}})");
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("\"lm_head\": expected an object"), std::string::npos)
      << q.message();
  q = load(json::object(), R"({"quantization": {"quant_algo": "MIXED_PRECISION",
      "quantized_layers": {"lm_head": {"quant_algo": "NVFP4", "group_size": 32}}}})");
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("16-element blocks"), std::string::npos) << q.message();
}

TEST(QuantConfig, BlockScaledFp8Method) {
  auto q = load({{"quantization_config",
                  {{"quant_method", "fp8"},
                   {"fmt", "e4m3"},
                   {"activation_scheme", "dynamic"},
                   {"weight_block_size", {128, 128}},
                   {"modules_to_not_convert", {"lm_head", "mlp.gate"}}}}});
  ASSERT_TRUE(q.ok()) << q.message();
  EXPECT_EQ(q->format, QuantFormat::Fp8);
  EXPECT_EQ(q->formatOf("model.layers.0.self_attn.o_proj"), LayerFormat::Fp8);
  EXPECT_EQ(q->formatOf("model.layers.0.mlp.gate"), LayerFormat::Unquantized);
  EXPECT_EQ(q->formatOf("lm_head"), LayerFormat::Unquantized);
  q = load({{"quantization_config", {{"quant_method", "fp8"}, {"fmt", "e5m2"}}}});
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("quantization_config: field 'fmt'"), std::string::npos) << q.message();
  q = load({{"quantization_config", {{"quant_method", "fp8"}, {"weight_block_size", {128}}}}});
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("weight_block_size"), std::string::npos) << q.message();
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
