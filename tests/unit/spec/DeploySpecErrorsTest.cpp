// Deployment specs that are wrong: every error names file:line:column, says
// what was expected and what was found, and nothing crashes.
#include "compiler/spec/DeploySpec.h"
#include "tests/unit/spec/TestSupport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace volt::spec {
namespace {

using ::testing::HasSubstr;
using testing::kMinimalSpec;
using testing::TempWorkspace;

class DeploySpecErrors : public ::testing::Test {
protected:
  /// The error message for `text`; fails the test when it parses.
  std::string errorOf(const std::string &text) {
    Result<DeploySpec> spec = parseDeploySpec(text, "deploy.yaml", ws_.root());
    EXPECT_FALSE(spec.ok()) << "parsed:\n" << text;
    return spec.ok() ? std::string() : spec.message();
  }
  /// The error for the minimal spec plus `extra` lines.
  std::string errorWith(const std::string &extra) { return errorOf(kMinimalSpec + extra); }

  TempWorkspace ws_;
};

TEST_F(DeploySpecErrors, UnknownKeySuggestsTheClosest) {
  std::string e = errorWith("max_model_length: 4096\n");
  EXPECT_THAT(e, HasSubstr("deploy.yaml:3:1: error: unknown key 'max_model_length'; did you "
                           "mean 'max_model_len'?"));
  EXPECT_THAT(e, HasSubstr("valid keys: model, target, tensor_parallel_size, max_model_len"));
}

TEST_F(DeploySpecErrors, UnknownNestedKey) {
  std::string e = errorWith("kv_cache:\n  dtyp: fp16\n");
  EXPECT_THAT(e, HasSubstr("deploy.yaml:4:3: error: unknown key 'dtyp' in 'kv_cache'; did you "
                           "mean 'dtype'? valid keys in 'kv_cache': dtype, block_size"));
}

TEST_F(DeploySpecErrors, DottedKeysAreNotAShortcut) {
  EXPECT_THAT(errorWith("kv_cache.dtype: fp16\n"),
              HasSubstr("deploy.yaml:3:1: error: unknown key 'kv_cache.dtype'"));
}

TEST_F(DeploySpecErrors, SpeculativeKeysTogether) {
  EXPECT_THAT(errorWith("speculative:\n  method: ngram\n"),
              HasSubstr("deploy.yaml:4:11: error: 'speculative.num_speculative_tokens' is "
                        "required with 'speculative.method'"));
  EXPECT_THAT(errorWith("speculative:\n  num_speculative_tokens: 3\n"),
              HasSubstr("deploy.yaml:4:27: error: 'speculative.num_speculative_tokens' needs "
                        "'speculative.method' (ngram)"));
  EXPECT_THAT(errorWith("speculative:\n  method: mtp\n"),
              HasSubstr("deploy.yaml:4:11: error: 'speculative.num_speculative_tokens' is "
                        "required with 'speculative.method'"));
  EXPECT_THAT(errorWith("speculative:\n  method: mtp\n  num_speculative_tokens: 2\n"
                        "  prompt_lookup_min: 2\n"),
              HasSubstr("deploy.yaml:6:22: error: 'speculative.prompt_lookup_min' is for method "
                        "ngram (prompt lookup), not mtp"));
  EXPECT_THAT(errorWith("speculative:\n  method: eagle\n"),
              HasSubstr("invalid value for 'speculative.method'"));
  EXPECT_THAT(errorWith("speculative:\n  method: ngram\n  num_speculative_tokens: 8\n"),
              HasSubstr("deploy.yaml:5:27: error: invalid value for "
                        "'speculative.num_speculative_tokens'"));
  EXPECT_THAT(errorWith("speculative:\n  method: ngram\n  num_speculative_tokens: 2\n"
                        "  prompt_lookup_min: 4\n  prompt_lookup_max: 3\n"),
              HasSubstr("deploy.yaml:7:22: error: speculative.prompt_lookup_max (3) must be at "
                        "least speculative.prompt_lookup_min (4)"));
}

TEST_F(DeploySpecErrors, MalformedYamlGivesLineAndColumn) {
  EXPECT_THAT(errorWith("kv_cache: {dtype: fp16, block_size: 16\nseed: 1\n"),
              HasSubstr("deploy.yaml:4:"));
  EXPECT_THAT(errorOf("model: a\n  target: b\n"),
              HasSubstr("deploy.yaml:2:9: error: invalid yaml: "));
  EXPECT_THAT(errorOf("model: [a, b\ntarget: cpu\n"), HasSubstr("error: invalid yaml"));
}

TEST_F(DeploySpecErrors, StringWhereIntegerExpected) {
  EXPECT_THAT(errorWith("max_num_seqs: \"32\"\n"),
              HasSubstr("deploy.yaml:3:15: error: invalid value for 'max_num_seqs': expected an "
                        "integer from 1 to 65536, found the string \"32\""));
  EXPECT_THAT(errorWith("max_num_seqs: lots\n"),
              HasSubstr("deploy.yaml:3:15: error: invalid value for 'max_num_seqs': expected an "
                        "integer from 1 to 65536, found 'lots'"));
}

TEST_F(DeploySpecErrors, FloatWhereIntegerExpected) {
  EXPECT_THAT(errorWith("max_num_seqs: 1.5\n"), HasSubstr("deploy.yaml:3:15: error: invalid value "
                                                          "for 'max_num_seqs': expected an "
                                                          "integer from 1 to 65536, found '1.5'"));
  EXPECT_THAT(errorWith("max_model_len: 4e3\n"), HasSubstr("found '4e3'"));
}

TEST_F(DeploySpecErrors, NegativeAndZero) {
  EXPECT_THAT(errorWith("tensor_parallel_size: -2\n"),
              HasSubstr("deploy.yaml:3:23: error: invalid value for 'tensor_parallel_size': "
                        "expected one of 1, 2, 4, 8, found -2"));
  EXPECT_THAT(errorWith("tensor_parallel_size: 3\n"),
              HasSubstr("expected one of 1, 2, 4, 8, found 3"));
  EXPECT_THAT(errorWith("max_num_seqs: 0\n"),
              HasSubstr("invalid value for 'max_num_seqs': expected an integer from 1 to 65536, "
                        "found 0"));
  EXPECT_THAT(errorWith("seed: -1\n"),
              HasSubstr("invalid value for 'seed': expected an integer from 0 to "
                        "9223372036854775807, found -1"));
}

TEST_F(DeploySpecErrors, HugeIntegers) {
  EXPECT_THAT(errorWith("max_model_len: 99999999999999999999\n"),
              HasSubstr("deploy.yaml:3:16: error: invalid value for 'max_model_len': expected an "
                        "integer from 1 to 16777216, found 99999999999999999999, which does not "
                        "fit in a 64-bit integer"));
  EXPECT_THAT(errorWith("max_model_len: 9223372036854775807\n"),
              HasSubstr("expected an integer from 1 to 16777216, found 9223372036854775807"));
  EXPECT_THAT(errorWith("seed: -9223372036854775809\n"), HasSubstr("does not fit in a 64-bit"));
}

TEST_F(DeploySpecErrors, UtilizationRange) {
  for (const char *bad : {"0", "1.5", "-0.1", "0.0"})
    EXPECT_THAT(errorWith(std::string("gpu_memory_utilization: ") + bad + "\n"),
                HasSubstr("deploy.yaml:3:25: error: invalid value for 'gpu_memory_utilization': "
                          "expected a number greater than 0 and at most 1, found " +
                          std::string(bad)));
  for (const char *bad : {".nan", ".inf", "inf", "nan", "high"})
    EXPECT_THAT(errorWith(std::string("gpu_memory_utilization: ") + bad + "\n"),
                HasSubstr("found '" + std::string(bad) + "'"));
}

TEST_F(DeploySpecErrors, ChoicesListValidValues) {
  EXPECT_THAT(errorWith("kv_cache: {dtype: fp8}\n"),
              HasSubstr("deploy.yaml:3:19: error: invalid value for 'kv_cache.dtype': expected "
                        "one of fp16, auto, found 'fp8'"));
  EXPECT_THAT(errorWith("kv_cache: {block_size: 64}\n"),
              HasSubstr("invalid value for 'kv_cache.block_size': expected one of 8, 16, 32, "
                        "found 64"));
  EXPECT_THAT(errorWith("weights: {quantize: nvfp5}\n"),
              HasSubstr("expected one of none, nvfp4, found 'nvfp5'; did you mean 'nvfp4'?"));
}

TEST_F(DeploySpecErrors, BooleansAreTrueOrFalse) {
  EXPECT_THAT(errorWith("enable_prefix_caching: yes\n"),
              HasSubstr("deploy.yaml:3:24: error: invalid value for 'enable_prefix_caching': "
                        "expected true or false, found 'yes'"));
  EXPECT_THAT(errorWith("enable_prefix_caching: \"true\"\n"),
              HasSubstr("found the string \"true\""));
}

TEST_F(DeploySpecErrors, WrongShapes) {
  EXPECT_THAT(errorWith("kv_cache: fp16\n"),
              HasSubstr("deploy.yaml:3:11: error: invalid value for 'kv_cache': expected a mapping "
                        "with keys dtype, block_size, found 'fp16'"));
  EXPECT_THAT(errorWith("seed: [1, 2]\n"), HasSubstr("found a sequence"));
  EXPECT_THAT(errorWith("served_model_name: {a: 1}\n"),
              HasSubstr("invalid value for 'served_model_name': expected a non-empty string, "
                        "found a mapping"));
  EXPECT_THAT(errorWith("served_model_name: \"\"\n"), HasSubstr("found an empty string"));
  EXPECT_THAT(errorWith("max_num_seqs:\n"),
              HasSubstr("deploy.yaml:3:1: error: invalid value for 'max_num_seqs': expected an "
                        "integer from 1 to 65536, found an empty value"));
  EXPECT_THAT(errorWith("[a, b]: 1\n"),
              HasSubstr("deploy.yaml:3:1: error: expected a key name, found a sequence"));
}

TEST_F(DeploySpecErrors, DuplicateKey) {
  EXPECT_THAT(errorWith("max_num_seqs: 8\nmax_num_seqs: 16\n"),
              HasSubstr("deploy.yaml:4:1: error: duplicate key 'max_num_seqs' (first given at "
                        "line 3, column 1)"));
  EXPECT_THAT(errorWith("kv_cache: {block_size: 8, block_size: 16}\n"),
              HasSubstr("duplicate key 'kv_cache.block_size'"));
}

TEST_F(DeploySpecErrors, TopLevelMustBeAMapping) {
  EXPECT_THAT(errorOf("- model\n- target\n"),
              HasSubstr("deploy.yaml:1:1: error: expected a mapping of keys to values (a "
                        "deployment spec), found a sequence"));
  EXPECT_THAT(errorOf("just words\n"), HasSubstr("found 'just words'"));
  EXPECT_THAT(errorOf(""), HasSubstr("deploy.yaml: error: the file is empty"));
  EXPECT_THAT(errorOf("# only a comment\n"), HasSubstr("deploy.yaml: error: the file is empty"));
  EXPECT_THAT(errorOf(std::string(kMinimalSpec) + "---\nseed: 1\n"),
              HasSubstr("deploy.yaml:3:1: error: expected one yaml document, found another one "
                        "here"));
  EXPECT_THAT(errorOf(","), HasSubstr("deploy.yaml:1:1: error: invalid yaml: unexpected ','"));
  EXPECT_THAT(errorOf("\"x\" ,"),
              HasSubstr("deploy.yaml:1:5: error: invalid yaml: unexpected ','"));
  EXPECT_THAT(errorOf("&a ,"), HasSubstr("invalid yaml: unexpected ','"));
}

TEST_F(DeploySpecErrors, MissingRequiredKeys) {
  std::string e = errorOf("seed: 1\n");
  EXPECT_THAT(e, HasSubstr("deploy.yaml:1:1: error: missing required key 'model'"));
  EXPECT_THAT(e, HasSubstr("deploy.yaml:1:1: error: missing required key 'target'"));
}

TEST_F(DeploySpecErrors, UnknownTargetListsBuiltins) {
  std::string e = errorOf("model: models/qwen\ntarget: v100-sxm-32gb\n");
  EXPECT_THAT(e, HasSubstr("deploy.yaml:2:9: error: invalid value for 'target': unknown SKU "
                           "'v100-sxm-32gb'; did you mean 'v100-sxm2-32gb'?"));
  EXPECT_THAT(e, HasSubstr("built-in SKUs: a100-40gb, a100-80gb, cpu, h100-sxm-80gb"));
  EXPECT_THAT(e, HasSubstr("or give the path of a SKU file"));
}

TEST_F(DeploySpecErrors, MissingTargetFile) {
  std::string e = errorOf("model: models/qwen\ntarget: skus/mine.yaml\n");
  EXPECT_THAT(e, HasSubstr("deploy.yaml:2:9: error: invalid value for 'target': cannot read '" +
                           (ws_.root() / "skus/mine.yaml").string() + "': no such file"));
  ws_.write("skus/dir.yaml/placeholder", "");
  EXPECT_THAT(errorOf("model: models/qwen\ntarget: skus/dir.yaml\n"),
              HasSubstr("it is a directory, not a file"));
}

TEST_F(DeploySpecErrors, InvalidTargetFileNamesItsOwnLines) {
  std::filesystem::path sku = ws_.write("skus/bad.yaml", "name: bad\narch: sm_71\n");
  std::string e = errorOf("model: models/qwen\ntarget: skus/bad.yaml\n");
  EXPECT_THAT(e, HasSubstr("deploy.yaml:2:9: error: invalid value for 'target': the SKU file '" +
                           sku.string() + "' has errors:"));
  EXPECT_THAT(e, HasSubstr(sku.string() + ":2:7: error: invalid value for 'arch': expected one "
                                          "of sm_70, sm_75, sm_80, sm_90, cpu, found 'sm_71'"));
  EXPECT_THAT(e, HasSubstr(sku.string() + ":1:1: error: missing required key 'sm_count'"));
}

TEST_F(DeploySpecErrors, ModelDirectoryMustExist) {
  std::string e = errorOf("model: models/llama\ntarget: cpu\n");
  EXPECT_THAT(e, HasSubstr("deploy.yaml:1:8: error: model directory '" +
                           (ws_.root() / "models/llama").string() + "' does not exist"));
  EXPECT_THAT(e, HasSubstr("('models/llama' is taken relative to the spec file's folder"));
  ws_.write("models/file", "not a folder");
  EXPECT_THAT(errorOf("model: models/file\ntarget: cpu\n"),
              HasSubstr("deploy.yaml:1:8: error: model path '" +
                        (ws_.root() / "models/file").string() + "' is not a directory"));
  EXPECT_THAT(errorOf("model: \"\"\ntarget: cpu\n"),
              HasSubstr("invalid value for 'model': expected a non-empty string"));
}

TEST_F(DeploySpecErrors, BatchedTokensCoverEverySequence) {
  EXPECT_THAT(errorWith("max_num_seqs: 512\nmax_num_batched_tokens: 256\n"),
              HasSubstr("deploy.yaml:4:25: error: max_num_batched_tokens (256) must be at least "
                        "max_num_seqs (512)"));
  EXPECT_THAT(errorWith("max_num_seqs: 4096\n"),
              HasSubstr("deploy.yaml:3:15: error: max_num_batched_tokens (2048) must be at least "
                        "max_num_seqs (4096)"));
}

TEST_F(DeploySpecErrors, AllErrorsOfAFileAreReported) {
  std::string e = errorOf("model: models/qwen\ntarget: cpu\nseed: x\nmax_num_seqs: 0\n"
                          "kv_cache: {block_size: 7}\nmystery: 1\n");
  EXPECT_THAT(e, HasSubstr("deploy.yaml:3:7:"));
  EXPECT_THAT(e, HasSubstr("deploy.yaml:4:15:"));
  EXPECT_THAT(e, HasSubstr("deploy.yaml:5:24:"));
  EXPECT_THAT(e, HasSubstr("deploy.yaml:6:1:"));
  EXPECT_EQ(std::count(e.begin(), e.end(), '\n'), 3) << e;
}

TEST_F(DeploySpecErrors, DeepNestingIsRejectedBeforeParsing) {
  for (const std::string &text :
       {"seed: " + std::string(100000, '['), "seed: " + std::string(100000, '{'),
        [] {
          std::string s;
          for (int i = 0; i < 5000; ++i)
            s += "- ";
          return s + "x\n";
        }(),
        [] {
          std::string s;
          for (int i = 0; i < 200; ++i)
            s += std::string(i, ' ') + "k:\n";
          return s;
        }()}) {
    EXPECT_THAT(errorOf(text), HasSubstr("yaml nested deeper than 64 levels"));
  }
}

TEST_F(DeploySpecErrors, BracketsInsideQuotesDoNotCount) {
  std::string text =
      std::string(kMinimalSpec) + "served_model_name: \"" + std::string(500, '[') + "\"\n";
  Result<DeploySpec> spec = parseDeploySpec(text, "deploy.yaml", ws_.root());
  EXPECT_TRUE(spec.ok()) << spec.message();
}

TEST_F(DeploySpecErrors, HugeInputIsRejected) {
  std::string text = std::string(kMinimalSpec) + "# " + std::string(2 << 20, 'x') + "\n";
  EXPECT_THAT(errorOf(text),
              HasSubstr("deploy.yaml: error: file is " + std::to_string(text.size()) +
                        " bytes, more than the limit of 1048576"));
}

TEST_F(DeploySpecErrors, CyclicAliasesDoNotHang) {
  EXPECT_THAT(errorWith("kv_cache: &a {block_size: 16, inner: *a}\n"),
              HasSubstr("unknown key 'inner' in 'kv_cache'"));
}

TEST_F(DeploySpecErrors, MissingSpecFile) {
  Result<DeploySpec> spec = loadDeploySpec(ws_.root() / "nope.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.message(), (ws_.root() / "nope.yaml").string() + ": error: cannot read '" +
                                (ws_.root() / "nope.yaml").string() + "': no such file");
}

TEST_F(DeploySpecErrors, LoadNamesTheFileAsGiven) {
  std::filesystem::path file = ws_.write("spec.yaml", "model: models/qwen\ntarget: cpu\nseed: x\n");
  Result<DeploySpec> spec = loadDeploySpec(file);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.message(), HasSubstr(file.string() + ":3:7: error: invalid value for 'seed'"));
}

} // namespace
} // namespace volt::spec
