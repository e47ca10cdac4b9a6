//===- Qwen3Moe.cpp - Qwen3MoeForCausalLM --------------------------------===//
//
// Qwen3-MoE (Qwen3-30B-A3B, Qwen3-235B-A22B): QK-norm, no biases, sparse
// MoE blocks at "mlp." with optional top-k renormalisation, dense layers
// where decoder_sparse_step / mlp_only_layers say.
//
//===----------------------------------------------------------------------===//
#include "compiler/model/families/Common.h"
#include "compiler/model/families/Families.h"

namespace volt::model::families {

const FamilyDef &qwen3Moe() {
  static const FamilyDef def = [] {
    FamilyDef d;
    d.name = "qwen3-moe";
    d.architectures = {"Qwen3MoeForCausalLM"};
    d.parseConfig = [](const JsonFields &f, ModelConfig &c) -> Status {
      VOLT_RETURN_IF_ERROR(readQwenMoeConfig(f, c, "num_experts"));
      c.qkNorm = true;
      return rejectAttentionBias(f, c);
    };
    d.bindLayer = [](TensorBinder &b, const ModelConfig &c, int64_t i) {
      return bindTransformerLayer(b, c, i, "mlp.", MlpNames{});
    };
    return d;
  }();
  return def;
}

} // namespace volt::model::families
