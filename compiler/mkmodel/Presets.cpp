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

/// A Qwen3.5 / Qwen3.6 config.json: the multimodal wrapper around `text`
/// (architectures, the vision tower's config, the special tokens' ids).
json qwen3_5Config(bool moe, json text, json vision, int64_t firstVisionToken) {
  const char *type = moe ? "qwen3_5_moe" : "qwen3_5";
  text["model_type"] = std::string(type) + "_text";
  vision["model_type"] = type;
  return {{"architectures",
           {moe ? "Qwen3_5MoeForConditionalGeneration" : "Qwen3_5ForConditionalGeneration"}},
          {"model_type", type},
          {"text_config", std::move(text)},
          {"vision_config", std::move(vision)},
          {"vision_start_token_id", firstVisionToken},
          {"vision_end_token_id", firstVisionToken + 1},
          {"image_token_id", firstVisionToken + 3},
          {"video_token_id", firstVisionToken + 4},
          {"tie_word_embeddings", false},
          {"transformers_version", "5.24.0"}};
}

/// The text fields a Qwen3.5 config shares; `moe` adds the MoE block's.
json qwen3_5Text(bool moe, int64_t hidden, int64_t layers, int64_t heads, int64_t kvHeads,
                 int64_t headDim, int64_t keyHeads, int64_t valueHeads, int64_t linearHeadDim,
                 double theta, int64_t vocab) {
  json layerTypes = json::array();
  for (int64_t i = 0; i < layers; ++i)
    layerTypes.push_back((i + 1) % 4 == 0 ? "full_attention" : "linear_attention");
  json t = {{"hidden_act", "silu"},
            {"dtype", "bfloat16"},
            {"initializer_range", 0.02},
            {"attention_dropout", 0.0},
            {"attention_bias", false},
            {"attn_output_gate", true},
            {"use_cache", true},
            {"vocab_size", vocab},
            {"hidden_size", hidden},
            {"num_hidden_layers", layers},
            {"layer_types", layerTypes},
            {"full_attention_interval", 4},
            {"num_attention_heads", heads},
            {"num_key_value_heads", kvHeads},
            {"head_dim", headDim},
            {"linear_num_key_heads", keyHeads},
            {"linear_num_value_heads", valueHeads},
            {"linear_key_head_dim", linearHeadDim},
            {"linear_value_head_dim", linearHeadDim},
            {"linear_conv_kernel_dim", 4},
            {"mamba_ssm_dtype", "float32"},
            {"mtp_num_hidden_layers", 1},
            {"mtp_use_dedicated_embeddings", false},
            {"rms_norm_eps", 1e-6},
            {"rope_parameters",
             {{"rope_type", "default"},
              {"rope_theta", theta},
              {"partial_rotary_factor", 0.25},
              {"mrope_section", {11, 11, 10}},
              {"mrope_interleaved", true}}},
            {"tie_word_embeddings", false}};
  if (moe)
    t["router_aux_loss_coef"] = 0.001;
  return t;
}

/// The vision tower's config (volt does not run it; its tensors are written
/// so that the checkpoint has the published layout).
json qwen3_5Vision(int64_t depth, int64_t hidden, int64_t width, int64_t heads,
                   int64_t outHidden, int64_t patch, int64_t positions) {
  return {{"depth", depth},           {"hidden_size", hidden},
          {"hidden_act", "gelu_pytorch_tanh"},
          {"intermediate_size", width}, {"num_heads", heads},
          {"in_channels", 3},         {"patch_size", patch},
          {"spatial_merge_size", 2},  {"temporal_patch_size", 2},
          {"out_hidden_size", outHidden}, {"num_position_embeddings", positions},
          {"initializer_range", 0.02}};
}

