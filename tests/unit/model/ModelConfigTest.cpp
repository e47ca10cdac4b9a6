// config.json: every family, and the options that must be rejected by name.
#include "compiler/model/ModelConfig.h"
#include "compiler/mkmodel/MkModel.h"
#include "compiler/model/Family.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace volt::model {
namespace {

nlohmann::json preset(const std::string &family, const std::string &name = "tiny") {
  auto c = mkmodel::presetConfig(family, name);
  EXPECT_TRUE(c.ok()) << c.message();
  return *c;
}

std::string errorOf(const nlohmann::json &j) {
  auto c = parseModelConfig(j, "config.json");
  return c.ok() ? "" : c.message();
}

TEST(ModelConfig, PublishedQwen3MoeShape) {
  auto c = parseModelConfig(preset("qwen3-moe", "qwen3-30b-a3b"), "config.json");
  ASSERT_TRUE(c.ok()) << c.message();
  ASSERT_NE(c->family, nullptr);
  EXPECT_EQ(c->family->name, "qwen3-moe");
  EXPECT_EQ(c->architecture, "Qwen3MoeForCausalLM");
  EXPECT_EQ(c->mixers, std::vector<MixerKind>(48, MixerKind::Attention));
  EXPECT_EQ(c->numHiddenLayers, 48);
  EXPECT_EQ(c->numExperts, 128);
  EXPECT_EQ(c->numExpertsPerTok, 8);
  EXPECT_EQ(c->headDim, 128);
  EXPECT_TRUE(c->qkNorm);
  EXPECT_TRUE(c->normTopkProb);
  EXPECT_FALSE(c->qkvBias);
  EXPECT_TRUE(c->isMoeLayer(0));
  EXPECT_EQ(c->queryGroupSize(), 8);
}

TEST(ModelConfig, FamilyConventions) {
  auto q2 = parseModelConfig(preset("qwen2-moe", "qwen2-57b-a14b"), "config.json");
  ASSERT_TRUE(q2.ok()) << q2.message();
  EXPECT_TRUE(q2->qkvBias);
  EXPECT_EQ(q2->sharedExpertIntermediateSize, 20480);
  EXPECT_EQ(q2->headDim, 128) << "head_dim absent: hidden_size / heads";
  auto mx = parseModelConfig(preset("mixtral", "mixtral-8x7b"), "config.json");
  ASSERT_TRUE(mx.ok()) << mx.message();
  EXPECT_EQ(mx->numExperts, 8);
  EXPECT_EQ(mx->moeIntermediateSize, 14336);
  EXPECT_TRUE(mx->normTopkProb) << "Mixtral always renormalises";
  auto dense = parseModelConfig(preset("qwen3", "qwen3-32b"), "config.json");
  ASSERT_TRUE(dense.ok()) << dense.message();
  EXPECT_FALSE(dense->isMoe());
  EXPECT_FALSE(dense->isMoeLayer(3));
  for (const char *f : {"qwen3-moe", "qwen2-moe", "mixtral", "qwen3", "llama"})
    EXPECT_TRUE(parseModelConfig(preset(f), "config.json").ok()) << f;
}

TEST(ModelConfig, MoeLayerPlacement) {
  auto j = preset("qwen3-moe");
  j["decoder_sparse_step"] = 2;
  j["mlp_only_layers"] = {1};
  j["num_hidden_layers"] = 6;
  auto c = parseModelConfig(j, "config.json");
  ASSERT_TRUE(c.ok()) << c.message();
  // (i + 1) % 2 == 0 and not in mlp_only_layers
  std::vector<bool> want = {false, false, false, true, false, true};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(c->isMoeLayer(i), want[i]) << "layer " << i;
}

TEST(ModelConfig, UnknownArchitecture) {
  auto j = preset("llama");
  j["architectures"] = {"GPT2LMHeadModel"};
  std::string e = errorOf(j);
  EXPECT_NE(e.find("unsupported architecture 'GPT2LMHeadModel'"), std::string::npos) << e;
  EXPECT_NE(e.find("Qwen3MoeForCausalLM"), std::string::npos) << "lists the supported ones";
}

// layer_types (transformers 5 writes it for every family) gives each
// layer's mixer; a family accepts only the mixers it has.
TEST(ModelConfig, LayerTypes) {
  auto j = preset("qwen3-moe");
  const int64_t layers = j["num_hidden_layers"].get<int64_t>();
  j["layer_types"] = std::vector<std::string>(static_cast<size_t>(layers), "full_attention");
  auto c = parseModelConfig(j, "config.json");
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->mixers, std::vector<MixerKind>(static_cast<size_t>(layers), MixerKind::Attention));

