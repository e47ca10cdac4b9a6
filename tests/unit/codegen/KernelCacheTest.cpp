//===- KernelCacheTest.cpp - the on-disk kernel cache and buildKernels ----===//
#include "compiler/codegen/KernelCache.h"
#include "compiler/codegen/BuildKernels.h"
#include "tests/unit/codegen/NvrtcAvailable.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace volt::codegen {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("volt-kernel-cache-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

TEST(KernelCache, StoresAndLoads) {
  TempDir dir;
  KernelCache cache(dir.path / "nested");
  EXPECT_FALSE(cache.load("0123").has_value());
  CachedKernel k{{1, 2, 3, 0, 255}, ".version 7.8\n"};
  ASSERT_TRUE(cache.store("0123", k).ok());
  auto back = cache.load("0123");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->cubin, k.cubin);
  EXPECT_EQ(back->ptx, k.ptx);
}

TEST(KernelCache, IgnoresDamagedEntries) {
  TempDir dir;
  KernelCache cache(dir.path);
  ASSERT_TRUE(cache.store("abcd", {{9, 9, 9, 9}, "ptx text"}).ok());
  fs::path file = dir.path / "abcd.vkernel";
  ASSERT_TRUE(fs::exists(file));
  fs::resize_file(file, fs::file_size(file) - 1);
  EXPECT_FALSE(cache.load("abcd").has_value());
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << "VKC1 but not really an entry";
  }
  EXPECT_FALSE(cache.load("abcd").has_value());
}

TEST(KernelCache, KeyCoversSourceHeadersOptionsTargetAndVersion) {
  NvrtcSource s{"a.cu", "text", {{"h.cuh", "header"}}};
  std::string base = KernelCache::key(s, {"-O3"}, "sm_70", "11.8");
  EXPECT_EQ(base.size(), 32u);
  EXPECT_EQ(base, KernelCache::key(s, {"-O3"}, "sm_70", "11.8"));
  NvrtcSource otherText = s, otherHeader = s;
  otherText.text = "text ";
  otherHeader.headers[0].second = "header2";
  EXPECT_NE(base, KernelCache::key(otherText, {"-O3"}, "sm_70", "11.8"));
  EXPECT_NE(base, KernelCache::key(otherHeader, {"-O3"}, "sm_70", "11.8"));
  EXPECT_NE(base, KernelCache::key(s, {"-O2"}, "sm_70", "11.8"));
  EXPECT_NE(base, KernelCache::key(s, {"-O3"}, "sm_75", "11.8"));
  EXPECT_NE(base, KernelCache::key(s, {"-O3"}, "sm_70", "12.4"));
  // Field boundaries count: "ab"+"c" differs from "a"+"bc".
  EXPECT_NE(KernelCache::key(s, {"ab", "c"}, "sm_70", "11.8"),
            KernelCache::key(s, {"a", "bc"}, "sm_70", "11.8"));
}

TEST(KernelCache, DefaultFolderFollowsTheEnvironment) {
  const char *saved = std::getenv(kKernelCacheEnv);
  std::string savedValue = saved ? saved : "";
  ::setenv(kKernelCacheEnv, "/tmp/volt-cache-here", 1);
  EXPECT_EQ(KernelCache::defaultDir(), fs::path("/tmp/volt-cache-here"));
  ::unsetenv(kKernelCacheEnv);
  ::setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(KernelCache::defaultDir(), fs::path("/tmp/xdg/volt/kernels"));
  ::unsetenv("XDG_CACHE_HOME");
  if (const char *home = std::getenv("HOME")) {
    EXPECT_EQ(KernelCache::defaultDir(), fs::path(home) / ".cache/volt/kernels");
  }
  if (saved)
    ::setenv(kKernelCacheEnv, savedValue.c_str(), 1);
}

