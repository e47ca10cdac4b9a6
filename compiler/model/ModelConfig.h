//===- ModelConfig.h - a model's config.json ---------------------*- C++ -*-===//
//
// The architecture description volt compiles from: the fields of a Hugging
// Face config.json for the families volt supports, validated, with each
// family's conventions made explicit (Mixtral's expert names, Qwen2-MoE's
// shared expert, which layers are MoE). Options volt does not implement are
// rejected by name rather than ignored.
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

enum class Family {
  Qwen3Moe, ///< Qwen3MoeForCausalLM: QK-norm, no bias, optional top-k renormalisation
  Qwen2Moe, ///< Qwen2MoeForCausalLM: q/k/v bias, shared expert with sigmoid gate
  Mixtral,  ///< MixtralForCausalLM: 8 experts, softmax over the top-k logits
  Qwen3,    ///< Qwen3ForCausalLM (dense): QK-norm
  Llama,    ///< LlamaForCausalLM (dense)
};

/// The `architectures` name of a family.
const char *familyArchitecture(Family family);
/// The short name volt's tools use: qwen3-moe, qwen2-moe, mixtral, qwen3, llama.
const char *familyName(Family family);

struct ModelConfig {
  Family family = Family::Qwen3Moe;
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

  bool isMoe() const { return numExperts > 0; }
  /// Whether layer `i` has a sparse MoE block (else a dense MLP).
  bool isMoeLayer(int64_t i) const;
  /// Number of query heads per KV head.
  int64_t queryGroupSize() const { return numAttentionHeads / numKeyValueHeads; }
};

/// Parses and validates a config.json text. `fileName` prefixes errors.
Result<ModelConfig> parseModelConfig(const nlohmann::json &json, const std::string &fileName);

/// Reads `<modelDir>/config.json`.
Result<ModelConfig> loadModelConfig(const std::filesystem::path &modelDir);

/// Reads a JSON file, reporting syntax errors as file:line:column.
Result<nlohmann::json> readJsonFile(const std::filesystem::path &path);

} // namespace volt::model
