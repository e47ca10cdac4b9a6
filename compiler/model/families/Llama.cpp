//===- Llama.cpp - LlamaForCausalLM --------------------------------------===//
//
// Llama dense: no biases (attention_bias and mlp_bias are refused), a gated
// MLP in every layer.
//
//===----------------------------------------------------------------------===//
#include "compiler/model/families/Common.h"
#include "compiler/model/families/Families.h"

namespace volt::model::families {

const FamilyDef &llama() {
  static const FamilyDef def = transformerFamily(
      "llama", "LlamaForCausalLM", [](const JsonFields &f, ModelConfig &c) -> Status {
        VOLT_RETURN_IF_ERROR(readPositive(f, "intermediate_size", c.intermediateSize));
        VOLT_RETURN_IF_ERROR(rejectAttentionBias(f, c));
        bool mlpBias = false;
        VOLT_READ(mlpBias, f.boolean("mlp_bias", false));
        if (mlpBias)
          return f.error("mlp_bias", "MLP biases are not supported");
        return Status::success();
      });
  return def;
}

} // namespace volt::model::families
