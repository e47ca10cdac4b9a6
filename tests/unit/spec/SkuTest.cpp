// The built-in SKU files: they all load, their numbers are plausible and
// sourced, and broken SKU files get precise errors.
#include "compiler/spec/Sku.h"
#include "tests/unit/spec/TestSupport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace volt::spec {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kKiB = 1024, kMiB = 1024 * kKiB, kGiB = 1024 * kMiB;

Sku builtin(const std::string &name) {
  Result<Sku> sku = loadSku(name, "/nonexistent");
  EXPECT_TRUE(sku.ok()) << sku.message();
  return sku.ok() ? *sku : Sku{};
}

TEST(Sku, TheBuiltinSet) {
  EXPECT_EQ(builtinSkuNames(),
            (std::vector<std::string>{"a100-40gb", "a100-80gb", "cpu", "h100-sxm-80gb",
                                      "h200-141gb", "t4", "v100-pcie-16gb", "v100-pcie-32gb",
                                      "v100-sxm2-16gb", "v100-sxm2-32gb", "v100s-pcie-32gb"}));
}

TEST(Sku, EveryBuiltinLoadsAndIsPlausible) {
  for (const std::string &name : builtinSkuNames()) {
    SCOPED_TRACE(name);
    Sku s = builtin(name);
    EXPECT_EQ(s.name, name);
    EXPECT_FALSE(s.description.empty());
    EXPECT_LE(s.memoryBandwidthPracticalGbps, s.memoryBandwidthSpecGbps);
    EXPECT_GT(s.fp16TensorTflops, 0);
    EXPECT_LT(s.memoryReserve.cudaContextBytes + s.memoryReserve.ncclBytes, s.memoryBytes / 8);
    if (s.isCpu()) {
      EXPECT_EQ(s.computeCapability(), 0);
      EXPECT_TRUE(s.nominal);
      EXPECT_EQ(s.interconnect.kind, InterconnectKind::Host);
      EXPECT_EQ(s.memoryReserve.cudaContextBytes, 0u);
      continue;
    }
    EXPECT_FALSE(s.nominal);
    EXPECT_GE(s.computeCapability(), 70);
    EXPECT_GE(s.smCount, 40);
    EXPECT_GE(s.memoryBytes, 14 * kGiB);
    EXPECT_LE(s.memoryBytes, 141 * kGiB);
    EXPECT_EQ(s.sharedMemoryPerBlockBytes, 48 * kKiB);
    EXPECT_GE(s.sharedMemoryPerBlockOptinBytes, 64 * kKiB);
    EXPECT_LE(s.sharedMemoryPerBlockOptinBytes, s.sharedMemoryPerSmBytes);
    EXPECT_EQ(s.registersPerSm, 65536);
    EXPECT_EQ(s.maxRegistersPerThread, 255);
    EXPECT_GE(s.interconnect.pcieGen, 3);
    EXPECT_EQ(s.interconnect.pcieWidth, 16);
    EXPECT_GE(s.memoryReserve.cudaContextBytes, 256 * kMiB);
    EXPECT_GT(s.memoryReserve.ncclBytes, 0u);
    EXPECT_FALSE(s.dtypes.fp4) << "no SKU here has FP4 tensor cores";
  }
}

TEST(Sku, Volta) {
  for (const char *name : {"v100-pcie-16gb", "v100-pcie-32gb", "v100-sxm2-16gb", "v100-sxm2-32gb",
                           "v100s-pcie-32gb"}) {
    SCOPED_TRACE(name);
    Sku s = builtin(name);
    EXPECT_EQ(s.arch, Arch::Sm70);
    EXPECT_EQ(s.computeCapability(), 70);
    EXPECT_EQ(s.smCount, 80);
    EXPECT_FALSE(s.dtypes.bf16);
    EXPECT_FALSE(s.dtypes.fp8);
    EXPECT_EQ(s.sharedMemoryPerBlockOptinBytes, 96 * kKiB);
    EXPECT_EQ(s.sharedMemoryPerSmBytes, 96 * kKiB);
    EXPECT_EQ(s.l2CacheBytes, 6 * kMiB);
    EXPECT_EQ(s.maxThreadsPerSm, 2048);
    EXPECT_EQ(s.interconnect.pcieGen, 3);
  }
  EXPECT_EQ(builtin("v100-pcie-16gb").memoryBytes, 16945512448u);
  EXPECT_EQ(builtin("v100-sxm2-32gb").memoryBytes, 34089730048u);
  EXPECT_EQ(builtin("v100-sxm2-32gb").interconnect.kind, InterconnectKind::Nvlink);
  EXPECT_EQ(builtin("v100-sxm2-32gb").interconnect.bandwidthGbps, 300);
  EXPECT_EQ(builtin("v100-sxm2-32gb").fp16TensorTflops, 125);
  EXPECT_EQ(builtin("v100s-pcie-32gb").memoryBandwidthSpecGbps, 1134);

  Sku pcie = builtin("v100-pcie-16gb");
  EXPECT_EQ(pcie.interconnect.kind, InterconnectKind::Pcie);
  EXPECT_EQ(pcie.fp16TensorTflops, 112);
  EXPECT_EQ(pcie.interconnect.practicalBandwidthGbps, 12.5);
  ASSERT_EQ(pcie.interconnect.allReduceLatencyUs.size(), 3u);
  EXPECT_EQ(pcie.interconnect.allReduceLatencyUs[0].bytes, 4096u);
  EXPECT_EQ(pcie.interconnect.allReduceLatencyUs[0].us, 12);
  EXPECT_EQ(pcie.interconnect.allReduceLatencyUs[2].bytes, 65536u);
  EXPECT_EQ(pcie.interconnect.allReduceLatencyUs[2].us, 40);
}