  j["layer_types"][1] = "linear_attention";
  EXPECT_EQ(errorOf(j), "config.json: field 'layer_types': layer 1 is 'linear_attention', which "
                        "Qwen3MoeForCausalLM does not have (it has: full_attention)");
  j["layer_types"] = {"full_attention"};
  EXPECT_EQ(errorOf(j), "config.json: field 'layer_types': 1 entries for " +
                            std::to_string(layers) + " layers");
  j["layer_types"] = "full_attention";
  EXPECT_NE(errorOf(j).find("config.json: field 'layer_types'"), std::string::npos) << errorOf(j);
}

// Families are looked up by architecture and by volt's name; one of a
// made-up architecture can be registered, and a taken name cannot.
TEST(ModelConfig, FamilyRegistry) {
  ASSERT_NE(familyByArchitecture("MixtralForCausalLM"), nullptr);
  EXPECT_EQ(familyByArchitecture("MixtralForCausalLM")->name, "mixtral");
  EXPECT_EQ(familyByName("llama")->architectures.front(), "LlamaForCausalLM");
  EXPECT_EQ(familyByArchitecture("GPT2LMHeadModel"), nullptr);
  static FamilyDef twin = *familyByName("qwen3");
  Status taken = registerFamily(twin);
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.message(), "family 'qwen3' is already registered");
  twin.name = "qwen3-twin";
  Status arch = registerFamily(twin);
  ASSERT_FALSE(arch.ok());
  EXPECT_EQ(arch.message(), "family 'qwen3-twin': architecture 'Qwen3ForCausalLM' is already "
                            "read by 'qwen3'");
  static FamilyDef incomplete;
  incomplete.name = "nothing";
  incomplete.architectures = {"NothingForCausalLM"};
  EXPECT_FALSE(registerFamily(incomplete).ok());
}

TEST(ModelConfig, MissingAndMistypedFields) {
  auto j = preset("qwen3-moe");
  j.erase("hidden_size");
  EXPECT_NE(errorOf(j).find("missing field 'hidden_size'"), std::string::npos) << errorOf(j);
  j = preset("qwen3-moe");
  j["num_experts"] = "many";
  EXPECT_NE(errorOf(j).find("field 'num_experts': expected a positive integer, found string"),
            std::string::npos)
      << errorOf(j);
  j = preset("qwen3-moe");
  j["num_attention_heads"] = 0;
  EXPECT_NE(errorOf(j).find("num_attention_heads"), std::string::npos);
  j = preset("qwen3-moe");
  j["norm_topk_prob"] = 1;
  EXPECT_NE(errorOf(j).find("expected true or false"), std::string::npos) << errorOf(j);
  EXPECT_NE(errorOf(nlohmann::json::array()).find("JSON object"), std::string::npos);
}

TEST(ModelConfig, UnsupportedOptionsAreRejectedByName) {
  auto j = preset("qwen3-moe");
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  EXPECT_NE(errorOf(j).find("RoPE scaling type 'yarn' is not supported"), std::string::npos)
      << errorOf(j);
  j = preset("llama");
  j["hidden_act"] = "gelu";
  EXPECT_NE(errorOf(j).find("activation 'gelu'"), std::string::npos) << errorOf(j);
  j = preset("qwen2-moe");
  j["use_sliding_window"] = true;
  EXPECT_NE(errorOf(j).find("sliding-window"), std::string::npos) << errorOf(j);
  j = preset("mixtral");
  j["sliding_window"] = 4096;
  j["max_position_embeddings"] = 32768;
  EXPECT_NE(errorOf(j).find("sliding-window"), std::string::npos) << errorOf(j);
  j = preset("llama");
  j["attention_bias"] = true;
  EXPECT_NE(errorOf(j).find("attention biases"), std::string::npos) << errorOf(j);
  j = preset("llama");
  j["torch_dtype"] = "float8_e4m3fn";
  EXPECT_NE(errorOf(j).find("unsupported dtype 'float8_e4m3fn'"), std::string::npos) << errorOf(j);
}

