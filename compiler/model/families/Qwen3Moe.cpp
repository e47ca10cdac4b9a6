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
  static const FamilyDef def = transformerFamily(
      "qwen3-moe", "Qwen3MoeForCausalLM", [](const JsonFields &f, ModelConfig &c) -> Status {
        VOLT_RETURN_IF_ERROR(readQwenMoeConfig(f, c, "num_experts"));
        c.qkNorm = true;
        return rejectAttentionBias(f, c);
      });
  return def;
}

} // namespace volt::model::families
