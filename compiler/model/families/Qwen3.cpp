//===- Qwen3.cpp - Qwen3ForCausalLM --------------------------------------===//
//
// Qwen3 dense: QK-norm, no biases, a gated MLP in every layer.
//
//===----------------------------------------------------------------------===//
#include "compiler/model/families/Common.h"
#include "compiler/model/families/Families.h"

namespace volt::model::families {

const FamilyDef &qwen3() {
  static const FamilyDef def = transformerFamily(
      "qwen3", "Qwen3ForCausalLM", [](const JsonFields &f, ModelConfig &c) -> Status {
        VOLT_RETURN_IF_ERROR(readPositive(f, "intermediate_size", c.intermediateSize));
        c.qkNorm = true;
        return rejectAttentionBias(f, c);
      });
  return def;
}

} // namespace volt::model::families