TEST(ModelConfig, InconsistentShapes) {
  auto j = preset("qwen3-moe");
  j["num_key_value_heads"] = 3;
  EXPECT_NE(errorOf(j).find("not a multiple of num_key_value_heads 3"), std::string::npos)
      << errorOf(j);
  j = preset("qwen3-moe");
  j["num_experts_per_tok"] = 9;
  EXPECT_NE(errorOf(j).find("exceeds the number of experts"), std::string::npos) << errorOf(j);
  j = preset("qwen3-moe");
  j["mlp_only_layers"] = {7};
  EXPECT_NE(errorOf(j).find("layer 7 is outside"), std::string::npos) << errorOf(j);
  j = preset("qwen3-moe");
  j["intermediate_size"] = 0;
  EXPECT_NE(errorOf(j).find("dense MLP layer"), std::string::npos) << errorOf(j);
}

// config.json as transformers 5.24 writes it (tests/golden/transformers5_configs.py):
// num_local_experts for Qwen3-MoE and Mixtral, rope_parameters instead of
// rope_theta, dtype instead of torch_dtype.
TEST(ModelConfig, TransformersFiveConfigs) {
  struct Want {
    const char *family;
    int64_t experts;
    double theta;
    int64_t rotaryDim;
  };
  for (const Want &w : {Want{"qwen3-moe", 12, 1e6, 16}, Want{"qwen2-moe", 12, 1e6, 16},
                        Want{"mixtral", 12, 1e6, 16}, Want{"qwen3", 0, 1e6, 16},
                        Want{"llama", 0, 5e5, 16}, Want{"qwen3-next", 12, 1e6, 8},
                        Want{"qwen3.5-moe", 12, 1e6, 8}, Want{"qwen3.5", 0, 1e6, 8}}) {
    SCOPED_TRACE(w.family);
    const std::filesystem::path path = std::filesystem::path(VOLT_SOURCE_DIR) / "tests/golden/configs" /
                                       (std::string(w.family) + ".json");
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    const nlohmann::json j = nlohmann::json::parse(in);
    auto c = parseModelConfig(j, "config.json");
    ASSERT_TRUE(c.ok()) << c.message();
    EXPECT_EQ(c->family->name, w.family);
    EXPECT_EQ(c->numExperts, w.experts);
    EXPECT_EQ(c->ropeTheta, w.theta);
    EXPECT_EQ(c->rotaryDim, w.rotaryDim);
    EXPECT_EQ(c->torchDtype, "bfloat16");
    EXPECT_EQ(c->numHiddenLayers, 4);
  }
}

// Qwen3.5 / Qwen3.6: the multimodal config nests the language model under
// text_config; volt reads it there, its tensors under model.language_model.
// The text-only architecture reads the same fields flat.
TEST(ModelConfig, Qwen3_5NestsTheLanguageModel) {
  auto c = parseModelConfig(preset("qwen3.5-moe", "qwen3.6-35b-a3b"), "config.json");
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->family->name, "qwen3.5-moe");
  EXPECT_EQ(c->architecture, "Qwen3_5MoeForConditionalGeneration");
  EXPECT_TRUE(c->nestedTextConfig);
  EXPECT_EQ(c->tensorPrefix, "model.language_model.");
  EXPECT_EQ(c->layerPrefix(3), "model.language_model.layers.3.");
  EXPECT_EQ(c->numHiddenLayers, 40);
  EXPECT_EQ(std::count(c->mixers.begin(), c->mixers.end(), MixerKind::GatedDeltaNet), 30);
  EXPECT_EQ(c->mixers[3], MixerKind::Attention);
  EXPECT_EQ(c->numExperts, 256);
  EXPECT_EQ(c->sharedExpertIntermediateSize, 512);
  EXPECT_TRUE(c->normTopkProb) << "Qwen3.5's router always renormalises";
  EXPECT_EQ(c->rotaryDim, 64);
  EXPECT_EQ(c->ropeTheta, 1e7);
  EXPECT_EQ(c->linearConvDim(), 8192);
  EXPECT_TRUE(c->zeroCentredNorms);
  EXPECT_TRUE(c->attnOutputGate);

  auto dense = parseModelConfig(preset("qwen3.5", "qwen3.5-27b"), "config.json");
  ASSERT_TRUE(dense.ok()) << dense.message();
  EXPECT_FALSE(dense->isMoe());
  EXPECT_EQ(dense->intermediateSize, 17408);
  EXPECT_EQ(dense->linearNumValueHeads, 48);

  // The text-only architecture: the text config itself.
  nlohmann::json flat = preset("qwen3.5-moe")["text_config"];
  flat["architectures"] = {"Qwen3_5MoeForCausalLM"};
  auto text = parseModelConfig(flat, "config.json");
  ASSERT_TRUE(text.ok()) << text.message();
  EXPECT_FALSE(text->nestedTextConfig);
  EXPECT_EQ(text->tensorPrefix, "model.");
  EXPECT_EQ(text->numExperts, 8);

  // The multimodal model ties its LM head by its own field.
  nlohmann::json j = preset("qwen3.5-moe");
  j["text_config"]["tie_word_embeddings"] = true;
  EXPECT_FALSE(parseModelConfig(j, "config.json")->tieWordEmbeddings);
  j["tie_word_embeddings"] = true;
  EXPECT_TRUE(parseModelConfig(j, "config.json")->tieWordEmbeddings);
}

