//===- Presets.cpp - config.json of every family and preset --------------===//
//
// The "tiny" configs are sized so that every tensor-parallel size volt
// supports (1, 2, 4, 8) divides the heads and widths, NVFP4 slices stay whole
// 16-element blocks at tp = 4, and a test model runs in milliseconds. The
// published-model presets copy the shape fields of the models' config.json.
//
//===----------------------------------------------------------------------===//
#include "compiler/mkmodel/MkModel.h"

#include "runtime/support/Strings.h"

namespace volt::mkmodel {
namespace {

using nlohmann::json;

json common(const char *arch, const char *modelType) {
  return {{"architectures", {arch}},
          {"model_type", modelType},
          {"hidden_act", "silu"},
          {"torch_dtype", "bfloat16"},
          {"initializer_range", 0.02},
          {"attention_dropout", 0.0},
          {"use_cache", true},
          {"bos_token_id", nullptr},
          {"transformers_version", "4.51.0"}};
}

json tiny(const std::string &family) {
  json c;
  int64_t vocab = 512;
  if (family == "qwen3-moe") {
    c = common("Qwen3MoeForCausalLM", "qwen3_moe");
    c.update({{"num_experts", 8},
              {"num_experts_per_tok", 2},
              {"moe_intermediate_size", 64},
              {"intermediate_size", 128},
              {"norm_topk_prob", true},
              {"decoder_sparse_step", 1},
              {"mlp_only_layers", {1}},
              {"head_dim", 16},
              {"attention_bias", false},
              {"tie_word_embeddings", false}});
  } else if (family == "qwen2-moe") {
    c = common("Qwen2MoeForCausalLM", "qwen2_moe");
    c.update({{"num_experts", 8},
              {"num_experts_per_tok", 2},
              {"moe_intermediate_size", 64},
              {"intermediate_size", 128},
              {"shared_expert_intermediate_size", 128},
              {"norm_topk_prob", false},
              {"decoder_sparse_step", 1},
              {"mlp_only_layers", json::array()},
              {"use_sliding_window", false},
              {"tie_word_embeddings", false}});
  } else if (family == "mixtral") {
    c = common("MixtralForCausalLM", "mixtral");
    c.update({{"num_local_experts", 8},
              {"num_experts_per_tok", 2},
              {"intermediate_size", 64},
              {"sliding_window", nullptr},
              {"tie_word_embeddings", false}});
  } else if (family == "qwen3") {
    c = common("Qwen3ForCausalLM", "qwen3");
    c.update({{"intermediate_size", 128},
              {"head_dim", 16},
              {"attention_bias", false},
              {"tie_word_embeddings", true}});
  } else if (family == "llama") {
    c = common("LlamaForCausalLM", "llama");
    c.update({{"intermediate_size", 128},
              {"attention_bias", false},
              {"mlp_bias", false},
              {"rope_scaling", nullptr},
              {"tie_word_embeddings", false}});
  } else if (family == "qwen3-next") {
    // Layers 0 and 2 linear attention, 1 and 3 full; layer 2 a dense MLP.
    c = common("Qwen3NextForCausalLM", "qwen3_next");
    c.update({{"num_experts", 8},
              {"num_experts_per_tok", 2},
              {"moe_intermediate_size", 32},
              {"shared_expert_intermediate_size", 32},
              {"intermediate_size", 64},
              {"norm_topk_prob", true},
              {"decoder_sparse_step", 1},
              {"mlp_only_layers", {2}},
              {"head_dim", 16},
              {"partial_rotary_factor", 0.25},
              {"full_attention_interval", 2},
              {"linear_num_key_heads", 4},
              {"linear_num_value_heads", 8},
              {"linear_key_head_dim", 16},
              {"linear_value_head_dim", 8},
              {"linear_conv_kernel_dim", 4},
              {"attention_bias", false},
              {"tie_word_embeddings", false}});
  } else {
    return nullptr;
  }
  c.update({{"vocab_size", vocab},
            {"hidden_size", 64},
            {"num_hidden_layers", family == "qwen3-next" ? 4 : 3},
            {"num_attention_heads", 4},
            {"num_key_value_heads", 2},
            {"max_position_embeddings", 2048},
            {"rms_norm_eps", 1e-6},
            {"rope_theta", 1000000.0},
            {"eos_token_id", vocab - 3},
            {"pad_token_id", vocab - 3}});
  return c;
}

json published(const std::string &preset) {
  if (preset == "qwen3-30b-a3b") {
    json c = common("Qwen3MoeForCausalLM", "qwen3_moe");
    c.update({{"vocab_size", 151936},      {"hidden_size", 2048},
              {"num_hidden_layers", 48},   {"num_attention_heads", 32},
              {"num_key_value_heads", 4},  {"head_dim", 128},
              {"intermediate_size", 6144}, {"moe_intermediate_size", 768},
              {"num_experts", 128},        {"num_experts_per_tok", 8},
              {"norm_topk_prob", true},    {"decoder_sparse_step", 1},
              {"mlp_only_layers", json::array()},
              {"max_position_embeddings", 40960},
              {"rope_theta", 1000000.0},   {"rms_norm_eps", 1e-6},
              {"attention_bias", false},   {"tie_word_embeddings", false},
              {"bos_token_id", 151643},    {"eos_token_id", 151645}});
    return c;
  }
  if (preset == "qwen2-57b-a14b") {
    json c = common("Qwen2MoeForCausalLM", "qwen2_moe");
    c.update({{"vocab_size", 151936},       {"hidden_size", 3584},
              {"num_hidden_layers", 28},    {"num_attention_heads", 28},
              {"num_key_value_heads", 4},   {"intermediate_size", 18944},
              {"moe_intermediate_size", 2560}, {"shared_expert_intermediate_size", 20480},
              {"num_experts", 64},          {"num_experts_per_tok", 8},
              {"norm_topk_prob", false},    {"decoder_sparse_step", 1},
              {"mlp_only_layers", json::array()},
              {"max_position_embeddings", 32768},
              {"rope_theta", 1000000.0},    {"rms_norm_eps", 1e-6},
              {"use_sliding_window", false}, {"tie_word_embeddings", false},
              {"bos_token_id", 151643},     {"eos_token_id", 151643}});
    return c;
  }
  if (preset == "qwen1.5-moe-a2.7b") {
    json c = common("Qwen2MoeForCausalLM", "qwen2_moe");
    c.update({{"vocab_size", 151936},       {"hidden_size", 2048},
              {"num_hidden_layers", 24},    {"num_attention_heads", 16},
              {"num_key_value_heads", 16},  {"intermediate_size", 5632},
              {"moe_intermediate_size", 1408}, {"shared_expert_intermediate_size", 5632},
              {"num_experts", 60},          {"num_experts_per_tok", 4},
              {"norm_topk_prob", false},    {"decoder_sparse_step", 1},
              {"mlp_only_layers", json::array()},
              {"max_position_embeddings", 8192},
              {"rope_theta", 1000000.0},    {"rms_norm_eps", 1e-6},
              {"use_sliding_window", false}, {"tie_word_embeddings", false},
              {"bos_token_id", 151643},     {"eos_token_id", 151643}});
    return c;
  }
  if (preset == "mixtral-8x7b") {
    json c = common("MixtralForCausalLM", "mixtral");
    c.update({{"vocab_size", 32000},       {"hidden_size", 4096},
              {"num_hidden_layers", 32},   {"num_attention_heads", 32},
              {"num_key_value_heads", 8},  {"intermediate_size", 14336},
              {"num_local_experts", 8},    {"num_experts_per_tok", 2},
              {"max_position_embeddings", 32768},
              {"rope_theta", 1000000.0},   {"rms_norm_eps", 1e-5},
              {"sliding_window", nullptr}, {"tie_word_embeddings", false},
              {"bos_token_id", 1},         {"eos_token_id", 2}});
    return c;
  }
  if (preset == "qwen3-32b") {
    json c = common("Qwen3ForCausalLM", "qwen3");
    c.update({{"vocab_size", 151936},       {"hidden_size", 5120},
              {"num_hidden_layers", 64},    {"num_attention_heads", 64},
              {"num_key_value_heads", 8},   {"head_dim", 128},
              {"intermediate_size", 25600}, {"max_position_embeddings", 40960},
              {"rope_theta", 1000000.0},    {"rms_norm_eps", 1e-6},
              {"attention_bias", false},    {"tie_word_embeddings", false},
              {"bos_token_id", 151643},     {"eos_token_id", 151645}});
    return c;
  }
  if (preset == "qwen3-next-80b-a3b") {
    // transformers' Qwen3NextConfig defaults are this model's shape.
    json c = common("Qwen3NextForCausalLM", "qwen3_next");
    c.update({{"vocab_size", 151936},        {"hidden_size", 2048},
              {"num_hidden_layers", 48},     {"num_attention_heads", 16},
              {"num_key_value_heads", 2},    {"head_dim", 256},
              {"intermediate_size", 5120},   {"moe_intermediate_size", 512},
              {"shared_expert_intermediate_size", 512},
              {"num_experts", 512},          {"num_experts_per_tok", 10},
              {"norm_topk_prob", true},      {"decoder_sparse_step", 1},
              {"mlp_only_layers", json::array()},
              {"full_attention_interval", 4}, {"partial_rotary_factor", 0.25},
              {"linear_num_key_heads", 16},  {"linear_num_value_heads", 32},
              {"linear_key_head_dim", 128},  {"linear_value_head_dim", 128},
              {"linear_conv_kernel_dim", 4},
              {"max_position_embeddings", 262144},
              {"rope_theta", 10000000.0},    {"rms_norm_eps", 1e-6},
              {"attention_bias", false},     {"tie_word_embeddings", false},
              {"bos_token_id", 151643},      {"eos_token_id", 151645}});
    return c;
  }
  return nullptr;
}

/// The family a published preset belongs to.
const char *presetFamily(const std::string &preset) {
  if (preset == "qwen3-30b-a3b")
    return "qwen3-moe";
  if (preset == "qwen2-57b-a14b" || preset == "qwen1.5-moe-a2.7b")
    return "qwen2-moe";
  if (preset == "mixtral-8x7b")
    return "mixtral";
  if (preset == "qwen3-32b")
    return "qwen3";
  if (preset == "qwen3-next-80b-a3b")
    return "qwen3-next";
  return nullptr;
}

const std::vector<std::string> kFamilies = {"qwen3-moe", "qwen2-moe", "mixtral", "qwen3",
                                            "llama",     "qwen3-next"};

} // namespace

std::vector<std::string> presetNames() {
  return {"tiny",         "qwen3-30b-a3b", "qwen2-57b-a14b",    "qwen1.5-moe-a2.7b",
          "mixtral-8x7b", "qwen3-32b",     "qwen3-next-80b-a3b"};
}

Result<nlohmann::json> presetConfig(const std::string &family, const std::string &preset) {
  if (std::find(kFamilies.begin(), kFamilies.end(), family) == kFamilies.end())
    return Error("unknown family '" + family + "' (valid: " + joinList(kFamilies) + ")");
  if (preset == "tiny")
    return tiny(family);
  const char *presetFam = presetFamily(preset);
  if (!presetFam)
    return Error("unknown preset '" + preset + "' (valid: " + joinList(presetNames()) + ")");
  if (family != presetFam)
    return Error("preset '" + preset + "' is a " + presetFam + " model, not " + family);
  return published(preset);
}

} // namespace volt::mkmodel
