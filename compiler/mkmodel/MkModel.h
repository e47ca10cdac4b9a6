//===- MkModel.h - synthetic checkpoints for tests and demos ----*- C++ -*-===//
//
// Writes small Hugging Face model directories in every format volt reads —
// ModelOpt NVFP4, compressed-tensors NVFP4, BF16 — for every supported
// family, deterministically from a seed: config.json, the quantization
// config, safetensors (single or sharded, through the same SafetensorsWriter
// whose output the reader validates), tokenizer.json and
// tokenizer_config.json with a chat template. Presets with the shapes of
// published models write config files only, or all-zero weights stored as
// file holes, so that planning and header validation can be exercised at
// full scale without the real weights.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/model/ModelConfig.h"
#include "runtime/support/Status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace volt::mkmodel {

enum class Format {
  ModelOpt,          ///< ModelOpt NVFP4 (hf_quant_config.json)
  CompressedTensors, ///< compressed-tensors nvfp4-pack-quantized
  BF16,              ///< unquantized bfloat16
  /// ModelOpt MIXED_PRECISION as NVIDIA's Qwen3.6 NVFP4 export: attention's
  /// q/k/v/o and linear attention's in_proj_qkv(z)/in_proj_z/out_proj in FP8
  /// (per-tensor scales), experts, shared expert, dense MLPs and lm_head in
  /// NVFP4, the rest BF16; a per-layer `quantized_layers` map.
  ModelOptMixed,
  /// compressed-tensors float-quantized as llm-compressor's FP8_DYNAMIC:
  /// FP8 E4M3 weights with a BF16 scale per output row for every linear
  /// layer but the LM head, the routers, the shared-expert gate and linear
  /// attention's b/a projections (and Qwen3.5's vision tower and MTP head).
  CompressedTensorsFp8,
};

const char *formatName(Format format);
/// Names accepted on the command line: modelopt, compressed-tensors, bf16,
/// modelopt-mixed, compressed-tensors-fp8.
std::vector<std::string> formatNames();
Result<Format> parseFormat(const std::string &name);

/// Shape presets: "tiny" (every family), or a published model's shape
/// ("qwen3-30b-a3b", "qwen2-57b-a14b", "qwen1.5-moe-a2.7b", "mixtral-8x7b",
/// "qwen3-32b", "qwen3-next-80b-a3b", "qwen3.6-35b-a3b", "qwen3.5-27b",
/// "qwen3.5-122b-a10b").
std::vector<std::string> presetNames();

/// Shape flags over a preset (`--hidden`, `--layers`, ...): each set field
/// replaces the preset's config.json value, so that mid-size models can be
/// written (e.g. the tiny preset widened to hundreds of MB for benchmarks).
struct Shape {
  std::optional<int64_t> hidden;          ///< hidden_size
  std::optional<int64_t> layers;          ///< num_hidden_layers (layer_types follow)
  std::optional<int64_t> heads;           ///< num_attention_heads
  std::optional<int64_t> kvHeads;         ///< num_key_value_heads
  std::optional<int64_t> headDim;         ///< head_dim
  std::optional<int64_t> intermediate;    ///< intermediate_size (dense MLPs)
  std::optional<int64_t> experts;         ///< num_experts / num_local_experts
  std::optional<int64_t> expertsPerToken; ///< num_experts_per_tok
  std::optional<int64_t> moeIntermediate; ///< moe_intermediate_size (and the shared expert's)
  std::optional<int64_t> vocab;           ///< vocab_size (the special tokens move with it)
  std::optional<int64_t> maxPositions;    ///< max_position_embeddings
  std::optional<int64_t> linearKeyDim;    ///< linear_key_head_dim (Gated DeltaNet)
  std::optional<int64_t> linearValueDim;  ///< linear_value_head_dim (Gated DeltaNet)
  /// mlp_only_layers: the layers with a dense MLP instead of experts (empty:
  /// every layer has experts).
  std::optional<std::vector<int64_t>> mlpOnlyLayers;
  bool any() const {
    return hidden || layers || heads || kvHeads || headDim || intermediate || experts ||
           expertsPerToken || moeIntermediate || vocab || maxPositions || linearKeyDim ||
           linearValueDim || mlpOnlyLayers;
  }
};

/// Applies `shape` to a preset's config.json (the text config of a Qwen3.5
/// wrapper); an error names the flag the family has no field for.
Status applyShape(nlohmann::json &config, const std::string &family, const Shape &shape);

struct Options {
  /// qwen3-moe, qwen2-moe, mixtral, qwen3, llama, qwen3-next, qwen3.5, qwen3.5-moe
  std::string family = "qwen3-moe";
  Format format = Format::ModelOpt;
  std::string preset = "tiny";
  uint64_t seed = 0;
  /// Number of safetensors files; above 1, an index file maps tensors.
  int shards = 1;
  /// Write config files only (planning before the download).
  bool configOnly = false;
  /// Write every large tensor as zeros stored as file holes (scales and
  /// norms stay valid).
  bool zeros = false;
  /// ModelOpt: put the quantization claim in config.json's
  /// quantization_config (newer exports) instead of hf_quant_config.json.
  bool modelOptInConfigJson = false;
  Shape shape;
  std::filesystem::path outDir;
};

/// The config.json a preset writes for a family.
Result<nlohmann::json> presetConfig(const std::string &family, const std::string &preset);

/// Writes the model directory. Existing files of the same names are
/// replaced; the directory is created if needed.
Status writeModel(const Options &options);

/// What writeModel wrote, for the tool to print.
struct Written {
  size_t tensors = 0;
  uint64_t dataBytes = 0;
  std::vector<std::filesystem::path> files;
};
Result<Written> writeModelReport(const Options &options);

/// A small byte-level BPE tokenizer.json (Qwen2 style) with exactly
/// `vocabSize` ids, the last three of them special tokens
/// (<|endoftext|>, <|im_start|>, <|im_end|>), trained deterministically on
/// a built-in text.
nlohmann::json tinyTokenizer(int64_t vocabSize);

} // namespace volt::mkmodel