// transformers substitutes a default model when text_config is missing;
// volt refuses, naming the field, and errors inside it name where they are.
TEST(ModelConfig, Qwen3_5ConfigErrors) {
  nlohmann::json j = preset("qwen3.5-moe");
  j.erase("text_config");
  EXPECT_EQ(errorOf(j), "config.json: missing field 'text_config' "
                        "(Qwen3_5MoeForConditionalGeneration keeps the language model's config "
                        "there)");
  j["text_config"] = {1, 2};
  EXPECT_EQ(errorOf(j), "config.json: field 'text_config': expected an object");
  j = preset("qwen3.5-moe");
  j["text_config"].erase("hidden_size");
  EXPECT_EQ(errorOf(j), "config.json: text_config: missing field 'hidden_size'");
  j = preset("qwen3.5");
  j["text_config"]["layer_types"][2] = "sliding_attention";
  EXPECT_EQ(errorOf(j), "config.json: text_config: field 'layer_types': layer 2 is "
                        "'sliding_attention', which Qwen3_5ForConditionalGeneration does not "
                        "have (it has: linear_attention, full_attention)");
  j = preset("qwen3.5");
  j["text_config"]["layer_types"].erase(0);
  EXPECT_EQ(errorOf(j), "config.json: text_config: field 'layer_types': 3 entries for 4 layers");
  j = preset("qwen3.5-moe");
  j["text_config"]["linear_num_value_heads"] = 6;
  EXPECT_EQ(errorOf(j), "config.json: text_config: field 'linear_num_value_heads': "
                        "linear_num_value_heads 6 is not a multiple of linear_num_key_heads 4");
  j = preset("qwen3.5-moe");
  j["text_config"]["attn_output_gate"] = false;
  EXPECT_EQ(errorOf(j), "config.json: text_config: field 'attn_output_gate': "
                        "Qwen3_5MoeForConditionalGeneration without the attention output gate "
                        "is not supported");
  j = preset("qwen3.5-moe");
  j["text_config"]["rope_parameters"]["rope_type"] = "yarn";
  EXPECT_EQ(errorOf(j), "config.json: text_config: field 'rope_parameters': RoPE type 'yarn' is "
                        "not supported (supported: default)");
}

TEST(ModelConfig, RopeParametersOfAnotherTypeAreRejectedByName) {
  for (const char *family : {"qwen3-moe", "llama", "qwen3-next"}) {
    SCOPED_TRACE(family);
    nlohmann::json j = preset(family);
    j["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 1e6}, {"factor", 4.0}};
    EXPECT_EQ(errorOf(j), "config.json: field 'rope_parameters': RoPE type 'yarn' is not "
                          "supported (supported: default)");
    j["rope_parameters"] = 3;
    EXPECT_EQ(errorOf(j), "config.json: field 'rope_parameters': expected an object");
  }
}

} // namespace
} // namespace volt::model
