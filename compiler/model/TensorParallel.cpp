//===- TensorParallel.cpp -------------------------------------------------===//
#include "compiler/model/TensorParallel.h"

#include "runtime/numerics/Nvfp4.h"

#include <string>

namespace volt::model {
namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

Status checkWidth(const char *field, int64_t width, int tp, bool nvfp4) {
  std::string t = std::to_string(tp);
  if (width % tp != 0)
    return Error("tensor_parallel_size " + t + " does not divide " + field + " " +
                 std::to_string(width) + "; use a tensor_parallel_size that divides it");
  if (nvfp4 && (width / tp) % nvfp4::kBlockSize != 0)
    return Error("tensor_parallel_size " + t + " splits " + field + " " + std::to_string(width) +
                 " into slices of " + std::to_string(width / tp) +
                 ", which are not whole 16-element NVFP4 blocks; use a smaller "
                 "tensor_parallel_size");
  return Status::success();
}

} // namespace

Status checkTensorParallel(const ModelConfig &c, int tp, bool nvfp4) {
  bool valid = false;
  for (int s : kTensorParallelSizes)
    valid |= s == tp;
  if (!valid)
    return Error("tensor_parallel_size " + std::to_string(tp) + " is not one of 1, 2, 4, 8");
  std::string t = std::to_string(tp);
  if (c.numAttentionHeads % tp != 0)
    return Error("tensor_parallel_size " + t + " does not divide num_attention_heads " +
                 std::to_string(c.numAttentionHeads) + "; each rank must hold whole heads");
  if (c.numKeyValueHeads % tp != 0 && tp % c.numKeyValueHeads != 0)
    return Error("tensor_parallel_size " + t + " and num_key_value_heads " +
                 std::to_string(c.numKeyValueHeads) +
                 " do not divide one another; KV heads can be split or replicated only when "
                 "one divides the other");
  if (c.isMoe())
    VOLT_RETURN_IF_ERROR(checkWidth("moe_intermediate_size", c.moeIntermediateSize, tp, nvfp4));
  bool anyDense = !c.isMoe();
  for (int64_t i = 0; i < c.numHiddenLayers && !anyDense; ++i)
    anyDense = !c.isMoeLayer(i);
  if (anyDense)
    VOLT_RETURN_IF_ERROR(checkWidth("intermediate_size", c.intermediateSize, tp, nvfp4));
  if (c.sharedExpertIntermediateSize > 0)
    VOLT_RETURN_IF_ERROR(checkWidth("shared_expert_intermediate_size",
                                    c.sharedExpertIntermediateSize, tp, nvfp4));
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
  auto add = [&](const Linear &lin, int64_t out, int64_t in) {
    uint64_t n = static_cast<uint64_t>(out) * static_cast<uint64_t>(in);
    bool nvfp4 = lin.isNvfp4() || (quantize && quantizedByDefault(lin));
    if (nvfp4)
      r.nvfp4Bytes += n / 2 + n / nvfp4::kBlockSize + 4;
    else
      r.denseBytes += n * 2;
    if (lin.bias)
      r.denseBytes += static_cast<uint64_t>(out) * 2;
  };
  int64_t kvOut = (c.numKeyValueHeads % tp == 0 ? c.numKeyValueHeads / tp : 1) * c.headDim;
  auto mlp = [&](const GatedMlp &m, int64_t width) {
    add(m.gate, width / tp, c.hiddenSize);
    add(m.up, width / tp, c.hiddenSize);
    add(m.down, c.hiddenSize, width / tp);
  };
  for (const Layer &l : model.layers) {
    add(l.q, l.q.outFeatures / tp, c.hiddenSize);
    add(l.k, kvOut, c.hiddenSize);
    add(l.v, kvOut, c.hiddenSize);
    add(l.o, c.hiddenSize, l.o.inFeatures / tp);
    r.denseBytes += 2 * static_cast<uint64_t>(c.hiddenSize) * 2; // the two norms
    if (l.qNorm)
      r.denseBytes += 2 * static_cast<uint64_t>(c.headDim) * 2;
    if (!l.isMoe) {
      mlp(l.mlp, c.intermediateSize);
      continue;
    }
    add(l.router, c.numExperts, c.hiddenSize);
    for (const GatedMlp &e : l.experts)
      mlp(e, c.moeIntermediateSize);
    if (l.sharedExpert)
      mlp(*l.sharedExpert, c.sharedExpertIntermediateSize);
    if (l.sharedExpertGate)
      add(*l.sharedExpertGate, 1, c.hiddenSize);
  }
  int64_t vocabRows = ceilDiv(c.vocabSize, tp);
  r.denseBytes += static_cast<uint64_t>(vocabRows) * c.hiddenSize * 2; // embed_tokens
  if (!model.lmHeadTied)
    add(model.lmHead, vocabRows, c.hiddenSize);
  r.denseBytes += static_cast<uint64_t>(c.hiddenSize) * 2; // final norm
  return r;
}

} // namespace volt::model