TEST(Sku, NewerGenerations) {
  Sku t4 = builtin("t4");
  EXPECT_EQ(t4.computeCapability(), 75);
  EXPECT_FALSE(t4.dtypes.bf16) << "Turing has no bf16";
  EXPECT_EQ(t4.smCount, 40);
  EXPECT_EQ(t4.maxThreadsPerSm, 1024);
  Sku a100 = builtin("a100-80gb");
  EXPECT_EQ(a100.computeCapability(), 80);
  EXPECT_TRUE(a100.dtypes.bf16);
  EXPECT_FALSE(a100.dtypes.fp8);
  EXPECT_EQ(a100.smCount, 108);
  Sku h100 = builtin("h100-sxm-80gb");
  EXPECT_EQ(h100.computeCapability(), 90);
  EXPECT_TRUE(h100.dtypes.fp8);
  EXPECT_EQ(h100.smCount, 132);
  EXPECT_EQ(h100.sharedMemoryPerBlockOptinBytes, 227 * kKiB);
  Sku h200 = builtin("h200-141gb");
  EXPECT_GT(h200.memoryBytes, 2 * h100.memoryBytes * 8 / 10);
  EXPECT_GT(h200.memoryBandwidthSpecGbps, h100.memoryBandwidthSpecGbps);
}

TEST(Sku, EveryBuiltinNumberHasASource) {
  const std::vector<std::string> keys = {"arch",
                                         "sm_count",
                                         "memory_bytes",
                                         "memory_bandwidth_spec_gbps",
                                         "memory_bandwidth_practical_gbps",
                                         "fp16_tensor_tflops",
                                         "shared_memory_per_sm_bytes",
                                         "shared_memory_per_block_bytes",
                                         "shared_memory_per_block_optin_bytes",
                                         "l2_cache_bytes",
                                         "registers_per_sm",
                                         "max_registers_per_thread",
                                         "max_threads_per_sm",
                                         "dtypes.bf16",
                                         "dtypes.fp8",
                                         "dtypes.fp4",
                                         "interconnect.kind",
                                         "interconnect.pcie_gen",
                                         "interconnect.pcie_width",
                                         "interconnect.bandwidth_gbps",
                                         "interconnect.all_reduce_latency_us",
                                         "memory_reserve.cuda_context_bytes",
                                         "memory_reserve.nccl_bytes"};
  for (const std::string &name : builtinSkuNames()) {
    Sku s = builtin(name);
    for (const std::string &key : keys)
      EXPECT_TRUE(s.sources.count(key)) << name << " gives no source for " << key;
    EXPECT_EQ(s.sources.count("interconnect.practical_bandwidth_gbps") == 1,
              s.interconnect.practicalBandwidthGbps.has_value())
        << name;
    EXPECT_THAT(
        s.sources["memory_bytes"],
        ::testing::AnyOf(HasSubstr("driver-reported"), HasSubstr("estimate"), HasSubstr("nominal")))
        << name << ": memory_bytes must say what kind of number it is";
  }
}

TEST(Sku, PathTargetsLoadFiles) {
  std::filesystem::path specs = std::filesystem::path(VOLT_SOURCE_DIR) / "specs";
  Result<Sku> fromFile = loadSku("v100-sxm2-32gb.yaml", specs);
  ASSERT_TRUE(fromFile.ok()) << fromFile.message();
  EXPECT_EQ(fromFile->memoryBytes, builtin("v100-sxm2-32gb").memoryBytes);
  Result<Sku> custom = loadSku("skus/my-v100.yaml", testing::inputsDir());
  ASSERT_TRUE(custom.ok()) << custom.message();
  EXPECT_EQ(custom->name, "my-v100-pcie-16gb");
  EXPECT_TRUE(isSkuPath("./t4"));
  EXPECT_TRUE(isSkuPath("t4.yaml"));
  EXPECT_FALSE(isSkuPath("t4"));
}

TEST(Sku, UnknownNameSuggests) {
  Result<Sku> s = loadSku("h100-sxm-80g", ".");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("unknown SKU 'h100-sxm-80g'; did you mean 'h100-sxm-80gb'?"));
  Result<Sku> far = loadSku("tpu-v5", ".");
  ASSERT_FALSE(far.ok());
  EXPECT_THAT(far.message(), HasSubstr("unknown SKU 'tpu-v5'; built-in SKUs: a100-40gb"));
  EXPECT_THAT(s.message(), HasSubstr("built-in SKUs: a100-40gb, a100-80gb, cpu"));
}

