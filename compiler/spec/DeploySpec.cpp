//===- DeploySpec.cpp - the deployment spec table and parser --------------===//
#include "compiler/spec/DeploySpec.h"

#include "compiler/spec/Schema.h"
#include "compiler/spec/YamlDocument.h"
#include "runtime/support/Strings.h"

#include <limits>
#include <system_error>

namespace volt::spec {

namespace {

/// Token counts stay far below this, so that products such as
/// max_model_len * max_num_seqs * bytes per token cannot overflow later.
constexpr int64_t kMaxTokens = int64_t{1} << 24;

const std::vector<Field<DeploySpec>> &deploySpecFields() {
  using S = DeploySpec;
  static const std::vector<Field<S>> fields = {
      stringField<S>("model",
                     "the Hugging Face model directory (config.json, *.safetensors, tokenizer), "
                     "relative to the spec file's folder",
                     [](S &s, const std::string &v) { s.model = v; })
          .require()
          .notEmpty()
          .typed("path")
          .validAs("an existing directory"),
      stringField<S>("target", "the hardware to compile for",
                     [](S &s, const std::string &v) { s.target = v; })
          .require()
          .notEmpty()
          .typed("SKU name or path")
          .validAs("a built-in SKU (docs/skus.md), or a SKU file: a path containing '/' or "
                   "ending in .yaml, relative to the spec file's folder"),
      integerField<S>("tensor_parallel_size",
                      "GPUs each layer is split across (cpu: threads, one per rank)",
                      [](S &s, int64_t v) { s.tensorParallelSize = static_cast<int>(v); })
          .oneOf({1, 2, 4, 8})
          .byDefault(int64_t{1}),
      integerField<S>("max_model_len", "longest sequence, prompt plus output, in tokens",
                      [](S &s, int64_t v) { s.maxModelLen = v; })
          .orUnset()
          .atLeast(1)
          .atMost(kMaxTokens)
          .defaultAs("the model's max_position_embeddings"),
      integerField<S>("max_num_seqs", "most sequences served at once (one batch)",
                      [](S &s, int64_t v) { s.maxNumSeqs = v; })
          .atLeast(1)
          .atMost(65536)
          .byDefault(int64_t{256}),
      integerField<S>("max_num_batched_tokens",
                      "most tokens one step processes; longer prompts are prefilled in chunks of "
                      "this size; at least max_num_seqs",
                      [](S &s, int64_t v) { s.maxNumBatchedTokens = v; })
          .atLeast(1)
          .atMost(kMaxTokens)
          .byDefault(int64_t{2048}),
      numberField<S>("gpu_memory_utilization",
                     "fraction of each GPU's memory the plan may use: weights, activations and "
                     "KV cache, after the CUDA context and NCCL reserves",
                     [](S &s, double v) { s.gpuMemoryUtilization = v; })
          .above(0)
          .atMostNumber(1)
          .byDefault(0.9),
      choiceField<S>("kv_cache.dtype", "dtype of the KV cache; auto means fp16", {"fp16", "auto"},
                     [](S &s, const std::string &) { s.kvCache.dtype = KvCacheDtype::Fp16; })
          .byDefault(std::string("fp16")),
      integerField<S>("kv_cache.block_size", "tokens per KV-cache block",
                      [](S &s, int64_t v) { s.kvCache.blockSize = static_cast<int>(v); })
          .oneOf({8, 16, 32})
          .byDefault(int64_t{16}),
      choiceField<S>("weights.quantize",
                     "none: use the checkpoint's weights as they are; nvfp4: quantize an "
                     "unquantized (FP16/BF16/FP32) checkpoint to NVFP4",
                     {"none", "nvfp4"},
                     [](S &s, const std::string &v) {
                       s.weights.quantize =
                           v == "nvfp4" ? WeightQuantization::Nvfp4 : WeightQuantization::None;
                     })
          .byDefault(std::string("none")),
      integerField<S>("seed", "seed of the sampler's random numbers",
                      [](S &s, int64_t v) { s.seed = v; })
          .atLeast(0)
          .atMost(std::numeric_limits<int64_t>::max())
          .byDefault(int64_t{0}),
      stringField<S>("served_model_name", "the model name clients use in API requests",
                     [](S &s, const std::string &v) { s.servedModelName = v; })
          .orUnset()
          .notEmpty()
          .defaultAs("the model directory's name"),
      booleanField<S>("enable_prefix_caching",
                      "reuse the KV-cache blocks of prompt prefixes that requests share; refused for "
                      "models with recurrent layers (their state cannot be shared by prefix)",
                      [](S &s, bool v) { s.enablePrefixCaching = v; })
          .byDefault(false),
      choiceField<S>("residual_dtype",
                     "dtype of the residual stream, the running sum of the layers' outputs; "
                     "fp32 costs activation memory and bandwidth, and keeps long sums exact "
                     "to more bits (activations are fp16 either way)",
                     {"fp16", "fp32"},
                     [](S &s, const std::string &v) {
                       s.residualDtype = v == "fp32" ? ResidualDtype::Fp32 : ResidualDtype::Fp16;
                     })
          .byDefault(std::string("fp16")),
      choiceField<S>("speculative.method",
                     "speculative decoding's draft source: ngram proposes the tokens that "
                     "followed the latest earlier occurrence of the sequence's last tokens "
                     "(prompt lookup); mtp drafts greedily with the checkpoint's "
                     "multi-token-prediction head (mtp.*), compiled into a draft program. "
                     "Unset: no speculative decoding",
                     {"ngram", "mtp"},
                     [](S &s, const std::string &v) {
                       s.speculative.method =
                           v == "ngram" ? SpeculativeMethod::Ngram : SpeculativeMethod::Mtp;
                     })
          .orUnset()
          .defaultAs("unset (off)"),
      integerField<S>("speculative.num_speculative_tokens",
                      "most draft tokens a sequence verifies per step; required with "
                      "speculative.method",
                      [](S &s, int64_t v) { s.speculative.numSpeculativeTokens = v; })
          .orUnset()
          .atLeast(1)
          .atMost(7)
          .defaultAs("none (required with a method)"),
      integerField<S>("speculative.prompt_lookup_min",
                      "ngram: shortest suffix of the sequence looked up for drafts",
                      [](S &s, int64_t v) { s.speculative.promptLookupMin = v; })
          .orUnset()
          .atLeast(1)
          .atMost(64)
          .defaultAs("prompt_lookup_max if set, else 5"),
      integerField<S>("speculative.prompt_lookup_max",
                      "ngram: longest suffix of the sequence looked up for drafts (the longest "
                      "that recurs wins); at least prompt_lookup_min",
                      [](S &s, int64_t v) { s.speculative.promptLookupMax = v; })
          .orUnset()
          .atLeast(1)
          .atMost(64)
          .defaultAs("prompt_lookup_min if set, else 5"),
  };
  return fields;
}

/// Finds the SKU `spec.target` names and reports what is wrong with it.
void resolveTarget(DeploySpec &spec, SourceLocation where, const std::filesystem::path &baseDir,
                   const DeploySpecOptions &options, Diagnostics &diags) {
  const std::string &target = spec.target;
  if (!isSkuPath(target)) {
    Result<Sku> sku = loadSku(target, baseDir);
    if (sku.ok())
      spec.sku = std::move(*sku);
    else
      diags.error(where, "invalid value for 'target': " + sku.message());
    return;
  }
  if (!options.checkFilesystem)
    return;
  std::filesystem::path path = (baseDir / target).lexically_normal();
  Result<std::string> text = readTextFile(path, kMaxYamlBytes);
  if (!text.ok()) {
    diags.error(where, "invalid value for 'target': " + text.message());
    return;
  }
  Result<Sku> sku = parseSku(*text, path.string());
  if (!sku.ok()) {
    diags.error(where,
                "invalid value for 'target': the SKU file '" + path.string() + "' has errors:");
    diags.appendFormatted(sku.message());
    return;
  }
  spec.sku = std::move(*sku);
}

void checkModelDir(const DeploySpec &spec, SourceLocation where,
                   const std::filesystem::path &baseDir, Diagnostics &diags) {
  std::error_code ec;
  auto status = std::filesystem::status(spec.modelDir, ec);
  std::string relative;
  if (std::filesystem::path(spec.model).is_relative())
    relative = " ('" + spec.model + "' is taken relative to the spec file's folder '" +
               baseDir.string() + "')";
  if (ec || !std::filesystem::exists(status))
    diags.error(where,
                "model directory '" + spec.modelDir.string() + "' does not exist" + relative);
  else if (!std::filesystem::is_directory(status))
    diags.error(where, "model path '" + spec.modelDir.string() +
                           "' is not a directory; expected a Hugging Face model directory "
                           "(config.json, *.safetensors)" +
                           relative);
}

std::string modelDirName(const DeploySpec &spec, bool absolute) {
  std::filesystem::path p = spec.modelDir;
  std::error_code ec;
  if (absolute)
    p = std::filesystem::absolute(p, ec);
  p = p.lexically_normal();
  if (p.filename().empty())
    p = p.parent_path();
  std::string name = p.filename().string();
  if (name.empty() || name == "." || name == "..")
    return spec.model;
  return name;
}

/// The speculative.* keys together (vLLM's rules): a method needs a token
/// count, the other keys need a method, and an unset lookup bound follows
/// the other one.
void checkSpeculative(DeploySpec &spec, const KeyPlaces &where, Diagnostics &diags) {
  SpeculativeConfig &sc = spec.speculative;
  if (sc.method == SpeculativeMethod::Mtp)
    for (const char *key : {"speculative.prompt_lookup_min", "speculative.prompt_lookup_max"})
      if (where.has(key))
        diags.error(where.value(key), std::string("'") + key +
                                          "' is for method ngram (prompt lookup), not mtp");
  if (sc.method == SpeculativeMethod::None) {
    for (const char *key : {"speculative.num_speculative_tokens", "speculative.prompt_lookup_min",
                            "speculative.prompt_lookup_max"})
      if (where.has(key))
        diags.error(where.value(key), std::string("'") + key +
                                          "' needs 'speculative.method' (ngram)");
    return;
  }
  if (!where.has("speculative.num_speculative_tokens"))
    diags.error(where.value("speculative.method"),
                "'speculative.num_speculative_tokens' is required with 'speculative.method'");
  const bool hasMin = where.has("speculative.prompt_lookup_min");
  const bool hasMax = where.has("speculative.prompt_lookup_max");
  if (hasMin && !hasMax)
    sc.promptLookupMax = sc.promptLookupMin;
  if (hasMax && !hasMin)
    sc.promptLookupMin = sc.promptLookupMax;
  if (sc.promptLookupMax < sc.promptLookupMin)
    diags.error(where.value(hasMax ? "speculative.prompt_lookup_max" : "speculative.method"),
                "speculative.prompt_lookup_max (" + std::to_string(sc.promptLookupMax) +
                    ") must be at least speculative.prompt_lookup_min (" +
                    std::to_string(sc.promptLookupMin) + ")");
}

} // namespace

Result<DeploySpec> parseDeploySpec(std::string_view text, std::string_view fileName,
                                   const std::filesystem::path &baseDir,
                                   const DeploySpecOptions &options) {
  Diagnostics diags{std::string(fileName)};
  try {
    std::optional<YAML::Node> root = parseYamlDocument(text, diags);
    if (!root)
      return diags.toError();
    DeploySpec spec;
    auto where = readMapping(*root, deploySpecFields(), "a deployment spec", spec, diags);
    auto at = [&](const std::string &key) { return where.value(key); };
    if (!spec.target.empty())
      resolveTarget(spec, at("target"), baseDir, options, diags);
    if (!spec.model.empty()) {
      spec.modelDir = (baseDir / spec.model).lexically_normal();
      if (options.checkFilesystem)
        checkModelDir(spec, at("model"), baseDir, diags);
      if (spec.servedModelName.empty())
        spec.servedModelName = modelDirName(spec, options.checkFilesystem);
    }
    // vLLM's rule too: every running sequence needs room for at least one
    // token in a step.
    if (spec.maxNumBatchedTokens < spec.maxNumSeqs) {
      std::string key =
          where.has("max_num_batched_tokens") ? "max_num_batched_tokens" : "max_num_seqs";
      diags.error(at(key), "max_num_batched_tokens (" + std::to_string(spec.maxNumBatchedTokens) +
                               ") must be at least max_num_seqs (" +
                               std::to_string(spec.maxNumSeqs) +
                               "): each step has room for one token of every sequence");
    }
    checkSpeculative(spec, where, diags);
    if (diags.hasErrors())
      return diags.toError();
    return spec;
  } catch (const std::exception &e) {
    diags.error({}, std::string("invalid yaml: ") + e.what());
    return diags.toError();
  }
}

Result<DeploySpec> loadDeploySpec(const std::filesystem::path &file,
                                  const DeploySpecOptions &options) {
  Result<std::string> text = readTextFile(file, kMaxYamlBytes);
  if (!text.ok())
    return Error(file.string() + ": error: " + text.message());
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(file, ec);
  std::filesystem::path baseDir = (ec ? file : absolute).parent_path();
  VOLT_ASSIGN_OR_RETURN(DeploySpec spec, parseDeploySpec(*text, file.string(), baseDir, options));
  spec.specFile = file;
  return spec;
}

std::vector<std::string> deploySpecKeys() {
  std::vector<std::string> keys;
  for (const Field<DeploySpec> &f : deploySpecFields())
    keys.push_back(f.key);
  return keys;
}

std::string deploySpecReference() {
  std::vector<const FieldSpec *> specs;
  for (const Field<DeploySpec> &f : deploySpecFields())
    specs.push_back(&f);
  return referenceTable(specs);
}

std::string_view kvCacheDtypeName(KvCacheDtype dtype) {
  switch (dtype) {
  case KvCacheDtype::Fp16:
    return "fp16";
  }
  return "unknown";
}

std::string_view speculativeMethodName(SpeculativeMethod m) {
  switch (m) {
  case SpeculativeMethod::None:
    return "none";
  case SpeculativeMethod::Ngram:
    return "ngram";
  case SpeculativeMethod::Mtp:
    return "mtp";
  }
  return "unknown";
}

std::string_view weightQuantizationName(WeightQuantization q) {
  switch (q) {
  case WeightQuantization::None:
    return "none";
  case WeightQuantization::Nvfp4:
    return "nvfp4";
  }
  return "unknown";
}

} // namespace volt::spec
