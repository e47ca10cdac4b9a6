//===- QuantConfig.h - which quantization a checkpoint claims ----*- C++ -*-===//
//
// NVFP4 checkpoints come from two producers with different files, tensor
// names and global-scale conventions: NVIDIA ModelOpt (hf_quant_config.json
// or config.json `quantization_config` with quant_method "modelopt") and
// compressed-tensors (`quant_method: compressed-tensors`, format
// `nvfp4-pack-quantized`). FP8 E4M3 weights come from ModelOpt (quant_algo
// `FP8`, or per layer under `MIXED_PRECISION`, as NVIDIA's Qwen3.6 NVFP4
// export keeps attention in FP8), from compressed-tensors (format
// `float-quantized`, llm-compressor's FP8 schemes, or per group under
// `mixed-precision`) and from `quant_method: fp8` (the block-scaled FP8
// releases of Qwen). This reads the claim. The claim only predicts;
// the per-tensor format is decided from the tensors actually present
// (published checkpoints have had modules missing from their exclude lists).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <nlohmann/json_fwd.hpp>

#include <filesystem>
#include <map>
#include <set>
#include <regex>
#include <string>
#include <vector>

namespace volt::model {

enum class QuantFormat {
  None,                   ///< unquantized BF16/F16/F32
  ModelOptNvfp4,          ///< P.weight U8, P.weight_scale E4M3, P.weight_scale_2 (multiplier)
  /// config_groups, each NVFP4 (P.weight_packed, P.weight_scale,
  /// P.weight_global_scale: a divisor) or FP8 (P.weight E4M3, P.weight_scale:
  /// a multiplier per tensor, row or 128 x 128 block)
  CompressedTensors,
  ModelOptFp8,            ///< P.weight E4M3, P.weight_scale F32 (per tensor or per row)
  ModelOptMixed,          ///< MIXED_PRECISION: NVFP4 or FP8 per layer (`quantized_layers`)
  Fp8,                    ///< quant_method fp8: P.weight E4M3, P.weight_scale_inv per block
};

/// What the claim says one module's weight is.
enum class LayerFormat { Unquantized, Nvfp4, Fp8 };

const char *quantFormatName(QuantFormat format);

struct QuantConfig {
  QuantFormat format = QuantFormat::None;
  /// The file the claim was read from ("hf_quant_config.json", "config.json").
  std::string source;
  /// ModelOpt's quant_algo ("NVFP4", "W4A16_NVFP4") or compressed-tensors'
  /// format string.
  std::string algorithm;
  int64_t groupSize = 16;
  /// Whether activations were quantized too (W4A4); volt runs such
  /// checkpoints weight-only with FP16 activations, as GPUs without FP4
  /// hardware must.
  bool activationsQuantized = false;
  /// The KV-cache quantization the checkpoint asks for (ModelOpt's
  /// kv_cache_quant_algo, "FP8"; compressed-tensors' kv_cache_scheme,
  /// "FP8" for 8-bit float, else the scheme as JSON); empty: none. volt's
  /// KV cache is FP16 whatever it says (sm_70 has no FP8), and says so.
  std::string kvCacheQuant;
  /// What volt does with kvCacheQuant, for voltc check and compile.
  std::string kvCacheNote() const;
  /// Modules left unquantized: fnmatch wildcards (ModelOpt) or exact names
  /// and `re:` regexes matched from the start (compressed-tensors).
  std::vector<std::string> excludePatterns;

  /// Whether the claim says module `name` (e.g. "lm_head",
  /// "model.layers.0.mlp.gate") stays unquantized.
  bool isExcluded(const std::string &name) const;

  /// MIXED_PRECISION's `quantized_layers`: modules, or a parent of them
  /// ("model.layers.0.mlp.experts"), and their format.
  std::map<std::string, LayerFormat> layers;
  /// The `layers` whose FP8 is block-scaled (FP8_PB_WO, FP8_BLOCK_SCALES).
  std::set<std::string> fp8BlockLayers;
  /// The whole checkpoint's FP8 is block-scaled (ModelOpt FP8_PB_WO /
  /// FP8_BLOCK_SCALES, quant_method fp8 with weight_block_size).
  bool fp8Block = false;
  /// The format the claim predicts for module `name`: from `layers` (the
  /// module or its nearest listed parent; unlisted modules are unquantized)
  /// under MIXED_PRECISION, else the checkpoint's one format unless excluded.
  LayerFormat formatOf(const std::string &name) const;

  /// Compiled `re:` patterns, in the order of excludePatterns (empty regex
  /// for non-regex entries).
  std::vector<std::regex> regexes;

  /// compressed-tensors' config_groups, in the file's order: the format of
  /// each and the modules it targets ("Linear": every linear layer; else an
  /// exact module name or a `re:` regex matched from the start). The first
  /// group that targets a module decides its format.
  struct Group {
    std::string name;
    LayerFormat format = LayerFormat::Unquantized;
    /// FP8 with strategy `block` (a scale per 128 x 128 block).
    bool fp8Block = false;
    std::vector<std::string> targets;
    std::vector<std::regex> regexes;
  };
  std::vector<Group> groups;

  /// Whether module `name`'s FP8 weight is scaled per 128 x 128 block by
  /// this claim (rather than per tensor or per output row): such weights
  /// are kept dense, the others as E4M3 with a scale per row.
  bool fp8BlockScaled(const std::string &name) const;

  /// Whether any module may be NVFP4 by this claim.
  bool claimsNvfp4() const;
  /// The claim in words ("ModelOpt NVFP4", "compressed-tensors FP8", ...).
  std::string name() const;
};

/// Reads the quantization claim of a model directory from
/// hf_quant_config.json and config.json's quantization_config. Unsupported
/// methods and algorithms are rejected by name.
Result<QuantConfig> loadQuantConfig(const std::filesystem::path &modelDir,
                                    const nlohmann::json &configJson);

} // namespace volt::model
