//===- Qwen3Next.cpp - Qwen3NextForCausalLM ------------------------------===//
//
// Qwen3-Next (Qwen3-Next-80B-A3B): a flat config, tensors under
// "model.layers.", linear attention's projections grouped per key head
// (in_proj_qkvz, in_proj_ba). The MTP head (mtp.*) is set aside unless
// bound for speculative decoding (LoadOptions::bindMtp).
//
//===----------------------------------------------------------------------===//
#include "compiler/model/families/Families.h"
#include "compiler/model/families/Hybrid.h"

namespace volt::model::families {

const FamilyDef &qwen3Next() {
  static const FamilyDef def = [] {
    FamilyDef d;
    d.name = "qwen3-next";
    d.architectures = {"Qwen3NextForCausalLM"};
    d.layerTypes = kHybridLayerTypes;
    d.setAsidePrefixes = {{"mtp.", "the MTP head"}};
    d.parseConfig = [](const JsonFields &f, ModelConfig &c) {
      return readHybridConfig(f, c, /*moe=*/true);
    };
    d.bindLayer = [](TensorBinder &b, const ModelConfig &c, int64_t i) {
      return bindHybridLayer(b, c, i, c.layerPrefix(i), LinearAttentionLayout::Grouped);
    };
    d.bindMtp = [](TensorBinder &b, const ModelConfig &c) {
      return bindHybridMtp(b, c, LinearAttentionLayout::Grouped);
    };
    return d;
  }();
  return def;
}

} // namespace volt::model::families
