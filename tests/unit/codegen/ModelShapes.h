//===- ModelShapes.h - the ops of real models, for codegen tests -*- C++ -*-===//
//
// The plan ops of one decoder layer (and the embedding and LM head) of
// Qwen3-30B-A3B (MoE, NVFP4 experts) and of a dense 32B model (Qwen2.5-32B
// geometry, NVFP4 linears), per tensor-parallel rank, with the variants
// kernel selection picks for a V100 (dialects/Transforms/KernelCatalog.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/codegen/Launches.h"

#include <string>
#include <vector>

namespace volt::codegen::testing {

struct ModelOp {
  OpInfo op;
  std::vector<Variant> variants;
};

struct ModelShape {
  std::string name;
  int64_t hidden, heads, kvHeads, headDim, vocab, experts, topK, moeWidth, denseWidth;
};

inline ModelShape qwen3MoeShape() {
  return {"Qwen3-30B-A3B", 2048, 32, 4, 128, 151936, 128, 8, 768, 0};
}
inline ModelShape dense32bShape() {
  return {"dense-32B", 5120, 40, 8, 128, 152064, 0, 0, 0, 27648};
}

inline std::vector<Variant> gemmVariants(const std::string &gemv, const std::string &gemm) {
  return {
      {8, gemv, {{"warps_per_block", 8}, {"rows_per_warp", 4}}},
      {44, gemm, {{"tile_m", 32}, {"tile_n", 128}, {"tile_k", 64}, {"stages", 2}}},
      {int64_t{1} << 30, gemm, {{"tile_m", 128}, {"tile_n", 128}, {"tile_k", 64}, {"stages", 2}}}};
}

/// Split-K attention's shortest chunk, as dialects/Transforms/KernelCatalog
/// chooses it.
constexpr int64_t kSplitKTokens = 512;
/// The deployment's max_num_seqs: attention steps up to it run
/// paged_attention, larger ones paged_attention_tiled (the catalog's tile).
constexpr int64_t kMaxNumSeqs = 256;

inline std::vector<Variant> attentionVariants(int64_t headDim) {
  return {
      {kMaxNumSeqs, "paged_attention", {{"head_dim", headDim}, {"split_k_tokens", kSplitKTokens}}},
      {int64_t{1} << 30,
       "paged_attention_tiled",
       {{"head_dim", headDim},
        {"query_tile", 64},
        {"key_tile", 32},
        {"split_k_tokens", kSplitKTokens}}}};
}

inline std::vector<Variant> single(const std::string &kernel) {
  return {{int64_t{1} << 30, kernel, {{"threads", 256}}}};
}

inline OperandInfo arena(uint32_t index, bool f32 = false, bool perRow = false) {
  OperandInfo o;
  o.kind = OperandKind::Arena;
  o.index = index;
  o.f32 = f32;
  o.perRow = perRow;
  return o;
}

inline OperandInfo kvCache(uint32_t layer) {
  OperandInfo o;
  o.kind = OperandKind::Cache;
  o.index = layer;
  return o;
}

inline OperandInfo input(uint32_t index) {
  OperandInfo o;
  o.kind = OperandKind::Input;
  o.index = index;
  return o;
}

inline OperandInfo nvfp4Weight(uint32_t index, std::vector<int64_t> shape,
                               std::vector<uint32_t> parts, size_t experts = 1) {
  OperandInfo o;
  o.kind = OperandKind::Weight;
  o.index = index;
  o.nvfp4 = true;
  o.shape = std::move(shape);
  o.partRows = std::move(parts);
  for (size_t i = 0; i < experts * std::max<size_t>(1, o.partRows.size()); ++i)
    o.globalScales.push_back(1.0f / 2688.0f * static_cast<float>(1 + i % 7));
  return o;
}

inline OperandInfo denseWeight(uint32_t index, std::vector<int64_t> shape) {
  OperandInfo o;
  o.kind = OperandKind::Weight;
  o.index = index;
  o.shape = std::move(shape);
  return o;
}

/// A params union holding `table`.
template <typename T> plan::OpParamsUnion paramsOf(T table) {
  plan::OpParamsUnion u;
  u.Set(std::move(table));
  return u;
}

/// The ops of `m` on one of `tp` ranks.
inline std::vector<ModelOp> modelOps(const ModelShape &m, int64_t tp) {
  std::vector<ModelOp> ops;
  auto add = [&](plan::OpKind kind, std::string name, std::vector<OperandInfo> operands,
                 plan::OpParamsUnion p, std::vector<Variant> variants) {
    ops.push_back({{kind, m.name + "." + std::move(name), std::move(operands), std::move(p)},
                   std::move(variants)});
  };
  using plan::OpKind;
  auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  const int64_t h = m.hidden, d = m.headDim, hq = m.heads / tp, hkv = m.kvHeads / tp;
  plan::EmbeddingParamsT embedding;
  embedding.dim = u32(h);
  embedding.vocab_rows = u32(m.vocab / tp);
  add(OpKind::Embedding, "embed", {input(0), denseWeight(0, {m.vocab / tp, h}), arena(0)},
      paramsOf(embedding), single("embedding"));
  plan::AddRmsNormParamsT addNorm;
  addNorm.dim = u32(h);
  add(OpKind::AddRmsNorm, "input_layernorm", {arena(0), arena(1), denseWeight(1, {h}), arena(2)},
      paramsOf(addNorm), single("add_rms_norm"));
  add(OpKind::AddRmsNorm, "input_layernorm_f32_residual",
      {arena(0), arena(1, true), denseWeight(1, {h}), arena(2)}, paramsOf(addNorm),
      single("add_rms_norm"));
  plan::RmsNormParamsT norm;
  norm.dim = u32(h);
  add(OpKind::RmsNorm, "norm", {arena(2), denseWeight(1, {h}), arena(3)}, paramsOf(norm),
      single("rms_norm"));
  plan::QLinearParamsT qkv;
  qkv.dim = u32(h);
  qkv.out_features = u32((hq + 2 * hkv) * d);
  add(OpKind::QLinear, "qkv_proj",
      {arena(2),
       nvfp4Weight(2, {(hq + 2 * hkv) * d, h},
                   {static_cast<uint32_t>(hq * d), static_cast<uint32_t>(hkv * d),
                    static_cast<uint32_t>(hkv * d)}),
       arena(4)},
      paramsOf(qkv), gemmVariants("nvfp4_gemv", "nvfp4_gemm"));
  plan::QkNormRopeParamsT rope;
  rope.num_heads = u32(hq);
  rope.num_kv_heads = u32(hkv);
  rope.head_dim = u32(d);
  rope.rope_theta = 1e6f;
  add(OpKind::QkNormRope, "qk_norm_rope",
      {arena(4), input(1), denseWeight(3, {d}), denseWeight(4, {d})}, paramsOf(rope),
      single("qk_norm_rope"));
  plan::AttentionParamsT attention;
  attention.num_heads = u32(hq);
  attention.num_kv_heads = u32(hkv);
  attention.head_dim = u32(d);
  add(OpKind::Attention, "attention",
      {arena(4), kvCache(0), input(2), input(3), input(4), input(5), arena(5)}, paramsOf(attention),
      attentionVariants(d));
  plan::QLinearParamsT o;
  o.dim = u32(hq * d);
  o.out_features = u32(h);
  add(OpKind::QLinear, "o_proj", {arena(5), nvfp4Weight(5, {h, hq * d}, {}), arena(6)}, paramsOf(o),
      gemmVariants("nvfp4_gemv", "nvfp4_gemm"));
  if (m.experts > 0) {
    const int64_t w = m.moeWidth / tp;
    plan::LinearParamsT router;
    router.dim = u32(h);
    router.out_features = u32(m.experts);
    router.out_dtype = plan::DType::F32;
    add(OpKind::Linear, "router", {arena(2), denseWeight(6, {m.experts, h}), arena(7, true)},
        paramsOf(router), gemmVariants("dense_gemv", "dense_gemm"));
    plan::MoeRouterParamsT route;
    route.num_experts = u32(m.experts);
    route.top_k = u32(m.topK);
    route.renormalize = true;
    add(OpKind::MoeRouter, "route", {arena(7, true), arena(8), arena(9, true)}, paramsOf(route),
        single("moe_router"));
    plan::MoeAlignParamsT align;
    align.num_experts = u32(m.experts);
    align.top_k = u32(m.topK);
    add(OpKind::MoeAlign, "align", {arena(8), arena(10), arena(11)}, paramsOf(align),
        single("moe_align"));
    plan::MoeGroupedQLinearParamsT gateUp;
    gateUp.dim = u32(h);
    gateUp.out_features = u32(2 * w);
    gateUp.num_experts = u32(m.experts);
    gateUp.top_k = u32(m.topK);
    gateUp.gather_tokens = true;
    gateUp.epilogue = plan::Epilogue::SiluMul;
    add(OpKind::MoeGroupedQLinear, "experts.gate_up",
        {arena(2), arena(10), arena(11),
         nvfp4Weight(7, {m.experts, 2 * w, h}, {static_cast<uint32_t>(w), static_cast<uint32_t>(w)},
                     static_cast<size_t>(m.experts)),
         arena(12)},
        paramsOf(gateUp), gemmVariants("nvfp4_moe_gemv", "nvfp4_moe_gemm"));
    plan::MoeGroupedQLinearParamsT down = gateUp;
    down.dim = u32(w);
    down.out_features = u32(h);
    down.gather_tokens = false;
    down.epilogue = plan::Epilogue::None;
    add(OpKind::MoeGroupedQLinear, "experts.down",
        {arena(12), arena(10), arena(11),
         nvfp4Weight(8, {m.experts, h, w}, {}, static_cast<size_t>(m.experts)), arena(13)},
        paramsOf(down), gemmVariants("nvfp4_moe_gemv", "nvfp4_moe_gemm"));
    plan::MoeCombineParamsT combine;
    combine.dim = u32(h);
    combine.top_k = u32(m.topK);
    add(OpKind::MoeCombine, "combine", {arena(13), arena(10), arena(9, true), arena(14)},
        paramsOf(combine), single("moe_combine"));
  } else {
    const int64_t w = m.denseWidth / tp;
    plan::QLinearParamsT gateUp;
    gateUp.dim = u32(h);
    gateUp.out_features = u32(2 * w);
    gateUp.epilogue = plan::Epilogue::SiluMul;
    add(OpKind::QLinear, "mlp.gate_up",
        {arena(2), nvfp4Weight(7, {2 * w, h}, {static_cast<uint32_t>(w), static_cast<uint32_t>(w)}),
         arena(12)},
        paramsOf(gateUp), gemmVariants("nvfp4_gemv", "nvfp4_gemm"));
    plan::QLinearParamsT down;
    down.dim = u32(w);
    down.out_features = u32(h);
    add(OpKind::QLinear, "mlp.down", {arena(12), nvfp4Weight(8, {h, w}, {}), arena(13)},
        paramsOf(down), gemmVariants("nvfp4_gemv", "nvfp4_gemm"));
    plan::SiluMulParamsT silu;
    silu.dim = u32(w);
    add(OpKind::SiluMul, "silu_mul", {arena(15), arena(12)}, paramsOf(silu), single("silu_mul"));
    plan::SigmoidGateAddParamsT gate;
    gate.dim = u32(h);
    add(OpKind::SigmoidGateAdd, "shared_expert_gate", {arena(14), arena(13), arena(16)},
        paramsOf(gate), single("sigmoid_gate_add"));
  }
  plan::GatherRowsParamsT gather;
  gather.dim = u32(h);
  add(OpKind::GatherRows, "last_tokens", {arena(2), input(6), arena(17, false, true)},
      paramsOf(gather), single("gather_rows"));
  plan::LinearParamsT head;
  head.dim = u32(h);
  head.out_features = u32(m.vocab / tp);
  head.out_dtype = plan::DType::F32;
  add(OpKind::Linear, "lm_head",
      {arena(17, false, true), denseWeight(9, {m.vocab / tp, h}), arena(18, true, true)},
      paramsOf(head), gemmVariants("dense_gemv", "dense_gemm"));
  return ops;
}

inline ProgramInfo programFor(const ModelShape &m, int64_t tp) {
  ProgramInfo g;
  g.kvBlocks = 4096;
  g.kvBlockSize = 16;
  g.kvHeads = static_cast<uint32_t>(m.kvHeads / tp);
  g.headDim = static_cast<uint32_t>(m.headDim);
  g.maxBlocksPerSeq = 256;
  g.maxNumBatchedTokens = 2048;
  // Split-K attention's records, as plan-memory sizes them.
  g.workspaceBytes = attentionSplit(kSplitKTokens, int64_t{g.maxBlocksPerSeq} * g.kvBlockSize,
                                    m.heads / tp, m.headDim)
                         .workspaceBytes;
  return g;
}

} // namespace volt::codegen::testing