/// Qwen3.5's tiny model: layers 1 and 3 full attention (the published
/// interval of 4 would leave one in four layers; two of four exercise both
/// mixers with the state across them), head_dim 16 with a quarter rotated.
json qwen3_5Tiny(bool moe) {
  const int64_t vocab = 512;
  json text = qwen3_5Text(moe, 64, 4, 4, 2, 16, 4, 8, 16, 1000000.0, vocab);
  text["layer_types"] = {"linear_attention", "full_attention", "linear_attention",
                         "full_attention"};
  text["full_attention_interval"] = 2;
  text["linear_value_head_dim"] = 8;
  text["max_position_embeddings"] = 2048;
  text["rope_parameters"]["mrope_section"] = {1, 1, 0};
  text["eos_token_id"] = vocab - 3;
  text["pad_token_id"] = vocab - 3;
  text["bos_token_id"] = nullptr;
  if (moe)
    text.update({{"num_experts", 8},
                 {"num_experts_per_tok", 2},
                 {"moe_intermediate_size", 32},
                 {"shared_expert_intermediate_size", 32}});
  else
    text["intermediate_size"] = 128;
  return qwen3_5Config(moe, std::move(text), qwen3_5Vision(1, 32, 64, 2, 64, 4, 16), vocab - 12);
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
  } else if (family == "qwen3.5" || family == "qwen3.5-moe") {
    return qwen3_5Tiny(family == "qwen3.5-moe");
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
  if (preset == "qwen3.6-35b-a3b" || preset == "qwen3.5-122b-a10b") {
    // The shape fields of Qwen/Qwen3.6-35B-A3B and Qwen/Qwen3.5-122B-A10B.
    const bool big = preset == "qwen3.5-122b-a10b";
    json text = big ? qwen3_5Text(true, 3072, 48, 32, 2, 256, 16, 64, 128, 10000000.0, 248320)
                    : qwen3_5Text(true, 2048, 40, 16, 2, 256, 16, 32, 128, 10000000.0, 248320);
    const int64_t width = big ? 1024 : 512;
    text.update({{"num_experts", 256},
                 {"num_experts_per_tok", 8},
                 {"moe_intermediate_size", width},
                 {"shared_expert_intermediate_size", width},
                 {"max_position_embeddings", 262144},
                 {"eos_token_id", 248044}});
    return qwen3_5Config(true, std::move(text),
                         qwen3_5Vision(27, 1152, 4304, 16, big ? 3072 : 2048, 16, 2304), 248053);
  }
  if (preset == "qwen3.5-27b") {
    // The shape fields of Qwen/Qwen3.5-27B.
    json text = qwen3_5Text(false, 5120, 64, 24, 4, 256, 16, 48, 128, 10000000.0, 248320);
    text.update({{"intermediate_size", 17408},
                 {"max_position_embeddings", 262144},
                 {"eos_token_id", 248044}});
    return qwen3_5Config(false, std::move(text), qwen3_5Vision(27, 1152, 4304, 16, 5120, 16, 2304),
                         248053);
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
  if (preset == "qwen3.6-35b-a3b" || preset == "qwen3.5-122b-a10b")
    return "qwen3.5-moe";
  if (preset == "qwen3.5-27b")
    return "qwen3.5";
  return nullptr;
}

const std::vector<std::string> kFamilies = {"qwen3-moe", "qwen2-moe", "mixtral", "qwen3",
                                            "llama",     "qwen3-next", "qwen3.5",
                                            "qwen3.5-moe"};

} // namespace

