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
  static const FamilyDef def = [] {
    FamilyDef d;
    d.name = "qwen2-moe";
    d.architectures = {"Qwen2MoeForCausalLM"};
    d.parseConfig = [](const JsonFields &f, ModelConfig &c) -> Status {
      VOLT_RETURN_IF_ERROR(readQwenMoeConfig(f, c, "num_experts"));
      auto shared = f.nonNegativeInt("shared_expert_intermediate_size", 0);
      if (!shared)
        return shared.error();
      c.sharedExpertIntermediateSize = *shared;
      c.qkvBias = true;
      return Status::success();
    };
    d.bindLayer = [](TensorBinder &b, const ModelConfig &c, int64_t i) {
      return bindTransformerLayer(b, c, i, "mlp.", MlpNames{});
    };
    return d;
  }();
  return def;
}

} // namespace volt::model::families
