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
#include "compiler/codegen/Launches.h"
#include "tests/unit/codegen/ModelShapes.h"
#include "tests/unit/codegen/NvrtcAvailable.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <tuple>

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

// The hybrids' own kernels at Qwen3.6-35B-A3B's shapes (tensor_parallel_size
// 1 and 2): the conv over 8192 channels, the delta rule with a 128 x 128
// FP32 state column per thread and its chunked form on tensor cores (94.3
// KiB of shared memory), partial RoPE of 64 of 256 dims, the output
// gate, attention at head_dim 256 (decode on CUDA cores, prefill on tensor
// cores, two warps per 16 rows), and the MTP draft program's row copies.
TEST(KernelVariants, TheHybridsKernelsCompileForSm70WithinLimits) {
  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  KernelRegistry registry;
  TargetInfo v100;
  auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  for (int64_t tp : {1, 2}) {
    // Qwen3.6-35B-A3B: 16 query heads, 2 KV heads (each rank one at tp 2).
    testing::ModelShape shape{"Qwen3.6-35B-A3B", 2048, 16, 2, 256, 248320, 256, 8, 512, 0};
    const ProgramInfo program = testing::programFor(shape, tp);
    auto plan = [&](OpInfo op, std::vector<Variant> variants) {
      auto planned = planLaunches(op, variants, program, v100, registry);
      ASSERT_TRUE(planned.ok()) << planned.message();
    };
    using testing::arena;
    using testing::denseWeight;
    using testing::input;
    using testing::kvCache;
    OpInfo conv{plan::OpKind::CausalConv1d, "conv", {}, {}};
    plan::CausalConv1dParamsT cp;
    cp.dim = u32(8192 / tp);
    cp.kernel = 4;
    conv.params.Set(cp);
    conv.operands = {arena(0), denseWeight(0, {8192 / tp, 4}), kvCache(0), input(3),
                     input(4),  input(7), input(8), arena(1)};
    plan(conv, testing::single("causal_conv1d"));
    OpInfo rule{plan::OpKind::GatedDeltaRule, "rule", {}, {}};
    plan::GatedDeltaRuleParamsT rp;
    rp.key_heads = u32(16 / tp);
    rp.value_heads = u32(32 / tp);
    rp.key_dim = 128;
    rp.value_dim = 128;
    rp.eps = 1e-6f;
    rule.params.Set(rp);
    rule.operands = {arena(1),        arena(2),        arena(3),   denseWeight(1, {32 / tp}),
                     denseWeight(2, {32 / tp}), denseWeight(3, {128}), kvCache(1), input(3),
                     input(4),        input(7),        input(8),   arena(4)};
    plan(rule, {{256, "gated_delta_rule", {}},
                {int64_t{1} << 30, "gated_delta_rule_chunked", {{"chunk", 64}}}});
    // With the value dims split as the catalog splits them on a V100's 80
    // SMs (2 ways at tp 1, 4 at tp 2).
    const int64_t split = volt::kernels::gatedDeltaDvSplit(32 / tp, 128, 80);
    EXPECT_EQ(split, tp == 1 ? 2 : 4);
    plan(rule, {{int64_t{1} << 30,
                 "gated_delta_rule_chunked",
                 {{"chunk", 64}, {"dv_split", split}, {"max_seqs", 256}}}});
    OpInfo rope{plan::OpKind::QkNormRope, "rope", {}, {}};
    plan::QkNormRopeParamsT qp;
    qp.num_heads = u32(16 / tp);
    qp.num_kv_heads = u32(2 / tp);
    qp.head_dim = 256;
    qp.rotary_dim = 64;
    qp.rope_theta = 1e7f;
    rope.params.Set(qp);
    rope.operands = {arena(5), input(1), denseWeight(4, {256}), denseWeight(5, {256})};
    plan(rope, testing::single("qk_norm_rope"));
    OpInfo gate{plan::OpKind::SigmoidMul, "gate", {}, {}};
    plan::SigmoidMulParamsT gp;
    gp.dim = u32(16 / tp * 256);
    gate.params.Set(gp);
    gate.operands = {arena(6), arena(7), arena(6)};
    plan(gate, testing::single("sigmoid_mul"));
    OpInfo attention{plan::OpKind::Attention, "attention", {}, {}};
    plan::AttentionParamsT ap;
    ap.num_heads = u32(16 / tp);
    ap.num_kv_heads = u32(2 / tp);
    ap.head_dim = 256;
    attention.params.Set(ap);
    attention.operands = {arena(5), kvCache(2), input(2), input(3), input(4), input(5), arena(6)};
    plan(attention, testing::attentionVariants(256));
    OpInfo hidden{plan::OpKind::GatherHidden, "mtp_hidden_rows", {}, {}};
    plan::GatherHiddenParamsT hp;
    hp.dim = 2048;
    hidden.params.Set(hp);
    OperandInfo store;
    store.kind = OperandKind::Output;
    store.index = 1;
    hidden.operands = {store, input(9), arena(8)};
    plan(hidden, testing::single("gather_hidden"));
    OpInfo concat{plan::OpKind::Concat, "mtp_fc_input", {}, {}};
    plan::ConcatParamsT cc;
    cc.a_dim = 2048;
    cc.b_dim = 2048;
    concat.params.Set(cc);
    concat.operands = {arena(9), arena(10), arena(11)};
    plan(concat, testing::single("concat"));
  }
  CodegenOptions options;
  options.useCache = false;
  options.jobs = 2;
  auto built = buildKernels(registry.requests(), v100, options);
  ASSERT_TRUE(built.ok()) << built.message();
  for (const CompiledKernel &k : built->kernels) {
    EXPECT_EQ(k.resources.localBytes, 0u) << k.request.key();
    Occupancy o = occupancy(k, v100);
    EXPECT_GT(o.fraction, 0.0) << k.request.key();
    std::printf("%-18s %3u regs %6u B smem  occupancy %5.1f%% (%s)  %s\n",
                k.request.kernel.c_str(), k.resources.registers,
                k.resources.staticSharedBytes + k.request.dynamicSharedBytes, o.fraction * 100,
                o.limitedBy.c_str(), k.request.key().c_str());
  }
}

