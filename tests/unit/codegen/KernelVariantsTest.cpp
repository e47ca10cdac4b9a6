//===- KernelVariantsTest.cpp - every kernel of real models compiles for sm_70 ===//
//
// The launches of Qwen3-30B-A3B (tensor_parallel_size 1 and 2) and a dense
// 32B model (2) are planned with the variants a V100 gets, and every distinct
// kernel is compiled by NVRTC for sm_70 (cubin) and compute_70 (PTX), with
// its resources read from the cubin and checked: no local memory (spills),
// launchable block sizes and shared memory. Skipped, saying why, where no
// NVRTC targets sm_70.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/BuildKernels.h"
#include "tests/unit/codegen/ModelShapes.h"
#include "tests/unit/codegen/NvrtcAvailable.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <set>

namespace volt::codegen {
namespace {

using testing::dense32bShape;
using testing::modelOps;
using testing::programFor;
using testing::qwen3MoeShape;

TEST(KernelVariants, EveryKernelOfTwoModelsCompilesForSm70WithinLimits) {
  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  KernelRegistry registry;
  TargetInfo v100;
  size_t launches = 0;
  for (const auto &[model, tp] :
       {std::pair{qwen3MoeShape(), int64_t{1}}, std::pair{qwen3MoeShape(), int64_t{2}},
        std::pair{dense32bShape(), int64_t{2}}})
    for (const auto &op : modelOps(model, tp)) {
      auto planned = planLaunches(op.op, op.variants, programFor(model, tp), v100, registry);
      ASSERT_TRUE(planned.ok()) << planned.message();
      launches += planned->size();
    }
  CodegenOptions options;
  options.useCache = false;
  options.jobs = 2;
  auto built = buildKernels(registry.requests(), v100, options);
  ASSERT_TRUE(built.ok()) << built.message();
  std::set<std::string> templates;
  for (const CompiledKernel &k : built->kernels) {
    templates.insert(k.request.kernel);
    EXPECT_EQ(k.resources.localBytes, 0u) << k.request.key();
    EXPECT_FALSE(k.cubin.empty());
    EXPECT_NE(k.ptx.find(".target sm_70"), std::string::npos) << k.request.key();
    Occupancy o = occupancy(k, v100);
    std::printf("%-10s %3u regs %6u B smem  occupancy %5.1f%% (%s)  %s\n", k.request.kernel.c_str(),
                k.resources.registers, k.resources.staticSharedBytes + k.request.dynamicSharedBytes,
                o.fraction * 100, o.limitedBy.c_str(), k.request.key().c_str());
  }
  std::printf("%zu launches, %zu kernels from %zu templates, NVRTC %s, %.1f s\n", launches,
              built->kernels.size(), templates.size(), built->nvrtcVersion.c_str(),
              built->nvrtcSeconds);
  // Every template but the dense-MoE ones is used by these two models.
  EXPECT_GE(templates.size(), 17u);
}

TEST(KernelVariants, DenseMoeAndNewerArchitecturesCompile) {
  // The dense (unquantized) MoE GEMMs, and the same kernels through NVRTC
  // 12/13 for sm_75: the templates need no CUDA header of any version.
  for (int arch : {70, 75}) {
    std::string why;
    auto nvrtc = testing::nvrtcFor(arch, why);
    if (!nvrtc) {
      std::printf("no NVRTC for sm_%d: %s\n", arch, why.c_str());
      continue;
    }
    KernelRegistry registry;
    TargetInfo target;
    target.smVersion = arch;
    target.sharedMemoryPerBlockOptinBytes = arch == 75 ? 65536 : 98304;
    target.sharedMemoryPerSmBytes = target.sharedMemoryPerBlockOptinBytes;
    target.maxThreadsPerSm = arch == 75 ? 1024 : 2048;
    OpInfo op;
    op.kind = plan::OpKind::MoeGroupedLinear;
    op.name = "dense_experts";
    plan::MoeGroupedLinearParamsT p;
    p.dim = 1024;
    p.out_features = 1024;
    p.num_experts = 60;
    p.top_k = 4;
    p.epilogue = plan::Epilogue::SiluMul;
    p.gather_tokens = true;
    op.params.Set(p);
    op.operands = {testing::arena(0), testing::arena(1), testing::arena(2),
                   testing::denseWeight(0, {60, 1024, 1024}), testing::arena(3)};
    auto planned = planLaunches(op, testing::gemmVariants("dense_moe_gemv", "dense_moe_gemm"),
                                ProgramInfo{}, target, registry);
    ASSERT_TRUE(planned.ok()) << planned.message();
    for (const auto &extra : modelOps(qwen3MoeShape(), 2)) {
      if (extra.op.kind != plan::OpKind::QLinear && extra.op.kind != plan::OpKind::Attention)
        continue;
      auto more =
          planLaunches(extra.op, extra.variants, programFor(qwen3MoeShape(), 2), target, registry);
      ASSERT_TRUE(more.ok()) << more.message();
    }
    CodegenOptions options;
    options.useCache = false;
    options.jobs = 2;
    auto built = buildKernels(registry.requests(), target, options);
    ASSERT_TRUE(built.ok()) << "sm_" << arch << ": " << built.message();
    for (const CompiledKernel &k : built->kernels)
      EXPECT_NE(k.ptx.find(".target sm_" + std::to_string(arch)), std::string::npos);
  }
}

} // namespace
} // namespace volt::codegen
