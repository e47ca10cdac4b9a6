//===- Common.cpp ---------------------------------------------------------===//
#include "compiler/model/families/Common.h"

namespace volt::model::families {

Status readQwenMoeConfig(const JsonFields &f, ModelConfig &c, const char *expertsField) {
  // transformers 5 writes Qwen3-MoE's expert count as num_local_experts.
  const bool local = !f.has(expertsField) && f.has("num_local_experts");
  VOLT_READ(c.numExperts, f.positiveInt(local ? "num_local_experts" : expertsField));
  VOLT_READ(c.numExpertsPerTok, f.positiveInt("num_experts_per_tok"));
  VOLT_READ(c.moeIntermediateSize, f.positiveInt("moe_intermediate_size"));
  VOLT_READ(c.normTopkProb, f.boolean("norm_topk_prob", false));
  VOLT_READ(c.decoderSparseStep, f.positiveInt("decoder_sparse_step", 1));
  VOLT_READ(c.mlpOnlyLayers, f.intList("mlp_only_layers"));
  // The dense MLP width matters only when some layer is dense.
  VOLT_READ(c.intermediateSize, f.nonNegativeInt("intermediate_size", 0));
  return Status::success();
}

Status rejectAttentionBias(const JsonFields &f, const ModelConfig &c) {
  auto bias = f.boolean("attention_bias", false);
  if (!bias)
    return bias.error();
  if (*bias)
    return f.error("attention_bias", "attention biases are not supported for " + c.architecture);
  return Status::success();
}

Result<GatedMlp> bindGatedMlp(TensorBinder &b, const std::string &prefix, const MlpNames &names,
                              int64_t hidden, int64_t width) {
  GatedMlp m;
  VOLT_BIND(m.gate, b.linear(prefix + names.gate, width, hidden));
  VOLT_BIND(m.up, b.linear(prefix + names.up, width, hidden));
  VOLT_BIND(m.down, b.linear(prefix + names.down, hidden, width));
  return m;
}

Result<Attention> bindAttention(TensorBinder &b, const ModelConfig &c, const std::string &a) {
  Attention att;
  const int64_t h = c.hiddenSize, hd = c.headDim;
  VOLT_BIND(att.q, b.linear(a + "q_proj", c.numAttentionHeads * hd, h, c.qkvBias));
  VOLT_BIND(att.k, b.linear(a + "k_proj", c.numKeyValueHeads * hd, h, c.qkvBias));
  VOLT_BIND(att.v, b.linear(a + "v_proj", c.numKeyValueHeads * hd, h, c.qkvBias));
  VOLT_BIND(att.o, b.linear(a + "o_proj", h, c.numAttentionHeads * hd));
  if (c.qkNorm) {
    VOLT_BIND(att.qNorm, b.param(a + "q_norm.weight", {hd}));
    VOLT_BIND(att.kNorm, b.param(a + "k_norm.weight", {hd}));
  }
  return att;
}

Result<Moe> bindMoe(TensorBinder &b, const ModelConfig &c, const std::string &m,
                    const MlpNames &expertNames) {
  Moe moe;
  const int64_t h = c.hiddenSize;
  VOLT_BIND(moe.router, b.linear(m + "gate", c.numExperts, h));
  const int64_t width = c.moeIntermediateSize;
  if (b.has(m + "experts.gate_up_proj") || b.has(m + "experts.down_proj")) {
    // transformers 5's fused layout: gate_up_proj [E, 2I, H] (gate rows
    // first), down_proj [E, H, I].
    for (int64_t e = 0; e < c.numExperts; ++e) {
      std::vector<Linear> gateUp, down;
      VOLT_BIND(gateUp, b.expertParts(m + "experts.gate_up_proj", c.numExperts, e, 2 * width, h,
                                      {{0, 0, 1, width}, {width, 0, 1, width}}));
      VOLT_BIND(down, b.expertParts(m + "experts.down_proj", c.numExperts, e, h, width,
                                    {{0, 0, 1, h}}));
      moe.experts.push_back({std::move(gateUp[0]), std::move(gateUp[1]), std::move(down[0])});
    }
  }
  for (int64_t e = static_cast<int64_t>(moe.experts.size()); e < c.numExperts; ++e) {
    GatedMlp expert;
    VOLT_BIND(expert,
              bindGatedMlp(b, m + "experts." + std::to_string(e) + ".", expertNames, h, width));
    moe.experts.push_back(std::move(expert));
  }
  if (c.sharedExpertIntermediateSize > 0) {
    VOLT_BIND(moe.sharedExpert,
              bindGatedMlp(b, m + "shared_expert.", MlpNames{}, h, c.sharedExpertIntermediateSize));
    VOLT_BIND(moe.sharedExpertGate, b.linear(m + "shared_expert_gate", 1, h));
  }
  return moe;
}

Result<Layer> bindTransformerLayer(TensorBinder &b, const ModelConfig &c, int64_t i,
                                   const std::string &ffnPrefix, const MlpNames &expertNames) {
  Layer l;
  l.index = i;
  const std::string p = c.layerPrefix(i);
  const int64_t h = c.hiddenSize;
  VOLT_BIND(l.inputNorm, b.param(p + "input_layernorm.weight", {h}));
  VOLT_BIND(l.postAttentionNorm, b.param(p + "post_attention_layernorm.weight", {h}));
  Attention attention;
  VOLT_BIND(attention, bindAttention(b, c, p + "self_attn."));
  l.mixer = std::move(attention);
  VOLT_BIND(l.ffn, bindFeedForward(b, c, i, p, ffnPrefix, expertNames));
  return l;
}

Result<std::variant<GatedMlp, Moe>> bindFeedForward(TensorBinder &b, const ModelConfig &c,
                                                    int64_t i, const std::string &layerPrefix,
                                                    const std::string &moePrefix,
                                                    const MlpNames &expertNames) {
  if (c.isMoeLayer(i)) {
    Moe moe;
    VOLT_BIND(moe, bindMoe(b, c, layerPrefix + moePrefix, expertNames));
    return std::variant<GatedMlp, Moe>(std::move(moe));
  }
  GatedMlp mlp;
  VOLT_BIND(mlp,
            bindGatedMlp(b, layerPrefix + "mlp.", MlpNames{}, c.hiddenSize, c.intermediateSize));
  return std::variant<GatedMlp, Moe>(std::move(mlp));
}

FamilyDef transformerFamily(std::string name, std::string architecture,
                            std::function<Status(const JsonFields &, ModelConfig &)> parseConfig,
                            std::string ffnPrefix, MlpNames expertNames) {
  FamilyDef d;
  d.name = std::move(name);
  d.architectures = {std::move(architecture)};
  d.parseConfig = std::move(parseConfig);
  d.bindLayer = [ffnPrefix, expertNames](TensorBinder &b, const ModelConfig &c, int64_t i) {
    return bindTransformerLayer(b, c, i, ffnPrefix, expertNames);
  };
  return d;
}

Status readPositive(const JsonFields &f, const char *key, int64_t &out) {
  VOLT_READ(out, f.positiveInt(key));
  return Status::success();
}

} // namespace volt::model::families