TEST(KernelVariants, DenseMoeAndNewerArchitecturesCompile) {
  // The dense (unquantized) and FP8-row MoE GEMMs, and the same kernels
  // through NVRTC 12/13 for sm_75: the templates need no CUDA header of
  // any version.
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
    // The same experts kept as E4M3 rows, gate|up and down (Qwen3-30B-A3B's
    // 2048 x 768 experts, 128 of them).
    for (const auto &[k, n, silu] : {std::tuple{2048, 1536, true}, std::tuple{768, 2048, false}}) {
      OpInfo f8 = op;
      f8.name = "fp8_experts";
      plan::MoeGroupedLinearParamsT q = p;
      q.dim = k;
      q.out_features = n;
      q.num_experts = 128;
      q.top_k = 8;
      q.epilogue = silu ? plan::Epilogue::SiluMul : plan::Epilogue::None;
      q.gather_tokens = silu;
      f8.params.Set(q);
      f8.operands[3] = testing::denseWeight(0, {128, n, k});
      f8.operands[3].fp8 = true;
      auto fp8Planned = planLaunches(f8, testing::gemmVariants("fp8_moe_gemv", "fp8_moe_gemm"),
                                     ProgramInfo{}, target, registry);
      ASSERT_TRUE(fp8Planned.ok()) << fp8Planned.message();
    }
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
    for (const CompiledKernel &k : built->kernels) {
      EXPECT_NE(k.ptx.find(".target sm_" + std::to_string(arch)), std::string::npos);
      if (arch == 70 && k.request.kernel.find("moe") != std::string::npos) {
        EXPECT_EQ(k.resources.localBytes, 0u) << k.request.key();
        std::printf("%-13s %3u regs %6u B smem  %s\n", k.request.kernel.c_str(),
                    k.resources.registers,
                    k.resources.staticSharedBytes + k.request.dynamicSharedBytes,
                    k.request.key().c_str());
      }
    }
  }
}

} // namespace
} // namespace volt::codegen
