//===- TensorParallel.cpp -------------------------------------------------===//
#include "compiler/model/TensorParallel.h"

#include "dialects/Transforms/ShardingRules.h"
#include "runtime/numerics/Nvfp4.h"

#include <string>

namespace volt::model {
namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status checkWidth(const char *field, int64_t width, int tp, bool nvfp4) {
  if (auto why = sharding::widthError(field, width, tp, nvfp4))
    return Error(*why);
  return Status::success();
}

} // namespace

Status checkTensorParallel(const ModelConfig &c, int tp, bool nvfp4) {
  if (!sharding::isValidSize(tp))
    return Error("tensor_parallel_size " + std::to_string(tp) + " is not one of 1, 2, 4, 8");
  if (auto why = sharding::headsError(c.numAttentionHeads, c.numKeyValueHeads, tp))
    return Error(*why);
  if (c.isMoe())
    VOLT_RETURN_IF_ERROR(checkWidth("moe_intermediate_size", c.moeIntermediateSize, tp, nvfp4));
  bool anyDense = !c.isMoe();
  for (int64_t i = 0; i < c.numHiddenLayers && !anyDense; ++i)
    anyDense = !c.isMoeLayer(i);
  if (anyDense)
    VOLT_RETURN_IF_ERROR(checkWidth("intermediate_size", c.intermediateSize, tp, nvfp4));
  if (c.sharedExpertIntermediateSize > 0)
    VOLT_RETURN_IF_ERROR(
        checkWidth("shared_expert_intermediate_size", c.sharedExpertIntermediateSize, tp, nvfp4));
  if (c.hasMixer(MixerKind::GatedDeltaNet)) {
    if (auto why = sharding::linearHeadsError(c.linearNumKeyHeads, tp))
      return Error(*why);
    // out_proj's input columns split by value heads.
    VOLT_RETURN_IF_ERROR(checkWidth("linear_num_value_heads * linear_value_head_dim",
                                    c.linearNumValueHeads * c.linearValueHeadDim, tp, nvfp4));
  }
  return Status::success();
}

bool quantizedByDefault(const Linear &linear) {
  const std::string &m = linear.module;
  return !(m == "lm_head" || endsWith(m, ".mlp.gate") || endsWith(m, ".block_sparse_moe.gate") ||
           endsWith(m, ".shared_expert_gate")) &&
         linear.inFeatures % nvfp4::kBlockSize == 0;
}

RankWeights weightsPerRank(const Model &model, int tp, bool quantize) {
  const ModelConfig &c = model.config;
  RankWeights r;
  // FP8 rows: a linear's own, or an expert's when all of its experts'
  // gate, up and down are (the importer's rule: both grouped GEMMs FP8).
  bool expertsFp8Rows = true;
  auto fp8Rows = [](const Linear &lin) { return lin.isFp8() && !lin.fp8BlockScaled; };
  auto add = [&](const Linear &lin, int64_t out, int64_t in, bool expert = false) {
    uint64_t n = static_cast<uint64_t>(out) * static_cast<uint64_t>(in);
    bool nvfp4 = lin.isNvfp4() || (quantize && !lin.isFp8() && quantizedByDefault(lin));
    if (nvfp4)
      r.nvfp4Bytes += n / 2 + n / nvfp4::kBlockSize + 4;
    else if (fp8Rows(lin) && (!expert || expertsFp8Rows))
      r.fp8Bytes += n + 4 * static_cast<uint64_t>(out);
    else
      r.denseBytes += n * 2;
    if (lin.bias)
      r.denseBytes += static_cast<uint64_t>(out) * 2;
  };
  const sharding::KvSplit kv = sharding::kvSplit(c.numKeyValueHeads, tp);
  int64_t kvOut = c.numKeyValueHeads / kv.parts * c.headDim;
  auto mlp = [&](const GatedMlp &m, int64_t width, bool expert = false) {
    add(m.gate, width / tp, c.hiddenSize, expert);
    add(m.up, width / tp, c.hiddenSize, expert);
    add(m.down, c.hiddenSize, width / tp, expert);
  };
  for (const Layer &l : model.layers) {
    if (const Attention *a = l.attention()) {
      add(a->q, a->q.outFeatures / tp, c.hiddenSize);
      add(a->k, kvOut, c.hiddenSize);
      add(a->v, kvOut, c.hiddenSize);
      add(a->o, c.hiddenSize, a->o.inFeatures / tp);
      if (a->gate)
        add(*a->gate, a->gate->outFeatures / tp, c.hiddenSize);
      if (a->qNorm)
        r.denseBytes += 2 * static_cast<uint64_t>(c.headDim) * 2;
    }
    if (const Ema *e = l.ema()) // replicated
      r.denseBytes += e->decay.numElements() * 2;
    if (const GatedDeltaNet *g = l.gatedDeltaNet()) {
      // Split by key heads; out_proj row-parallel; A_log, dt_bias in FP32.
      for (const Linear *lin : {&g->q, &g->k, &g->v, &g->z, &g->b, &g->a})
        add(*lin, lin->outFeatures / tp, c.hiddenSize);
      add(g->out, c.hiddenSize, g->out.inFeatures / tp);
      r.denseBytes += static_cast<uint64_t>(c.linearConvDim() / tp) * c.linearConvKernelDim * 2;
      r.denseBytes += static_cast<uint64_t>(c.linearNumValueHeads / tp) * 2 * 4;
      r.denseBytes += static_cast<uint64_t>(c.linearValueHeadDim) * 2;
    }
    r.denseBytes += 2 * static_cast<uint64_t>(c.hiddenSize) * 2; // the two norms
    if (const GatedMlp *m = l.mlp()) {
      mlp(*m, c.intermediateSize);
      continue;
    }
    const Moe &moe = *l.moe();
    add(moe.router, c.numExperts, c.hiddenSize);
    expertsFp8Rows = true;
    for (const GatedMlp &e : moe.experts)
      expertsFp8Rows = expertsFp8Rows && fp8Rows(e.gate) && fp8Rows(e.up) && fp8Rows(e.down);
    for (const GatedMlp &e : moe.experts)
      mlp(e, c.moeIntermediateSize, true);
    if (moe.sharedExpert)
      mlp(*moe.sharedExpert, c.sharedExpertIntermediateSize);
    if (moe.sharedExpertGate)
      add(*moe.sharedExpertGate, 1, c.hiddenSize);
  }
  int64_t vocabRows = sharding::vocabRowsPerRank(c.vocabSize, tp);
  r.denseBytes += static_cast<uint64_t>(vocabRows) * c.hiddenSize * 2; // embed_tokens
  if (!model.lmHeadTied)
    add(model.lmHead, vocabRows, c.hiddenSize);
  r.denseBytes += static_cast<uint64_t>(c.hiddenSize) * 2; // final norm
  return r;
}

} // namespace volt::model
