//===- Dense.cpp - the cpu runners of the dense ops ----------------------===//
//
// Embedding, the norms, the linears, the activations and the row gather.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Ops.h"
#include "runtime/executor/OpContext.h"
#include "runtime/numerics/Half.h"

namespace volt::executor {
namespace {

cpu::DType cpuDtype(plan::DType d) {
  return d == plan::DType::F32 ? cpu::DType::F32 : cpu::DType::F16;
}

} // namespace

void runEmbedding(OpContext &c) {
  const auto *pm = c.op.params_as_EmbeddingParams();
  const int64_t T = c.tokens();
  cpu::EmbeddingParams e{T, pm->dim(),
                         plan::vocabStart(pm->vocab_rows(), pm->vocab_parallel(), c.rankIndex),
                         pm->vocab_rows() ? pm->vocab_rows() : c.weight(1)->shape()->Get(0)};
  if (c.dtype(2) == cpu::DType::F16) {
    cpu::embedding(e, c.i32(0), c.f16(1), c.f16(2), c.pool);
    return;
  }
  // An FP32 residual stream starts with the (exactly widened) rows.
  c.scratch.resize(static_cast<size_t>(T * pm->dim()));
  cpu::embedding(e, c.i32(0), c.f16(1), c.scratch.data(), c.pool);
  float *out = c.f32(2);
  for (size_t i = 0; i < c.scratch.size(); ++i)
    out[i] = halfToFloat(c.scratch[i]);
}

void runRmsNorm(OpContext &c) {
  const auto *pm = c.op.params_as_RmsNormParams();
  cpu::rmsNorm({c.rows(0), pm->dim(), pm->eps(), c.dtype(0)}, c.pointer(0), c.f16(1), c.f16(2),
               c.pool);
}

void runAddRmsNorm(OpContext &c) {
  const auto *pm = c.op.params_as_AddRmsNormParams();
  cpu::addRmsNorm({c.rows(0), pm->dim(), pm->eps(), c.dtype(0), c.dtype(1)}, c.pointer(0),
                  c.pointer(1), c.f16(2), c.f16(3), c.pool);
}

void runLinear(OpContext &c) {
  const auto *pm = c.op.params_as_LinearParams();
  const unsigned n = c.operandCount();
  const cpu::LinearParams params{c.rows(0), pm->dim(), pm->out_features(),
                                 cpuDtype(pm->out_dtype()), c.numerics};
  if (const plan::WeightEntry *w = c.weight(1);
      w && w->layout() == plan::WeightLayout::Fp8RowScaled)
    cpu::fp8Linear(params, c.f16(0), c.fp8(1), n == 4 ? c.f16(2) : nullptr, c.pointer(n - 1),
                   c.pool);
  else
    cpu::linear(params, c.f16(0), c.f16(1), n == 4 ? c.f16(2) : nullptr, c.pointer(n - 1),
                c.pool);
}

void runQLinear(OpContext &c) {
  const auto *pm = c.op.params_as_QLinearParams();
  const unsigned n = c.operandCount();
  cpu::QLinearParams q;
  q.tokens = c.rows(0);
  q.inFeatures = pm->dim();
  q.outFeatures = pm->out_features();
  q.partRows = c.partRows(1);
  q.globalScales = c.globalScales(1);
  q.outDtype = cpuDtype(pm->out_dtype());
  q.epilogue = static_cast<cpu::Epilogue>(pm->epilogue());
  q.numerics = c.numerics;
  cpu::qlinear(q, c.f16(0), c.nvfp4(1), n == 4 ? c.f16(2) : nullptr, c.pointer(n - 1), c.pool);
}

void runSiluMul(OpContext &c) {
  cpu::siluMul({c.rows(0), c.op.params_as_SiluMulParams()->dim()}, c.f16(0), c.f16(1), c.pool);
}

void runSigmoidGateAdd(OpContext &c) {
  cpu::sigmoidGateAdd({c.rows(0), c.op.params_as_SigmoidGateAddParams()->dim(), c.dtype(2)},
                      c.f16(0), c.f16(1), c.pointer(2), c.pool);
}

void runSigmoidMul(OpContext &c) {
  cpu::sigmoidMul({c.rows(0), c.op.params_as_SigmoidMulParams()->dim()}, c.f16(0), c.f16(1),
                  c.f16(2), c.pool);
}

void runGatherRows(OpContext &c) {
  cpu::gatherRows({c.logitsRows(), c.op.params_as_GatherRowsParams()->dim(), c.dtype(0)}, c.pointer(0),
                  c.i32(1), c.pointer(2), c.pool);
}

void runGatherHidden(OpContext &c) {
  // One row per token of the draft step (the rows index the hidden rows
  // the last step left; checkStep bounds them).
  cpu::gatherRows({c.batch.numTokens, c.op.params_as_GatherHiddenParams()->dim(), c.dtype(0)},
                  c.pointer(0), c.i32(1), c.pointer(2), c.pool);
}

void runConcat(OpContext &c) {
  const auto *p = c.op.params_as_ConcatParams();
  cpu::concatRows({c.rows(0), p->a_dim(), p->b_dim(), c.dtype(0)}, c.pointer(0), c.pointer(1),
                  c.pointer(2), c.pool);
}

} // namespace volt::executor
