//===- Hybrid.h - what the Gated DeltaNet hybrids share ----------*- C++ -*-===//
//
// Qwen3-Next (families/Qwen3Next.cpp) and Qwen3.5 / Qwen3.6
// (families/Qwen3_5.cpp): layers of Gated DeltaNet linear attention or
// gated full attention (layer_types), zero-centred norms, partial RoPE, and
// a MoE block with a gated shared expert or a dense MLP. They differ in
// where the config and the tensors live and in how linear attention's
// projections are laid out. docs/design/hybrid.md.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/model/families/Common.h"

namespace volt::model::families {

/// The config fields the hybrids share, read from `f` (the text config):
/// linear attention's heads and conv kernel, partial_rotary_factor and
/// rope_theta (top level or in rope_parameters), head_dim (default 256),
/// the MoE block when `moe`, and the layer types from
/// full_attention_interval when the config has no layer_types.
Status readHybridConfig(const JsonFields &f, ModelConfig &c, bool moe);

/// How a family stores linear attention's input projections.
enum class LinearAttentionLayout {
  /// Qwen3-Next: in_proj_qkvz [q(dk) k(dk) v(r·dv) z(r·dv)] and in_proj_ba
  /// [b(r) a(r)], each grouped per key head.
  Grouped,
  /// Qwen3.5: in_proj_qkv [q | k | v], in_proj_z, in_proj_b, in_proj_a.
  Flat,
};

/// Layer `i` of a hybrid, its tensors under `prefix` ("model.layers.<i>.").
Result<Layer> bindHybridLayer(TensorBinder &b, const ModelConfig &c, int64_t i,
                              const std::string &prefix, LinearAttentionLayout layout);

/// The multi-token-prediction head: mtp.fc, its two input norms,
/// c.numMtpLayers full-attention layers (mtp.layers.<j>.) and mtp.norm.
Result<MtpHead> bindHybridMtp(TensorBinder &b, const ModelConfig &c, LinearAttentionLayout layout);

/// The layer types of the hybrids.
inline const std::vector<std::pair<std::string, MixerKind>> kHybridLayerTypes = {
    {"linear_attention", MixerKind::GatedDeltaNet}, {"full_attention", MixerKind::Attention}};

} // namespace volt::model::families
