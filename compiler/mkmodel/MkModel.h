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
};

const char *formatName(Format format);
/// Names accepted on the command line: modelopt, compressed-tensors, bf16,
/// modelopt-mixed.
std::vector<std::string> formatNames();
Result<Format> parseFormat(const std::string &name);

/// Shape presets: "tiny" (every family), or a published model's shape
/// ("qwen3-30b-a3b", "qwen2-57b-a14b", "qwen1.5-moe-a2.7b", "mixtral-8x7b",
/// "qwen3-32b", "qwen3-next-80b-a3b", "qwen3.6-35b-a3b", "qwen3.5-27b",
/// "qwen3.5-122b-a10b").
std::vector<std::string> presetNames();

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
