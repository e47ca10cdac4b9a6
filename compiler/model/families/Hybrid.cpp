//===- Hybrid.cpp ---------------------------------------------------------===//
#include "compiler/model/families/Hybrid.h"

#include <cmath>

namespace volt::model::families {
namespace {

/// The rotated dimensions: partial_rotary_factor, top-level or in
/// rope_parameters (whose type and theta parseModelConfig has read).
Status readRope(const JsonFields &f, ModelConfig &c) {
  double factor = 0.25; // Qwen3-Next's default
  if (const nlohmann::json *rp = f.find("rope_parameters")) {
    JsonFields r(*rp, f.where() + ": rope_parameters");
    VOLT_READ(factor, r.positiveNumber("partial_rotary_factor", factor));
  }
  if (f.has("partial_rotary_factor"))
    VOLT_READ(factor, f.positiveNumber("partial_rotary_factor"));
  const double dims = static_cast<double>(c.headDim) * factor;
  if (factor > 1.0 || dims != std::floor(dims) || static_cast<int64_t>(dims) % 2 != 0)
    return f.error("partial_rotary_factor",
                   "head_dim " + std::to_string(c.headDim) + " x " + std::to_string(factor) +
                       " is not an even number of rotated dimensions");
  c.rotaryDim = static_cast<int64_t>(dims);
  return Status::success();
}

} // namespace

Status readHybridConfig(const JsonFields &f, ModelConfig &c, bool moe) {
  VOLT_RETURN_IF_ERROR(rejectAttentionBias(f, c));
  VOLT_READ(c.headDim, f.positiveInt("head_dim", 256));
  if (c.headDim % 2 != 0)
    return f.error("head_dim", "RoPE needs an even head_dim, found " + std::to_string(c.headDim));
  VOLT_RETURN_IF_ERROR(readRope(f, c));
  c.qkNorm = true;
  c.attnOutputGate = true;
  c.zeroCentredNorms = true;
  // transformers' defaults (Qwen3NextConfig) where a field is absent.
  VOLT_READ(c.linearNumKeyHeads, f.positiveInt("linear_num_key_heads", 16));
  VOLT_READ(c.linearNumValueHeads, f.positiveInt("linear_num_value_heads", 32));
  VOLT_READ(c.linearKeyHeadDim, f.positiveInt("linear_key_head_dim", 128));
  VOLT_READ(c.linearValueHeadDim, f.positiveInt("linear_value_head_dim", 128));
  VOLT_READ(c.linearConvKernelDim, f.positiveInt("linear_conv_kernel_dim", 4));
  if (c.linearNumValueHeads % c.linearNumKeyHeads != 0)
    return f.error("linear_num_value_heads",
                   "linear_num_value_heads " + std::to_string(c.linearNumValueHeads) +
                       " is not a multiple of linear_num_key_heads " +
                       std::to_string(c.linearNumKeyHeads));
  if (c.linearConvKernelDim < 2)
    return f.error("linear_conv_kernel_dim", "the conv kernel must be at least 2 wide, found " +
                                                 std::to_string(c.linearConvKernelDim));
  // The MTP head's depth: Qwen3.5's key, or Qwen3-Next's.
  c.mtpLayersKey = f.has("num_nextn_predict_layers") && !f.has("mtp_num_hidden_layers")
                       ? "num_nextn_predict_layers"
                       : "mtp_num_hidden_layers";
  VOLT_READ(c.numMtpLayers, f.nonNegativeInt(c.mtpLayersKey, 0));
  if (!f.has("layer_types")) {
    int64_t interval = 4;
    VOLT_READ(interval, f.positiveInt("full_attention_interval", 4));
    for (int64_t i = 0; i < c.numHiddenLayers; ++i)
      c.mixers[static_cast<size_t>(i)] =
          (i + 1) % interval == 0 ? MixerKind::Attention : MixerKind::GatedDeltaNet;
  }
  if (moe) {
    VOLT_RETURN_IF_ERROR(readQwenMoeConfig(f, c, "num_experts"));
    VOLT_READ(c.normTopkProb, f.boolean("norm_topk_prob", true));
    VOLT_READ(c.sharedExpertIntermediateSize,
              f.nonNegativeInt("shared_expert_intermediate_size", 0));
  } else {
    VOLT_READ(c.intermediateSize, f.positiveInt("intermediate_size"));
  }
  return Status::success();
}

namespace {

using Rows = TensorBinder::Rows;

Result<Attention> bindGatedAttention(TensorBinder &b, const ModelConfig &c,
                                     const std::string &a) {
  Attention att;
  const int64_t h = c.hiddenSize, hd = c.headDim, heads = c.numAttentionHeads;
  // q_proj: rows [q_h | gate_h] per head.
  std::vector<Linear> qGate;
  VOLT_BIND(qGate, b.linearParts(a + "q_proj", 2 * heads * hd, h,
                                 {{0, 2 * hd, heads, heads * hd}, {hd, 2 * hd, heads, heads * hd}}));
  att.q = std::move(qGate[0]);
  att.gate = std::move(qGate[1]);
  VOLT_BIND(att.k, b.linear(a + "k_proj", c.numKeyValueHeads * hd, h));
  VOLT_BIND(att.v, b.linear(a + "v_proj", c.numKeyValueHeads * hd, h));
  VOLT_BIND(att.o, b.linear(a + "o_proj", h, heads * hd));
  VOLT_BIND(att.qNorm, b.param(a + "q_norm.weight", {hd}));
  VOLT_BIND(att.kNorm, b.param(a + "k_norm.weight", {hd}));
  return att;
}

Result<GatedDeltaNet> bindGatedDeltaNet(TensorBinder &b, const ModelConfig &c,
                                        const std::string &m, LinearAttentionLayout layout) {
  GatedDeltaNet g;
  const int64_t h = c.hiddenSize, hk = c.linearNumKeyHeads, hv = c.linearNumValueHeads;
  const int64_t dk = c.linearKeyHeadDim, dv = c.linearValueHeadDim, r = hv / hk;
  const int64_t keys = hk * dk, values = hv * dv;
  if (layout == LinearAttentionLayout::Grouped) {
    const int64_t group = 2 * dk + 2 * r * dv;
    std::vector<Linear> qkvz, ba;
    VOLT_BIND(qkvz, b.linearParts(m + "in_proj_qkvz", hk * group, h,
                                  {{0, group, hk, keys},
                                   {dk, group, hk, keys},
                                   {2 * dk, group, hk, values},
                                   {2 * dk + r * dv, group, hk, values}}));
    VOLT_BIND(ba, b.linearParts(m + "in_proj_ba", 2 * hv, h,
                                {{0, 2 * r, hk, hv}, {r, 2 * r, hk, hv}}));
    g.q = std::move(qkvz[0]);
    g.k = std::move(qkvz[1]);
    g.v = std::move(qkvz[2]);
    g.z = std::move(qkvz[3]);
    g.b = std::move(ba[0]);
    g.a = std::move(ba[1]);
  } else {
    std::vector<Linear> qkv;
    VOLT_BIND(qkv, b.linearParts(m + "in_proj_qkv", 2 * keys + values, h,
                                 {{0, 0, 1, keys}, {keys, 0, 1, keys}, {2 * keys, 0, 1, values}}));
    g.q = std::move(qkv[0]);
    g.k = std::move(qkv[1]);
    g.v = std::move(qkv[2]);
    VOLT_BIND(g.z, b.linear(m + "in_proj_z", values, h));
    VOLT_BIND(g.b, b.linear(m + "in_proj_b", hv, h));
    VOLT_BIND(g.a, b.linear(m + "in_proj_a", hv, h));
  }
  std::vector<Param> conv;
  VOLT_BIND(conv,
            b.paramParts(m + "conv1d.weight", {2 * keys + values, 1, c.linearConvKernelDim},
                         {{0, 0, 1, keys}, {keys, 0, 1, keys}, {2 * keys, 0, 1, values}}));
  g.convQ = std::move(conv[0]);
  g.convK = std::move(conv[1]);
  g.convV = std::move(conv[2]);
  VOLT_BIND(g.aLog, b.param(m + "A_log", {hv}));
  VOLT_BIND(g.dtBias, b.param(m + "dt_bias", {hv}));
  VOLT_BIND(g.norm, b.param(m + "norm.weight", {dv}));
  VOLT_BIND(g.out, b.linear(m + "out_proj", h, values));
  return g;
}

} // namespace

namespace {

Result<Layer> bindLayerWith(TensorBinder &b, const ModelConfig &c, int64_t i,
                            const std::string &p, LinearAttentionLayout layout, MixerKind mixer,
                            bool moe) {
  Layer l;
  l.index = i;
  const int64_t h = c.hiddenSize;
  VOLT_BIND(l.inputNorm, b.param(p + "input_layernorm.weight", {h}));
  VOLT_BIND(l.postAttentionNorm, b.param(p + "post_attention_layernorm.weight", {h}));
  if (mixer == MixerKind::GatedDeltaNet) {
    GatedDeltaNet g;
    VOLT_BIND(g, bindGatedDeltaNet(b, c, p + "linear_attn.", layout));
    l.mixer = std::move(g);
  } else {
    Attention a;
    VOLT_BIND(a, bindGatedAttention(b, c, p + "self_attn."));
    l.mixer = std::move(a);
  }
  if (moe) {
    Moe m;
    VOLT_BIND(m, bindMoe(b, c, p + "mlp.", MlpNames{}));
    l.ffn = std::move(m);
  } else {
    GatedMlp m;
    VOLT_BIND(m, bindGatedMlp(b, p + "mlp.", MlpNames{}, c.hiddenSize, c.intermediateSize));
    l.ffn = std::move(m);
  }
  return l;
}

} // namespace

Result<Layer> bindHybridLayer(TensorBinder &b, const ModelConfig &c, int64_t i,
                              const std::string &p, LinearAttentionLayout layout) {
  return bindLayerWith(b, c, i, p, layout, c.mixers[static_cast<size_t>(i)], c.isMoeLayer(i));
}

Result<MtpHead> bindHybridMtp(TensorBinder &b, const ModelConfig &c, LinearAttentionLayout layout) {
  MtpHead m;
  const int64_t h = c.hiddenSize;
  VOLT_BIND(m.fc, b.linear("mtp.fc", h, 2 * h));
  VOLT_BIND(m.preFcNormEmbedding, b.param("mtp.pre_fc_norm_embedding.weight", {h}));
  VOLT_BIND(m.preFcNormHidden, b.param("mtp.pre_fc_norm_hidden.weight", {h}));
  // Full-attention layers, with the model's feed-forward block (MoE in the
  // MoE models); numbered after the model's own layers.
  for (int64_t j = 0; j < c.numMtpLayers; ++j) {
    Layer l;
    VOLT_BIND(l, bindLayerWith(b, c, c.numHiddenLayers + j, "mtp.layers." + std::to_string(j) + ".",
                               layout, MixerKind::Attention, c.isMoe()));
    m.layers.push_back(std::move(l));
  }
  VOLT_BIND(m.norm, b.param("mtp.norm.weight", {h}));
  return m;
}

} // namespace volt::model::families
