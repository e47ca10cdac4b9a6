//===- DeploySpec.h - the deployment spec a user writes --------*- C++ -*-===//
//
// A deployment spec says what to serve (a Hugging Face model directory), on
// what (a SKU), on how many GPUs, and with which limits. Its keys are vLLM's
// words for vLLM's concepts (tensor_parallel_size, max_model_len, ...), so
// people who tune vLLM today read it without a manual. `voltc` turns a spec
// into a plan; everything here is checked before any work starts.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/spec/Sku.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace volt::spec {

/// The dtype KV-cache blocks are stored in.
enum class KvCacheDtype { Fp16 };

/// What voltc does to the checkpoint's weights.
enum class WeightQuantization {
  None,  ///< use the checkpoint as it is (already NVFP4, or FP16/BF16)
  Nvfp4, ///< quantize an unquantized checkpoint to NVFP4
};

struct KvCacheConfig {
  KvCacheDtype dtype = KvCacheDtype::Fp16;
  /// Tokens per KV-cache block (vLLM's block_size).
  int blockSize = 16;
};

/// The dtype of the residual stream (the running sum of the layers'
/// outputs); activations are FP16 either way.
enum class ResidualDtype { Fp16, Fp32 };

struct WeightsConfig {
  WeightQuantization quantize = WeightQuantization::None;
};

/// Where draft tokens come from (vLLM's speculative_config.method). Mtp is
/// parsed so that it is refused by name.
enum class SpeculativeMethod { None, Ngram, Mtp };

/// Speculative decoding (docs/design/speculative.md); method None: off.
struct SpeculativeConfig {
  SpeculativeMethod method = SpeculativeMethod::None;
  int64_t numSpeculativeTokens = 0;
  int64_t promptLookupMin = 5;
  int64_t promptLookupMax = 5;
};

/// A validated deployment spec. Defaults are vLLM's where vLLM has one.
struct DeploySpec {
  /// The file it was read from ("" when parsed from text).
  std::filesystem::path specFile;
  /// `model` as written, and resolved against the spec file's folder.
  std::string model;
  std::filesystem::path modelDir;
  /// `target` as written, and the SKU it names. When a spec is parsed with
  /// `checkFilesystem` off, a path target is not read and `sku` stays default.
  std::string target;
  Sku sku;
  int tensorParallelSize = 1;
  /// Unset means the model's max_position_embeddings (resolved by the compiler).
  std::optional<int64_t> maxModelLen;
  int64_t maxNumSeqs = 256;
  int64_t maxNumBatchedTokens = 2048;
  double gpuMemoryUtilization = 0.9;
  KvCacheConfig kvCache;
  WeightsConfig weights;
  int64_t seed = 0;
  /// The name clients use; defaults to the model directory's name.
  std::string servedModelName;
  bool enablePrefixCaching = false;
  ResidualDtype residualDtype = ResidualDtype::Fp16;
  SpeculativeConfig speculative;
};

struct DeploySpecOptions {
  /// Check that the model directory exists and read path targets. Off for
  /// fuzzing, where the text must not reach the file system.
  bool checkFilesystem = true;
};

/// Reads and validates the spec at `file`; paths in it are relative to the
/// file's folder.
Result<DeploySpec> loadDeploySpec(const std::filesystem::path &file,
                                  const DeploySpecOptions &options = {});

/// Validates spec text; `fileName` is what messages call it and `baseDir`
/// is where relative paths start.
Result<DeploySpec> parseDeploySpec(std::string_view text, std::string_view fileName,
                                   const std::filesystem::path &baseDir,
                                   const DeploySpecOptions &options = {});

/// Every key of the spec (dotted for nested ones: "kv_cache.block_size").
std::vector<std::string> deploySpecKeys();

/// The Markdown table of every key: type, valid values, default, meaning
/// (docs/spec.md holds it).
std::string deploySpecReference();

std::string_view kvCacheDtypeName(KvCacheDtype dtype);
std::string_view weightQuantizationName(WeightQuantization q);
std::string_view speculativeMethodName(SpeculativeMethod m);

} // namespace volt::spec
