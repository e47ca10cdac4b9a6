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
  static const FamilyDef def = transformerFamily(
      "mixtral", "MixtralForCausalLM",
      [](const JsonFields &f, ModelConfig &c) -> Status {
        VOLT_RETURN_IF_ERROR(readPositive(f, "num_local_experts", c.numExperts));
        VOLT_RETURN_IF_ERROR(readPositive(f, "num_experts_per_tok", c.numExpertsPerTok));
        VOLT_RETURN_IF_ERROR(readPositive(f, "intermediate_size", c.moeIntermediateSize));
        c.intermediateSize = c.moeIntermediateSize;
        c.normTopkProb = true; // softmax over the top-k logits
        if (const nlohmann::json *sw = f.find("sliding_window")) {
          if (!sw->is_number_integer() || sw->get<int64_t>() < c.maxPositionEmbeddings)
            return f.error("sliding_window", "sliding-window attention is not supported (set it "
                                             "to null to attend over the whole context)");
        }
        return Status::success();
      },
      "block_sparse_moe.", MlpNames{"w1", "w3", "w2"});
  return def;
}

} // namespace volt::model::families
