//===- ModelConfig.h - a model's config.json ---------------------*- C++ -*-===//
//
// The architecture description volt compiles from: the fields of a Hugging
// Face config.json, validated. The fields every family shares are read here;
// each family's own (which layers are MoE, its shared expert, QK-norm, the
// options it rejects) are read by its file in compiler/model/families/.
// Options volt does not implement are rejected by name rather than ignored.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace volt::model {

struct FamilyDef;

/// How a layer mixes information across positions (config.json's
/// `layer_types`: "full_attention" is Attention).
enum class MixerKind {
  Attention,
  /// The per-channel moving average with state (model::Ema).
  Ema,
  /// Gated DeltaNet linear attention (model::GatedDeltaNet; `layer_types`
  /// "linear_attention" of Qwen3-Next and Qwen3.5).
  GatedDeltaNet,
};

struct ModelConfig {
  /// The family that read the config (compiler/model/Family.h), and the
  /// `architectures` name it was read under.
  const FamilyDef *family = nullptr;
  std::string architecture;
  /// Where the language model's tensors are: "model." ("model.layers.0.",
  /// "model.embed_tokens"), or "model.language_model." in a multimodal
  /// checkpoint (FamilyDef::nestedArchitectures).
  std::string tensorPrefix = "model.";
  /// The config's language-model fields were under `text_config`.
  bool nestedTextConfig = false;
  int64_t vocabSize = 0;
  int64_t hiddenSize = 0;
  int64_t numHiddenLayers = 0;
  int64_t numAttentionHeads = 0;
  int64_t numKeyValueHeads = 0;
  int64_t headDim = 0;
  /// Dense MLP width (Mixtral: each expert's width).
  int64_t intermediateSize = 0;
  int64_t maxPositionEmbeddings = 0;
  double rmsNormEps = 1e-6;
  double ropeTheta = 10000.0;
  bool tieWordEmbeddings = false;
  /// Bias on q/k/v projections (Qwen2-MoE always; others never).
  bool qkvBias = false;
  /// RMSNorm over head_dim on q and k before RoPE (Qwen3 families).
  bool qkNorm = false;
  /// The checkpoint's unquantized dtype ("bfloat16", "float16", "float32").
  std::string torchDtype = "bfloat16";

  // Mixture of experts (numExperts == 0 for dense models).
  int64_t numExperts = 0;
  int64_t numExpertsPerTok = 0;
  int64_t moeIntermediateSize = 0;
  /// Renormalise the top-k routing weights to sum to 1.
  bool normTopkProb = false;
  int64_t decoderSparseStep = 1;
  std::vector<int64_t> mlpOnlyLayers;
  /// Qwen2-MoE's shared expert width (0 when absent).
  int64_t sharedExpertIntermediateSize = 0;

  /// Each layer's mixer: from `layer_types` where the config has it, else
  /// the family's rule (every layer attention for the families without).
  std::vector<MixerKind> mixers;

  // Attention of the hybrid families (Qwen3-Next, Qwen3.5).
  /// The leading dims of each head that RoPE rotates (head_dim ·
  /// partial_rotary_factor); headDim when the config has no factor.
  int64_t rotaryDim = 0;
  /// q_proj holds [q_h | gate_h] per head and the attention output is
  /// multiplied by sigmoid(gate) before o_proj.
  bool attnOutputGate = false;
  /// Every RMSNorm but the linear-attention output's computes x̂ · (1 + w)
  /// (weights stored zero-centred).
  bool zeroCentredNorms = false;

  // Gated DeltaNet layers (MixerKind::GatedDeltaNet).
  int64_t linearNumKeyHeads = 0, linearNumValueHeads = 0;
  int64_t linearKeyHeadDim = 0, linearValueHeadDim = 0;
  int64_t linearConvKernelDim = 0;
  /// Decoder layers of the multi-token-prediction head (mtp.layers.*), and
  /// the config key that says so (Qwen3.5: mtp_num_hidden_layers,
  /// Qwen3-Next: num_nextn_predict_layers); 0 without a head.
  int64_t numMtpLayers = 0;
  std::string mtpLayersKey;
  /// The q|k|v channels the conv runs over: 2·Hk·dk + Hv·dv.
  int64_t linearConvDim() const {
    return 2 * linearNumKeyHeads * linearKeyHeadDim + linearNumValueHeads * linearValueHeadDim;
  }

  bool isMoe() const { return numExperts > 0; }
  /// tensorPrefix + "layers.<i>.".
  std::string layerPrefix(int64_t i) const {
    return tensorPrefix + "layers." + std::to_string(i) + ".";
  }
  /// Whether layer `i` has a sparse MoE block (else a dense MLP).
  bool isMoeLayer(int64_t i) const;
  bool hasMixer(MixerKind k) const;
  /// Number of query heads per KV head.
  int64_t queryGroupSize() const { return numAttentionHeads / numKeyValueHeads; }
};

/// Parses and validates a config.json text: the fields every family shares,
/// then the family's own (its FamilyDef::parseConfig). `fileName` prefixes
/// errors.
Result<ModelConfig> parseModelConfig(const nlohmann::json &json, const std::string &fileName);

/// Reads `<modelDir>/config.json`.
Result<ModelConfig> loadModelConfig(const std::filesystem::path &modelDir);

/// Reads a JSON file, reporting syntax errors as file:line:column.
Result<nlohmann::json> readJsonFile(const std::filesystem::path &path);

} // namespace volt::model
