//===- GpuCases.h - the ops and token counts the GPU tests run --*- C++ -*-===//
//
// One list serves the kernel tests, the benchmarks and `--prepare` (which
// builds every kernel they need where NVRTC 11.8 is installed): the ops of
// Qwen3-30B-A3B (tensor_parallel_size 1) and of a dense 32B model (2),
// with the V100 variants, each at the token counts that select each variant,
// EmaScan, and the Gated DeltaNet mixer's ops and the attention output gate
// at Qwen3.6-35B-A3B's shapes; between them every step-program kernel of the registry
// (compiler/codegen/Kernels.def).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tests/gpu/GpuHarness.h"
#include "tests/unit/codegen/ModelShapes.h"

#include <string>
#include <vector>

namespace volt::gpu {

struct GpuCase {
  codegen::testing::ModelOp op;
  codegen::ProgramInfo program;
  /// Token counts to run (each picks the variant that serves it).
  std::vector<int> tokens;
};

inline std::vector<GpuCase> gpuCases() {
  using namespace codegen::testing;
  std::vector<GpuCase> cases;
  for (const auto &[model, tp] :
       {std::pair{qwen3MoeShape(), int64_t{1}}, std::pair{dense32bShape(), int64_t{2}}}) {
    codegen::ProgramInfo program = programFor(model, tp);
    for (ModelOp &op : modelOps(model, tp)) {
      std::vector<int> tokens = {1, 8, 40, 512};
      if (op.op.kind == plan::OpKind::Attention)
        // A lone long decode, decodes split, a small mixed step
        // (paged_attention); prefill chunks mixed with decodes
        // (paged_attention_tiled, above max_num_seqs = 256).
        tokens = {1, 4, 100, 300, 2048};
      else if (op.op.kind == plan::OpKind::Embedding)
        tokens = {4, 300};
      else if (op.op.name.ends_with("lm_head") || op.op.kind == plan::OpKind::GatherRows)
        tokens = {1, 8};
      cases.push_back({std::move(op), program, tokens});
    }
  }
  // The experts of an unquantized MoE checkpoint (dense FP16 weights), at
  // Qwen3-30B-A3B's shapes.
  {
    ModelShape m = qwen3MoeShape();
    codegen::ProgramInfo program = programFor(m, 1);
    for (ModelOp &op : modelOps(m, 1)) {
      if (op.op.kind != plan::OpKind::MoeGroupedQLinear)
        continue;
      const plan::MoeGroupedQLinearParamsT q = *op.op.params.AsMoeGroupedQLinearParams();
      plan::MoeGroupedLinearParamsT p;
      p.dim = q.dim;
      p.out_features = q.out_features;
      p.num_experts = q.num_experts;
      p.top_k = q.top_k;
      p.gather_tokens = q.gather_tokens;
      p.epilogue = q.epilogue;
      op.op.kind = plan::OpKind::MoeGroupedLinear;
      op.op.name += "_dense";
      op.op.params.Set(p);
      op.op.operands[3] = denseWeight(op.op.operands[3].index, op.op.operands[3].shape);
      for (codegen::Variant &v : op.variants)
        v.kernel = v.kernel.ends_with("_gemv") ? "dense_moe_gemv" : "dense_moe_gemm";
      // The same experts kept as FP8 rows (an FP8-dynamic export's).
      ModelOp f8 = op;
      f8.op.name.replace(f8.op.name.size() - 6, 6, "_fp8");
      f8.op.operands[3].fp8 = true;
      for (codegen::Variant &v : f8.variants)
        v.kernel = v.kernel.ends_with("_gemv") ? "fp8_moe_gemv" : "fp8_moe_gemm";
      cases.push_back({std::move(op), program, {1, 8, 40, 512}});
      cases.push_back({std::move(f8), program, {1, 8, 40, 512}});
    }
  }
  // Gated attention at Qwen3.6-35B-A3B's shapes (16 / 2 heads of 256, TP 1):
  // decodes on paged_attention, prefill chunks on paged_attention_tiled
  // with two warps per 16 rows.
  {
    ModelShape m{"Qwen3.6-35B-A3B", 2048, 16, 2, 256, 248320, 256, 8, 512, 0};
    codegen::ProgramInfo program = programFor(m, 1);
    for (ModelOp &op : modelOps(m, 1))
      if (op.op.kind == plan::OpKind::Attention)
        cases.push_back({std::move(op), program, {1, 4, 100, 300, 2048}});
  }
  // An FP8 linear kept as E4M3 with row scales: Qwen3.6-35B-A3B's
  // linear_attn.in_proj_qkv (2,048 -> 8,192), FP8 in NVIDIA's NVFP4 export.
  {
    ModelOp qkv;
    qkv.op.kind = plan::OpKind::Linear;
    qkv.op.name = "linear_attn_in_proj_qkv_fp8";
    codegen::OperandInfo w = denseWeight(0, {8192, 2048});
    w.fp8 = true;
    qkv.op.operands = {arena(0), w, arena(1)};
    plan::LinearParamsT p;
    p.dim = 2048;
    p.out_features = 8192;
    qkv.op.params.Set(p);
    qkv.variants = gemmVariants("fp8_gemv", "fp8_gemm");
    // The same projection held in FP16 (what FP8 weights cost before they
    // were kept as E4M3): the benchmark compares the two in one run.
    ModelOp fp16 = qkv;
    fp16.op.name = "linear_attn_in_proj_qkv_fp16";
    fp16.op.operands[1].fp8 = false;
    fp16.variants = gemmVariants("dense_gemv", "dense_gemm");
    cases.push_back({std::move(qkv), codegen::ProgramInfo{}, {1, 8, 40, 512}});
    cases.push_back({std::move(fp16), codegen::ProgramInfo{}, {1, 8}});
  }
  // EmaScan at Qwen3-30B-A3B's hidden size: no published family has it,
  // but its kernel is in the registry (the recurrent-state test model).
  ModelOp ema;
  ema.op.kind = plan::OpKind::EmaScan;
  ema.op.name = "ema_scan";
  ema.op.operands = {arena(0),
                     denseWeight(0, {2048}),
                     [] {
                       codegen::OperandInfo o;
                       o.kind = codegen::OperandKind::Cache;
                       return o;
                     }(),
                     input(3),
                     input(4),
                     input(7),
                     input(8),
                     arena(1)};
  plan::EmaScanParamsT params;
  params.dim = 2048;
  ema.op.params.Set(params);
  ema.variants = single("ema_scan");
  cases.push_back({std::move(ema), codegen::ProgramInfo{}, {1, 8, 300}});

  // The Gated DeltaNet mixer at Qwen3.6-35B-A3B's shapes (tensor_parallel_size
  // 1: 16 key heads, 32 value heads, dk = dv = 128, conv kernel 4), and the
  // gated attention's output gate (16 heads x head_dim 256).
  auto cache = [] {
    codegen::OperandInfo o;
    o.kind = codegen::OperandKind::Cache;
    return o;
  };
  auto f32Weight = [](uint32_t index, int64_t n) {
    codegen::OperandInfo o = denseWeight(index, {n});
    o.f32 = true;
    return o;
  };
  constexpr int64_t kHk = 16, kHv = 32, kDk = 128, kDv = 128;
  constexpr int64_t kConvDim = 2 * kHk * kDk + kHv * kDv;
  ModelOp conv;
  conv.op.kind = plan::OpKind::CausalConv1d;
  conv.op.name = "linear_attn_conv1d";
  conv.op.operands = {arena(0), denseWeight(0, {kConvDim, 4}), cache(), input(3), input(4),
                      input(7), input(8), arena(1)};
  plan::CausalConv1dParamsT convParams;
  convParams.dim = kConvDim;
  convParams.kernel = 4;
  conv.op.params.Set(convParams);
  conv.variants = single("causal_conv1d");
  cases.push_back({std::move(conv), codegen::ProgramInfo{}, {1, 8, 300}});

  ModelOp gdr;
  gdr.op.kind = plan::OpKind::GatedDeltaRule;
  gdr.op.name = "linear_attn_gated_delta_rule";
  gdr.op.operands = {arena(0),        arena(1),        arena(2), f32Weight(0, kHv),
                     f32Weight(1, kHv), denseWeight(2, {kDv}), cache(),  input(3),
                     input(4),        input(7),        input(8), arena(3)};
  plan::GatedDeltaRuleParamsT gdrParams;
  gdrParams.key_heads = kHk;
  gdrParams.value_heads = kHv;
  gdrParams.key_dim = kDk;
  gdrParams.value_dim = kDv;
  gdrParams.eps = 1e-6f;
  gdr.op.params.Set(gdrParams);
  gdr.variants = single("gated_delta_rule");
  ModelOp chunked = gdr;
  chunked.op.name = "linear_attn_gated_delta_rule_chunked";
  chunked.variants = {{int64_t{1} << 30, "gated_delta_rule_chunked", {{"chunk", 64}}}};
  cases.push_back({std::move(gdr), codegen::ProgramInfo{}, {1, 8, 300}});
  // Its chunked form (prefill steps): the same op, 64 tokens at a time on
  // tensor cores.
  ModelOp split = chunked;
  split.op.name = "linear_attn_gated_delta_rule_chunked_dv_split";
  split.variants = {{int64_t{1} << 30,
                     "gated_delta_rule_chunked",
                     {{"chunk", 64}, {"dv_split", 4}, {"max_seqs", 64}}}};
  cases.push_back({std::move(chunked), codegen::ProgramInfo{}, {8, 300, 1000}});
  // And with each head's value dims over four blocks (the catalog's choice
  // where the heads alone leave most SMs idle): the last of a head's blocks
  // norms its rows.
  cases.push_back({std::move(split), codegen::ProgramInfo{}, {8, 300, 1000}});

  ModelOp gate;
  gate.op.kind = plan::OpKind::SigmoidMul;
  gate.op.name = "self_attn_output_gate";
  gate.op.operands = {arena(0), arena(1), arena(2)};
  plan::SigmoidMulParamsT gateParams;
  gateParams.dim = 16 * 256;
  gate.op.params.Set(gateParams);
  gate.variants = single("sigmoid_mul");
  cases.push_back({std::move(gate), codegen::ProgramInfo{}, {1, 8, 512}});

  // The MTP draft program's row copies at Qwen3.6-35B-A3B's hidden size:
  // the hidden rows a draft step starts from (StepOutput.Hidden through
  // StepInput.HiddenRows), and mtp.fc's [embedding | hidden] input.
  ModelOp hidden;
  hidden.op.kind = plan::OpKind::GatherHidden;
  hidden.op.name = "mtp_hidden_rows";
  codegen::OperandInfo store;
  store.kind = codegen::OperandKind::Output;
  store.index = 1;
  hidden.op.operands = {store, input(9), arena(0)};
  plan::GatherHiddenParamsT hiddenParams;
  hiddenParams.dim = 2048;
  hidden.op.params.Set(hiddenParams);
  hidden.variants = single("gather_hidden");
  cases.push_back({std::move(hidden), codegen::ProgramInfo{}, {1, 8, 300}});

  ModelOp concat;
  concat.op.kind = plan::OpKind::Concat;
  concat.op.name = "mtp_fc_input";
  concat.op.operands = {arena(0), arena(1), arena(2)};
  plan::ConcatParamsT concatParams;
  concatParams.a_dim = 2048;
  concatParams.b_dim = 2048;
  concat.op.params.Set(concatParams);
  concat.variants = single("concat");
  cases.push_back({std::move(concat), codegen::ProgramInfo{}, {1, 8, 300}});
  return cases;
}

/// Plans every case into `registry`: launches[case][variant].
inline Result<std::vector<std::vector<PlannedLaunch>>> planCases(const std::vector<GpuCase> &cases,
                                                                 KernelRegistry &registry) {
  std::vector<std::vector<PlannedLaunch>> launches;
  for (const GpuCase &c : cases) {
    auto planned =
        codegen::planLaunches(c.op.op, c.op.variants, c.program, codegen::TargetInfo{}, registry);
    if (!planned)
      return planned.error();
    launches.push_back(std::move(*planned));
  }
  return launches;
}

/// The launch that serves `tokens` (as the cuda backend picks it).
inline const PlannedLaunch *launchFor(const std::vector<PlannedLaunch> &launches, int tokens) {
  for (const PlannedLaunch &l : launches)
    if (l.maxTokens >= static_cast<uint32_t>(tokens))
      return &l;
  return nullptr;
}

} // namespace volt::gpu
