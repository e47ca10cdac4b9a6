//===- Qwen2Moe.cpp - Qwen2MoeForCausalLM --------------------------------===//
//
// Qwen2-MoE (Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B): biases on q, k and v, no
// QK-norm, sparse MoE blocks at "mlp." with a shared expert scaled by
// sigmoid(shared_expert_gate).
//
//===----------------------------------------------------------------------===//
#include "compiler/model/families/Common.h"
#include "compiler/model/families/Families.h"

namespace volt::model::families {

const FamilyDef &qwen2Moe() {
  static const FamilyDef def = transformerFamily(
      "qwen2-moe", "Qwen2MoeForCausalLM", [](const JsonFields &f, ModelConfig &c) -> Status {
        VOLT_RETURN_IF_ERROR(readQwenMoeConfig(f, c, "num_experts"));
        VOLT_READ(c.sharedExpertIntermediateSize,
                  f.nonNegativeInt("shared_expert_intermediate_size", 0));
        c.qkvBias = true;
        return Status::success();
      });
  return def;
}

} // namespace volt::model::families
