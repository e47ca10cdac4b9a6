//===- Qwen3_5.cpp - Qwen3.5 / Qwen3.6, dense and MoE --------------------===//
//
// Qwen3.5 and Qwen3.6 (the same architectures): multimodal checkpoints
// (…ForConditionalGeneration) whose language model volt runs, its config
// under text_config and its tensors under "model.language_model."; the
// text-only …ForCausalLM reads a flat config. Linear attention's
// projections are flat (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a); the
// MoE variant renormalises its top-k always and always has a gated shared
// expert; experts may be stored per expert or stacked (gate_up_proj,
// down_proj). The vision tower (model.visual.*) and the MTP head (mtp.*)
// are set aside. docs/design/hybrid.md.
//
//===----------------------------------------------------------------------===//
#include "compiler/model/families/Families.h"
#include "compiler/model/families/Hybrid.h"

namespace volt::model::families {
namespace {

Status readQwen3_5Config(const JsonFields &f, ModelConfig &c, bool moe) {
  if (const nlohmann::json *gate = f.find("attn_output_gate"); gate && gate->is_boolean() && !*gate)
    return f.error("attn_output_gate", c.architecture +
                                           " without the attention output gate is not supported");
  VOLT_RETURN_IF_ERROR(readHybridConfig(f, c, moe));
  if (moe) {
    // Qwen3.5's router renormalises its top-k whatever norm_topk_prob says
    // (the field is not in its config), and its shared expert is always there.
    c.normTopkProb = true;
    VOLT_READ(c.sharedExpertIntermediateSize,
              f.positiveInt("shared_expert_intermediate_size", 512));
  }
  return Status::success();
}

FamilyDef qwen3_5Family(const char *name, const char *multimodal, const char *textOnly,
                        bool moe) {
  FamilyDef d;
  d.name = name;
  d.architectures = {multimodal, textOnly};
  d.nestedArchitectures = {multimodal};
  d.setAsidePrefixes = {{"model.visual.", "the vision tower"}, {"mtp.", "the MTP head"}};
  d.layerTypes = kHybridLayerTypes;
  d.parseConfig = [moe](const JsonFields &f, ModelConfig &c) {
    return readQwen3_5Config(f, c, moe);
  };
  d.bindLayer = [](TensorBinder &b, const ModelConfig &c, int64_t i) {
    return bindHybridLayer(b, c, i, c.layerPrefix(i), LinearAttentionLayout::Flat);
  };
  d.bindMtp = [](TensorBinder &b, const ModelConfig &c) {
    return bindHybridMtp(b, c, LinearAttentionLayout::Flat);
  };
  return d;
}

} // namespace

const FamilyDef &qwen3_5() {
  static const FamilyDef def = qwen3_5Family("qwen3.5", "Qwen3_5ForConditionalGeneration",
                                             "Qwen3_5ForCausalLM", /*moe=*/false);
  return def;
}

const FamilyDef &qwen3_5Moe() {
  static const FamilyDef def =
      qwen3_5Family("qwen3.5-moe", "Qwen3_5MoeForConditionalGeneration", "Qwen3_5MoeForCausalLM",
                    /*moe=*/true);
  return def;
}

} // namespace volt::model::families
