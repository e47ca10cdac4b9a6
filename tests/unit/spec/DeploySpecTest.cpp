// Deployment specs that are valid: defaults, every key set, paths resolved
// against the spec file's folder, built-in and file targets.
#include "compiler/spec/DeploySpec.h"
#include "tests/unit/spec/TestSupport.h"

#include <gtest/gtest.h>

namespace volt::spec {
namespace {

using testing::kMinimalSpec;
using testing::TempWorkspace;

TEST(DeploySpec, MinimalSpecGetsVllmDefaults) {
  TempWorkspace ws;
  Result<DeploySpec> spec = parseDeploySpec(kMinimalSpec, "deploy.yaml", ws.root());
  ASSERT_TRUE(spec.ok()) << spec.message();
  EXPECT_EQ(spec->model, "models/qwen");
  EXPECT_EQ(spec->modelDir, ws.root() / "models/qwen");
  EXPECT_EQ(spec->target, "v100-sxm2-32gb");
  EXPECT_EQ(spec->sku.name, "v100-sxm2-32gb");
  EXPECT_EQ(spec->tensorParallelSize, 1);
  EXPECT_FALSE(spec->maxModelLen.has_value());
  EXPECT_EQ(spec->maxNumSeqs, 256);
  EXPECT_EQ(spec->maxNumBatchedTokens, 2048);
  EXPECT_DOUBLE_EQ(spec->gpuMemoryUtilization, 0.9);
  EXPECT_EQ(spec->kvCache.dtype, KvCacheDtype::Fp16);
  EXPECT_EQ(spec->kvCache.blockSize, 16);
  EXPECT_EQ(spec->weights.quantize, WeightQuantization::None);
  EXPECT_EQ(spec->seed, 0);
  EXPECT_EQ(spec->servedModelName, "qwen");
  EXPECT_FALSE(spec->enablePrefixCaching);
}

TEST(DeploySpec, StructDefaultsAgreeWithTheTable) {
  // A DeploySpec built in code must mean the same as a spec that leaves the
  // keys out.
  TempWorkspace ws;
  Result<DeploySpec> parsed = parseDeploySpec(kMinimalSpec, "deploy.yaml", ws.root());
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  DeploySpec fresh;
  EXPECT_EQ(fresh.tensorParallelSize, parsed->tensorParallelSize);
  EXPECT_EQ(fresh.maxModelLen, parsed->maxModelLen);
  EXPECT_EQ(fresh.maxNumSeqs, parsed->maxNumSeqs);
  EXPECT_EQ(fresh.maxNumBatchedTokens, parsed->maxNumBatchedTokens);
  EXPECT_EQ(fresh.gpuMemoryUtilization, parsed->gpuMemoryUtilization);
  EXPECT_EQ(fresh.kvCache.dtype, parsed->kvCache.dtype);
  EXPECT_EQ(fresh.kvCache.blockSize, parsed->kvCache.blockSize);
  EXPECT_EQ(fresh.weights.quantize, parsed->weights.quantize);
  EXPECT_EQ(fresh.seed, parsed->seed);
  EXPECT_EQ(fresh.enablePrefixCaching, parsed->enablePrefixCaching);
}

TEST(DeploySpec, EveryKeySet) {
  TempWorkspace ws;
  const char *text = R"(# the example of docs/spec.md
model: ./models/qwen
target: v100-pcie-16gb
tensor_parallel_size: 2
max_model_len: 32768
max_num_seqs: 32
max_num_batched_tokens: 8192
gpu_memory_utilization: 0.92
kv_cache: {dtype: fp16, block_size: 32}
weights: {quantize: nvfp4}
seed: 1234
served_model_name: "qwen3-30b"
enable_prefix_caching: true
)";
  Result<DeploySpec> spec = parseDeploySpec(text, "deploy.yaml", ws.root());
  ASSERT_TRUE(spec.ok()) << spec.message();
  EXPECT_EQ(spec->modelDir, ws.root() / "models/qwen");
  EXPECT_EQ(spec->sku.name, "v100-pcie-16gb");
  EXPECT_EQ(spec->tensorParallelSize, 2);
  EXPECT_EQ(spec->maxModelLen, 32768);
  EXPECT_EQ(spec->maxNumSeqs, 32);
  EXPECT_EQ(spec->maxNumBatchedTokens, 8192);
  EXPECT_DOUBLE_EQ(spec->gpuMemoryUtilization, 0.92);
  EXPECT_EQ(spec->kvCache.blockSize, 32);
  EXPECT_EQ(spec->weights.quantize, WeightQuantization::Nvfp4);
  EXPECT_EQ(spec->seed, 1234);
  EXPECT_EQ(spec->servedModelName, "qwen3-30b");
  EXPECT_TRUE(spec->enablePrefixCaching);
}

TEST(DeploySpec, BlockStyleSectionsAndAutoDtype) {
  TempWorkspace ws;
  std::string text = std::string(kMinimalSpec) + "kv_cache:\n  dtype: auto\n  block_size: 8\n"
                                                 "weights:\n  quantize: none\n";
  Result<DeploySpec> spec = parseDeploySpec(text, "deploy.yaml", ws.root());
  ASSERT_TRUE(spec.ok()) << spec.message();
  EXPECT_EQ(spec->kvCache.dtype, KvCacheDtype::Fp16);
  EXPECT_EQ(spec->kvCache.blockSize, 8);
}

TEST(DeploySpec, EmptyMaxModelLenMeansTheModelsOwn) {
  TempWorkspace ws;
  for (const char *value : {"", " ~", " null"}) {
    std::string text = std::string(kMinimalSpec) + "max_model_len:" + value + "\n";
    Result<DeploySpec> spec = parseDeploySpec(text, "deploy.yaml", ws.root());
    ASSERT_TRUE(spec.ok()) << spec.message();
    EXPECT_FALSE(spec->maxModelLen.has_value()) << value;
  }
}

TEST(DeploySpec, ChunkedPrefillAllowsBatchedTokensBelowMaxModelLen) {
  TempWorkspace ws;
  std::string text = std::string(kMinimalSpec) +
                     "max_model_len: 32768\nmax_num_batched_tokens: 512\n"
                     "max_num_seqs: 512\n";
  Result<DeploySpec> spec = parseDeploySpec(text, "deploy.yaml", ws.root());
  ASSERT_TRUE(spec.ok()) << spec.message();
  EXPECT_EQ(spec->maxNumBatchedTokens, 512);
}

TEST(DeploySpec, LoadResolvesPathsAgainstTheSpecFolder) {
  TempWorkspace ws;
  ws.write("deploy/custom.yaml", std::string(*builtinSkuText("t4")));
  std::filesystem::path file = ws.write("deploy/spec.yaml", "model: ../models/qwen/\n"
                                                            "target: ./custom.yaml\n");
  Result<DeploySpec> spec = loadDeploySpec(file);
  ASSERT_TRUE(spec.ok()) << spec.message();
  EXPECT_EQ(spec->specFile, file);
  EXPECT_EQ(spec->modelDir, ws.root() / "models/qwen/");
  EXPECT_EQ(spec->servedModelName, "qwen") << "a trailing '/' does not hide the name";
  EXPECT_EQ(spec->sku.name, "t4");
  EXPECT_EQ(spec->sku.arch, Arch::Sm75);
}

TEST(DeploySpec, AbsoluteModelPath) {
  TempWorkspace ws;
  std::string text = "model: " + (ws.root() / "models/qwen").string() + "\ntarget: cpu\n";
  Result<DeploySpec> spec = parseDeploySpec(text, "deploy.yaml", "/nonexistent/base");
  ASSERT_TRUE(spec.ok()) << spec.message();
  EXPECT_EQ(spec->modelDir, ws.root() / "models/qwen");
  EXPECT_TRUE(spec->sku.isCpu());
}

TEST(DeploySpec, LoadsTheCommittedExample) {
  Result<DeploySpec> spec = loadDeploySpec(testing::inputsDir() / "deploy/example.yaml");
  ASSERT_TRUE(spec.ok()) << spec.message();
  EXPECT_EQ(spec->sku.name, "my-v100-pcie-16gb");
  EXPECT_EQ(spec->servedModelName, "tiny-moe");
  EXPECT_EQ(spec->tensorParallelSize, 2);
}

TEST(DeploySpec, WithoutFilesystemChecksNothingIsRead) {
  DeploySpecOptions options;
  options.checkFilesystem = false;
  Result<DeploySpec> spec = parseDeploySpec("model: /does/not/exist\ntarget: ./nope.yaml\n",
                                            "deploy.yaml", "/also/missing", options);
  ASSERT_TRUE(spec.ok()) << spec.message();
  EXPECT_EQ(spec->target, "./nope.yaml");
  EXPECT_EQ(spec->sku.name, "") << "path targets are not read";
  EXPECT_EQ(spec->servedModelName, "exist");
}

TEST(DeploySpec, KeysListsNestedKeysDotted) {
  std::vector<std::string> keys = deploySpecKeys();
  for (const char *key :
       {"model", "target", "tensor_parallel_size", "max_model_len", "max_num_seqs",
        "max_num_batched_tokens", "gpu_memory_utilization", "kv_cache.dtype", "kv_cache.block_size",
        "weights.quantize", "seed", "served_model_name", "enable_prefix_caching",
        "speculative.method", "speculative.num_speculative_tokens",
        "speculative.prompt_lookup_min", "speculative.prompt_lookup_max"})
    EXPECT_NE(std::find(keys.begin(), keys.end(), key), keys.end()) << key;
  EXPECT_EQ(keys.size(), 18u);
}

TEST(DeploySpec, SpeculativeNgramAndItsDefaults) {
  DeploySpecOptions options;
  options.checkFilesystem = false;
  auto parse = [&](const std::string &extra) {
    return parseDeploySpec("model: m\ntarget: cpu\n" + extra, "deploy.yaml", "/x", options);
  };
  auto off = parse("");
  ASSERT_TRUE(off.ok()) << off.message();
  EXPECT_EQ(off->speculative.method, SpeculativeMethod::None);
  auto on = parse("speculative:\n  method: ngram\n  num_speculative_tokens: 4\n");
  ASSERT_TRUE(on.ok()) << on.message();
  EXPECT_EQ(on->speculative.method, SpeculativeMethod::Ngram);
  EXPECT_EQ(on->speculative.numSpeculativeTokens, 4);
  EXPECT_EQ(on->speculative.promptLookupMin, 5);
  EXPECT_EQ(on->speculative.promptLookupMax, 5);
  // One bound set: the other follows it (vLLM's rule).
  auto maxOnly = parse("speculative: {method: ngram, num_speculative_tokens: 2, "
                       "prompt_lookup_max: 3}\n");
  ASSERT_TRUE(maxOnly.ok()) << maxOnly.message();
  EXPECT_EQ(maxOnly->speculative.promptLookupMin, 3);
  EXPECT_EQ(maxOnly->speculative.promptLookupMax, 3);
  auto both = parse("speculative: {method: ngram, num_speculative_tokens: 7, "
                    "prompt_lookup_min: 2, prompt_lookup_max: 6}\n");
  ASSERT_TRUE(both.ok()) << both.message();
  EXPECT_EQ(both->speculative.numSpeculativeTokens, 7);
  EXPECT_EQ(both->speculative.promptLookupMin, 2);
  EXPECT_EQ(both->speculative.promptLookupMax, 6);
}

} // namespace
} // namespace volt::spec