/// The built-in v100-pcie-16gb text with `from` replaced by `to`.
std::string v100With(const std::string &from, const std::string &to) {
  std::string text(*builtinSkuText("v100-pcie-16gb"));
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

std::string skuError(const std::string &text) {
  Result<Sku> s = parseSku(text, "sku.yaml");
  EXPECT_FALSE(s.ok());
  return s.ok() ? "" : s.message();
}

TEST(Sku, MissingAndInvalidFields) {
  EXPECT_THAT(skuError(v100With("sm_count: 80\n", "")),
              HasSubstr("sku.yaml:4:1: error: missing required key 'sm_count'"));
  EXPECT_THAT(skuError(v100With("sm_count: 80", "sm_count: eighty")),
              HasSubstr("sku.yaml:7:11: error: invalid value for 'sm_count': expected an integer "
                        "from 0 to 1024, found 'eighty'"));
  EXPECT_THAT(skuError(v100With("sm_count: 80", "sm_count: 0")),
              HasSubstr("sku.yaml:7:11: error: invalid value for 'sm_count': a GPU SKU (arch "
                        "sm_70) needs a positive value, found 0"));
  EXPECT_THAT(skuError(v100With("arch: sm_70", "arch: sm70")),
              HasSubstr("expected one of sm_70, sm_75, sm_80, sm_90, cpu, found 'sm70'; did you "
                        "mean 'sm_70'?"));
  EXPECT_THAT(skuError(v100With("  pcie_width: 16", "  pcie_width: 12")),
              HasSubstr("invalid value for 'interconnect.pcie_width': expected one of 0, 1, 2, 4, "
                        "8, 16, found 12"));
  EXPECT_THAT(skuError(v100With("  dtypes.fp8:", "  dtypes.fp9:")),
              HasSubstr("unknown key 'dtypes.fp9' in 'sources'; did you mean 'dtypes.fp8'?"));
  EXPECT_THAT(skuError(v100With("l2_cache_bytes:", "l2_cache_byte:")),
              HasSubstr("unknown key 'l2_cache_byte'; did you mean 'l2_cache_bytes'?"));
}

TEST(Sku, ClaimsTheHardwareCannotBack) {
  EXPECT_THAT(skuError(v100With("bf16: false", "bf16: true")),
              HasSubstr("invalid value for 'dtypes.bf16': sm_70 has no bf16 arithmetic"));
  EXPECT_THAT(skuError(v100With("shared_memory_per_block_bytes: 49152",
                                "shared_memory_per_block_bytes: 131072")),
              HasSubstr("invalid value for 'shared_memory_per_block_bytes': expected at most "
                        "shared_memory_per_block_optin_bytes (98304), found 131072"));
  EXPECT_THAT(skuError(v100With("memory_bandwidth_practical_gbps: 800",
                                "memory_bandwidth_practical_gbps: 950")),
              HasSubstr("expected at most memory_bandwidth_spec_gbps (900), found 950"));
  EXPECT_THAT(skuError(v100With("kind: pcie", "kind: host")),
              HasSubstr("'host' is for the cpu backend"));
  EXPECT_THAT(
      skuError(v100With("cuda_context_bytes: 536870912", "cuda_context_bytes: 16945512448")),
      HasSubstr("leave nothing of memory_bytes"));
}

TEST(Sku, AllReduceMeasurements) {
  EXPECT_THAT(skuError(v100With("{bytes: 32768, us: 25}", "{bytes: 2048, us: 25}")),
              HasSubstr("sku.yaml:28:7: error: invalid value for "
                        "'interconnect.all_reduce_latency_us': measurements must be in increasing "
                        "order of bytes, found 2048 after 4096"));
  EXPECT_THAT(skuError(v100With("{bytes: 32768, us: 25}", "{bytes: 32768, ms: 25}")),
              HasSubstr("unknown key 'ms'; did you mean 'us'?"));
  EXPECT_THAT(skuError(v100With("{bytes: 32768, us: 25}", "{bytes: 32768, us: -1}")),
              HasSubstr("invalid value for 'us': expected a number greater than 0"));
  EXPECT_THAT(skuError(v100With("    - {bytes: 4096, us: 12}\n", "    - 12\n")),
              HasSubstr("sku.yaml:27:7: error: expected a mapping of keys to values (an all-reduce "
                        "measurement {bytes, us}), found '12'"));
}

TEST(Sku, CpuRules) {
  std::string cpu(*builtinSkuText("cpu"));
  std::string notNominal = cpu;
  notNominal.replace(notNominal.find("\nnominal: true"), 14, "\nnominal: false");
  EXPECT_THAT(skuError(notNominal), HasSubstr("expected 'nominal: true'"));
  std::string pcie = cpu;
  pcie.replace(pcie.find("  kind: host"), 12, "  kind: pcie");
  EXPECT_THAT(skuError(pcie), HasSubstr("expected host, found pcie"));
}

} // namespace
} // namespace volt::spec