TEST(BuildKernels, SecondBuildComesFromTheCacheWithoutNvrtc) {
  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  TempDir dir;
  CodegenOptions options;
  options.cacheDir = dir.path;
  KernelRequest a{"silu_mul", {}, 256, 0}, b{"rms_norm", {}, 256, 0};
  a.set("dim", 768);
  b.set("dim", 2048).set("in_f32", 0);
  auto first = buildKernels({a, b}, TargetInfo{}, options);
  ASSERT_TRUE(first.ok()) << first.message();
  EXPECT_EQ(first->compiled, 2u);
  EXPECT_EQ(first->cached, 0u);
  EXPECT_GT(first->nvrtcSeconds, 0.0);
  auto second = buildKernels({a, b}, TargetInfo{}, options);
  ASSERT_TRUE(second.ok()) << second.message();
  EXPECT_EQ(second->compiled, 0u);
  EXPECT_EQ(second->cached, 2u);
  EXPECT_EQ(second->nvrtcSeconds, 0.0);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(first->kernels[i].cubin, second->kernels[i].cubin);
    EXPECT_EQ(first->kernels[i].ptx, second->kernels[i].ptx);
    EXPECT_EQ(first->kernels[i].resources.registers, second->kernels[i].resources.registers);
    EXPECT_TRUE(second->kernels[i].fromCache);
  }
  EXPECT_NE(first->kernels[0].ptx.find(".target sm_70"), std::string::npos);
  // Offline (no NVRTC loaded), the cache serves the same bytes...
  CodegenOptions offline = options;
  offline.offlineNvrtcVersion = first->nvrtcVersion;
  auto fromCache = buildKernels({a, b}, TargetInfo{}, offline);
  ASSERT_TRUE(fromCache.ok()) << fromCache.message();
  EXPECT_EQ(fromCache->cached, 2u);
  EXPECT_EQ(fromCache->kernels[0].cubin, first->kernels[0].cubin);
  // ... and a kernel it lacks is an error naming it and the cache.
  KernelRequest absent = a;
  absent.set("dim", 4096);
  auto missing = buildKernels({absent}, TargetInfo{}, offline);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("kernel silu_mul(dim=4096, threads=256) is not in the kernel "
                                   "cache " +
                                   dir.path.string()),
            std::string::npos)
      << missing.message();

  // A changed constant is a different kernel: one compile, one hit.
  a.set("dim", 1536);
  auto third = buildKernels({a, b}, TargetInfo{}, options);
  ASSERT_TRUE(third.ok()) << third.message();
  EXPECT_EQ(third->compiled, 1u);
  EXPECT_EQ(third->cached, 1u);
}

TEST(BuildKernels, TemplateErrorsNameTheKernel) {
  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  CodegenOptions options;
  options.useCache = false;
  KernelRequest missing{"silu_mul", {}, 256, 0}; // no VOLT_DIM
  auto built = buildKernels({missing}, TargetInfo{}, options);
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.message().find("kernel silu_mul(threads=256): "), std::string::npos)
      << built.message();
  EXPECT_NE(built.message().find("VOLT_DIM"), std::string::npos) << built.message();
}

CompiledKernel fakeKernel(uint32_t registers, uint32_t local, uint32_t shared, uint32_t threads) {
  CompiledKernel k;
  k.request = {"fake", {}, threads, 0};
  k.resources.name = "fake";
  k.resources.registers = registers;
  k.resources.localBytes = local;
  k.resources.staticSharedBytes = shared;
  return k;
}

TEST(Resources, SpillsAndOversizedBlocksFailNamingTheKernel) {
  TargetInfo v100;
  EXPECT_TRUE(checkResources(fakeKernel(64, 0, 0, 256), v100).ok());
  Status spill = checkResources(fakeKernel(255, 24, 0, 128), v100);
  ASSERT_FALSE(spill.ok());
  EXPECT_EQ(spill.message().rfind("kernel fake(threads=128) uses 24 bytes of local memory per "
                                  "thread on sm_70",
                                  0),
            0u)
      << spill.message();
  Status shared = checkResources(fakeKernel(32, 0, 49152 + 4, 128), v100);
  ASSERT_FALSE(shared.ok());
  Status registers = checkResources(fakeKernel(255, 0, 0, 1024), v100);
  ASSERT_FALSE(registers.ok());
  EXPECT_NE(registers.message().find("cannot launch on sm_70"), std::string::npos)
      << registers.message();
}

TEST(Resources, Occupancy) {
  TargetInfo v100;
  // 64 registers x 256 threads = 16K registers: 4 blocks, all 64 warps.
  Occupancy full = occupancy(fakeKernel(64, 0, 0, 256), v100);
  EXPECT_EQ(full.blocksPerSm, 4u);
  EXPECT_DOUBLE_EQ(full.fraction, 0.5);
  EXPECT_EQ(full.limitedBy, "registers");
  // 168 registers x 256 threads: one block (8 of 64 warps).
  Occupancy gemm = occupancy(fakeKernel(168, 0, 0, 256), v100);
  EXPECT_EQ(gemm.blocksPerSm, 1u);
  EXPECT_DOUBLE_EQ(gemm.fraction, 0.125);
  // Shared memory bound: 40 KiB per block of 32 registers.
  Occupancy shared = occupancy(fakeKernel(32, 0, 40960, 128), v100);
  EXPECT_EQ(shared.blocksPerSm, 2u);
  EXPECT_EQ(shared.limitedBy, "shared memory");
}

} // namespace
} // namespace volt::codegen
