//===- Qwen3.cpp - Qwen3ForCausalLM --------------------------------------===//
//
// Qwen3 dense: QK-norm, no biases, a gated MLP in every layer.
//
//===----------------------------------------------------------------------===//
#include "compiler/model/families/Common.h"
#include "compiler/model/families/Families.h"

namespace volt::model::families {

const FamilyDef &qwen3() {
  static const FamilyDef def = [] {
    FamilyDef d;
    d.name = "qwen3";
    d.architectures = {"Qwen3ForCausalLM"};
    d.parseConfig = [](const JsonFields &f, ModelConfig &c) -> Status {
      auto width = f.positiveInt("intermediate_size");
      if (!width)
        return width.error();
      c.intermediateSize = *width;
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
