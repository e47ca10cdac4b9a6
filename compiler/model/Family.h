//===- Family.h - model families: config fields and tensor names -*- C++ -*-===//
//
// A family maps a checkpoint's config.json fields and tensor names to the
// model description (Model.h: layers of a mixer and a feed-forward block).
// Each family is one file in compiler/model/families/ (llama.cpp's
// src/models/<arch>.cpp is the model): its own config fields, the mixers its
// layers may have, and how each layer's tensors are named; the common
// pieces (attention, gated MLP, MoE) are built by families/Common.h.
//
// The built-in families are listed in Family.cpp; registerFamily() adds
// another for the life of the process (tests register families of made-up
// architectures to exercise the compiler and runtime beyond the published
// ones).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/model/JsonFields.h"
#include "compiler/model/Model.h"
#include "runtime/support/Status.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace volt::model {

class TensorBinder;

struct FamilyDef {
  /// volt's name for it ("qwen3-moe"): volt-mkmodel's --family.
  std::string name;
  /// The config.json `architectures` names it reads; the first is the one
  /// plans record.
  std::vector<std::string> architectures;
  /// Those of `architectures` that are multimodal checkpoints whose
  /// language model volt runs: config.json nests its fields under
  /// `text_config` (which must be there) and its tensors are under
  /// "model.language_model." (Qwen3.5's …ForConditionalGeneration).
  std::vector<std::string> nestedArchitectures;
  /// Tensor-name prefixes of the whole model that volt does not run, each
  /// with what it is ("model.visual." the vision tower): reported apart
  /// from the unused tensors, never an error.
  std::vector<std::pair<std::string, std::string>> setAsidePrefixes;
  /// The `layer_types` values its layers may have, and the mixer each is.
  /// Without `layer_types` in the config, every layer is the first.
  std::vector<std::pair<std::string, MixerKind>> layerTypes = {
      {"full_attention", MixerKind::Attention}};
  /// Reads the family's own fields (the common ones are in `c` already)
  /// and checks them with the rest: MoE geometry, biases, QK-norm, the
  /// options the family does not support.
  std::function<Status(const JsonFields &f, ModelConfig &c)> parseConfig;
  /// Binds layer `index`: its norms, mixer and feed-forward block, by the
  /// family's tensor names.
  std::function<Result<Layer>(TensorBinder &b, const ModelConfig &c, int64_t index)> bindLayer;
  /// Binds the multi-token-prediction head (c.numMtpLayers >= 1); unset for
  /// families without one.
  std::function<Result<MtpHead>(TensorBinder &b, const ModelConfig &c)> bindMtp;
};

/// The built-in families, then the registered ones.
std::vector<const FamilyDef *> allFamilies();

/// The family reading `architecture`; null when none does.
const FamilyDef *familyByArchitecture(const std::string &architecture);

/// The family named `name` ("qwen3-moe"); null when none is.
const FamilyDef *familyByName(const std::string &name);

/// Adds `family` (which must outlive its use) after the built-in ones; an
/// error when its name or an architecture is taken.
Status registerFamily(const FamilyDef &family);

/// The `architectures` name of every family, for messages.
std::vector<std::string> supportedArchitectures();

} // namespace volt::model
