//===- GpuMain.cpp - the GPU kernel tests' main, with --prepare -----------===//
//
// `gpu_kernels_test --prepare DIR` builds every kernel the GPU tests and
// benchmarks run into the kernel cache DIR (with NVRTC 11.8, on the
// development machine) and records the NVRTC version in DIR/nvrtc-version;
// on the GPU machine VOLT_GPU_KERNELS=DIR reads them from there. Without
// --prepare it runs the tests.
//
//===----------------------------------------------------------------------===//
#include "tests/gpu/GpuCases.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>

namespace {

int prepare(const char *dir) {
  using namespace volt;
  gpu::KernelRegistry registry;
  auto planned = gpu::planCases(gpu::gpuCases(), registry);
  if (!planned) {
    std::fprintf(stderr, "prepare: %s\n", planned.message().c_str());
    return 1;
  }
  codegen::CodegenOptions options;
  options.cacheDir = dir;
  options.jobs = 2;
  options.log = [](const std::string &m) { std::fprintf(stderr, "%s\n", m.c_str()); };
  auto built = codegen::buildKernels(registry.requests(), codegen::TargetInfo{}, options);
  if (!built) {
    std::fprintf(stderr, "prepare: %s\n", built.message().c_str());
    return 1;
  }
  std::ofstream(std::string(dir) + "/nvrtc-version") << built->nvrtcVersion << "\n";
  std::printf("%zu kernels in %s (%zu compiled, %zu cached, NVRTC %s)\n", built->kernels.size(),
              dir, built->compiled, built->cached, built->nvrtcVersion.c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--prepare") == 0)
      return prepare(argv[i + 1]);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
