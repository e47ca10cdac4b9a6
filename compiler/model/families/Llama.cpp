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
  static const FamilyDef def = [] {
    FamilyDef d;
    d.name = "llama";
    d.architectures = {"LlamaForCausalLM"};
    d.parseConfig = [](const JsonFields &f, ModelConfig &c) -> Status {
      auto width = f.positiveInt("intermediate_size");
      if (!width)
        return width.error();
      c.intermediateSize = *width;
      VOLT_RETURN_IF_ERROR(rejectAttentionBias(f, c));
      auto mlpBias = f.boolean("mlp_bias", false);
      if (!mlpBias)
        return mlpBias.error();
      if (*mlpBias)
        return f.error("mlp_bias", "MLP biases are not supported");
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
