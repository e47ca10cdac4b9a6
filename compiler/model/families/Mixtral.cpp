//===- Mixtral.cpp - MixtralForCausalLM ----------------------------------===//
//
// Mixtral: every layer a sparse MoE block at "block_sparse_moe." whose
// experts are w1 (gate), w3 (up) and w2 (down), softmax over the top-k
// logits (that is, renormalised); sliding-window attention is refused
// unless the window covers the whole context.
//
//===----------------------------------------------------------------------===//
#include "compiler/model/families/Common.h"
#include "compiler/model/families/Families.h"

namespace volt::model::families {

const FamilyDef &mixtral() {
  static const FamilyDef def = [] {
    FamilyDef d;
    d.name = "mixtral";
    d.architectures = {"MixtralForCausalLM"};
    d.parseConfig = [](const JsonFields &f, ModelConfig &c) -> Status {
      auto experts = f.positiveInt("num_local_experts");
      auto perTok = f.positiveInt("num_experts_per_tok");
      auto width = f.positiveInt("intermediate_size");
      for (const auto *r : {&experts, &perTok, &width})
        if (!*r)
          return r->error();
      c.numExperts = *experts;
      c.numExpertsPerTok = *perTok;
      c.moeIntermediateSize = c.intermediateSize = *width;
      c.normTopkProb = true; // softmax over the top-k logits
      if (const nlohmann::json *sw = f.find("sliding_window")) {
        if (!sw->is_number_integer() || sw->get<int64_t>() < c.maxPositionEmbeddings)
          return f.error("sliding_window", "sliding-window attention is not supported (set it to "
                                           "null to attend over the whole context)");
      }
      return Status::success();
    };
    d.bindLayer = [](TensorBinder &b, const ModelConfig &c, int64_t i) {
      return bindTransformerLayer(b, c, i, "block_sparse_moe.", MlpNames{"w1", "w3", "w2"});
    };
    return d;
  }();
  return def;
}

} // namespace volt::model::families
