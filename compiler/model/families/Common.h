//===- Common.h - the pieces family files build layers from ------*- C++ -*-===//
//
// What the transformer families share, so that a family file says only
// what is its own: the MoE config fields, the options some families reject,
// and the binders of a layer's norms, attention, gated MLP and MoE block
// under the names Hugging Face uses for them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/model/Family.h"
#include "compiler/model/TensorBinder.h"

#include <string>

namespace volt::model::families {

/// The sparse-MoE fields of Qwen2-MoE and Qwen3-MoE: the experts (read from
/// `expertsField`), experts per token, their width, norm_topk_prob, which
/// layers are sparse (decoder_sparse_step, mlp_only_layers) and the dense
/// width where some layer is dense.
Status readQwenMoeConfig(const JsonFields &f, ModelConfig &c, const char *expertsField);

/// Rejects attention_bias: true, which the family does not have.
Status rejectAttentionBias(const JsonFields &f, const ModelConfig &c);

/// The tensor names of a gated MLP's three projections.
struct MlpNames {
  const char *gate = "gate_proj";
  const char *up = "up_proj";
  const char *down = "down_proj";
};

Result<GatedMlp> bindGatedMlp(TensorBinder &b, const std::string &prefix, const MlpNames &names,
                              int64_t hidden, int64_t width);

/// `prefix` + q_proj, k_proj, v_proj, o_proj (biases on q, k and v when the
/// config says), and q_norm, k_norm when it has QK-norm.
Result<Attention> bindAttention(TensorBinder &b, const ModelConfig &c, const std::string &prefix);

/// `prefix` + gate (the router), experts.<e>.<names>, and the shared expert
/// and its gate when the config has one.
Result<Moe> bindMoe(TensorBinder &b, const ModelConfig &c, const std::string &prefix,
                    const MlpNames &expertNames);

/// Layer `i`'s feed-forward block under `layerPrefix`: `moePrefix` as a MoE
/// block where the config makes the layer sparse, else an MLP at "mlp.".
Result<std::variant<GatedMlp, Moe>> bindFeedForward(TensorBinder &b, const ModelConfig &c,
                                                    int64_t i, const std::string &layerPrefix,
                                                    const std::string &moePrefix,
                                                    const MlpNames &expertNames);

/// A family of transformer layers (bindTransformerLayer's, with its MoE
/// block at `ffnPrefix` and experts named `expertNames`), reading its own
/// config fields with `parseConfig`.
FamilyDef transformerFamily(std::string name, std::string architecture,
                            std::function<Status(const JsonFields &, ModelConfig &)> parseConfig,
                            std::string ffnPrefix = "mlp.", MlpNames expertNames = {});

/// Reads `key` as a positive integer into `out`.
Status readPositive(const JsonFields &f, const char *key, int64_t &out);

/// A decoder layer of the transformer families: input_layernorm, self_attn,
/// post_attention_layernorm, then `ffnPrefix` as a MoE block where the
/// config makes layer `i` sparse, else an MLP at "mlp.".
Result<Layer> bindTransformerLayer(TensorBinder &b, const ModelConfig &c, int64_t i,
                                   const std::string &ffnPrefix, const MlpNames &expertNames);

} // namespace volt::model::families