std::vector<std::string> presetNames() {
  return {"tiny",         "qwen3-30b-a3b", "qwen2-57b-a14b",    "qwen1.5-moe-a2.7b",
          "mixtral-8x7b", "qwen3-32b",     "qwen3-next-80b-a3b", "qwen3.6-35b-a3b",
          "qwen3.5-27b",  "qwen3.5-122b-a10b"};
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

Status applyShape(json &config, const std::string &family, const Shape &shape) {
  const bool wrapped = config.contains("text_config");
  json &t = wrapped ? config["text_config"] : config;
  auto set = [&](const char *flag, const std::optional<int64_t> &value,
                 std::initializer_list<const char *> keys) -> Status {
    if (!value)
      return Status::success();
    if (*value < 1)
      return Error(std::string(flag) + " must be at least 1");
    bool found = false;
    for (const char *key : keys)
      if (t.contains(key)) {
        t[key] = *value;
        found = true;
      }
    if (!found)
      return Error(std::string(flag) + ": a " + family + " model has no " + *keys.begin());
    return Status::success();
  };
  VOLT_RETURN_IF_ERROR(set("--hidden", shape.hidden, {"hidden_size"}));
  VOLT_RETURN_IF_ERROR(set("--heads", shape.heads, {"num_attention_heads"}));
  VOLT_RETURN_IF_ERROR(set("--kv-heads", shape.kvHeads, {"num_key_value_heads"}));
  if (shape.headDim && !t.contains("head_dim"))
    t["head_dim"] = *shape.headDim; // families that derive it from hidden / heads accept it too
  VOLT_RETURN_IF_ERROR(set("--head-dim", shape.headDim, {"head_dim"}));
  VOLT_RETURN_IF_ERROR(set("--intermediate", shape.intermediate, {"intermediate_size"}));
  VOLT_RETURN_IF_ERROR(set("--experts", shape.experts, {"num_experts", "num_local_experts"}));
  VOLT_RETURN_IF_ERROR(set("--experts-per-token", shape.expertsPerToken, {"num_experts_per_tok"}));
  VOLT_RETURN_IF_ERROR(set("--moe-intermediate", shape.moeIntermediate,
                           {"moe_intermediate_size", "shared_expert_intermediate_size"}));
  VOLT_RETURN_IF_ERROR(set("--max-positions", shape.maxPositions, {"max_position_embeddings"}));
  VOLT_RETURN_IF_ERROR(
      set("--linear-key-head-dim", shape.linearKeyDim, {"linear_key_head_dim"}));
  VOLT_RETURN_IF_ERROR(
      set("--linear-value-head-dim", shape.linearValueDim, {"linear_value_head_dim"}));
  VOLT_RETURN_IF_ERROR(set("--layers", shape.layers, {"num_hidden_layers"}));
  if (shape.layers) {
    const int64_t layers = *shape.layers;
    // The hybrids' layer kinds follow the preset's interval (the tiny ones
    // alternate); MoE presets' dense-MLP layers keep those that still exist.
    if (t.contains("layer_types")) {
      const int64_t interval = t.value("full_attention_interval", int64_t{4});
      json types = json::array();
      for (int64_t i = 0; i < layers; ++i)
        types.push_back((i + 1) % interval == 0 ? "full_attention" : "linear_attention");
      t["layer_types"] = types;
    }
    if (t.contains("mlp_only_layers")) {
      json kept = json::array();
      for (const json &l : t["mlp_only_layers"])
        if (l.get<int64_t>() < layers)
          kept.push_back(l);
      t["mlp_only_layers"] = kept;
    }
  }
  if (shape.mlpOnlyLayers) {
    if (!t.contains("mlp_only_layers"))
      return Error("--mlp-only-layers: a " + family + " model has no mlp_only_layers");
    const int64_t layers = t.value("num_hidden_layers", int64_t{0});
    json list = json::array();
    for (int64_t l : *shape.mlpOnlyLayers) {
      if (l < 0 || l >= layers)
        return Error("--mlp-only-layers: layer " + std::to_string(l) + " is outside 0.." +
                     std::to_string(layers - 1));
      list.push_back(l);
    }
    t["mlp_only_layers"] = list;
  }
  if (shape.vocab) {
    const int64_t vocab = *shape.vocab;
    if (vocab < 64)
      return Error("--vocab must be at least 64 (the tokenizer's byte alphabet and specials)");
    t["vocab_size"] = vocab;
    // The last three ids are the tokenizer's special tokens (tinyTokenizer).
    for (const char *key : {"eos_token_id", "pad_token_id"})
      if (t.contains(key) && t[key].is_number_integer())
        t[key] = vocab - 3;
    if (wrapped) {
      config["vision_start_token_id"] = vocab - 12;
      config["vision_end_token_id"] = vocab - 11;
      config["image_token_id"] = vocab - 9;
      config["video_token_id"] = vocab - 8;
    }
  }
  return Status::success();
}

} // namespace volt::mkmodel
