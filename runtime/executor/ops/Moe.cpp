//===- Moe.cpp - the cpu runners of the MoE ops ---------------------------===//
#include "runtime/cpu/Ops.h"
#include "runtime/executor/OpContext.h"

namespace volt::executor {

void runMoeRouter(OpContext &c) {
  const auto *pm = c.op.params_as_MoeRouterParams();
  cpu::moeRouter({c.tokens(), pm->num_experts(), pm->top_k(), pm->renormalize()}, c.f32(0),
                 c.i32(1), c.f32(2), c.pool);
}

void runMoeAlign(OpContext &c) {
  const auto *pm = c.op.params_as_MoeAlignParams();
  cpu::moeAlign({c.tokens(), pm->top_k(), pm->num_experts()}, c.i32(0), c.i32(1), c.i32(2));
}

void runMoeGroupedQLinear(OpContext &c) {
  const auto *pm = c.op.params_as_MoeGroupedQLinearParams();
  cpu::MoeGroupedQLinearParams q;
  q.tokens = c.tokens();
  q.topK = pm->top_k();
  q.numExperts = pm->num_experts();
  q.inFeatures = pm->dim();
  q.outFeatures = pm->out_features();
  q.partRows = c.partRows(3);
  q.globalScales = c.globalScales(3);
  q.gatherTokens = pm->gather_tokens();
  q.epilogue = static_cast<cpu::Epilogue>(pm->epilogue());
  q.numerics = c.numerics;
  cpu::moeGroupedQLinear(q, c.f16(0), c.i32(1), c.i32(2), c.nvfp4(3), c.f16(4), c.pool);
}

void runMoeGroupedLinear(OpContext &c) {
  const auto *pm = c.op.params_as_MoeGroupedLinearParams();
  cpu::MoeGroupedLinearParams q;
  q.tokens = c.tokens();
  q.topK = pm->top_k();
  q.numExperts = pm->num_experts();
  q.inFeatures = pm->dim();
  q.outFeatures = pm->out_features();
  q.gatherTokens = pm->gather_tokens();
  q.epilogue = static_cast<cpu::Epilogue>(pm->epilogue());
  q.numerics = c.numerics;
  if (const plan::WeightEntry *w = c.weight(3);
      w && w->layout() == plan::WeightLayout::Fp8RowScaled)
    cpu::moeGroupedFp8Linear(q, c.f16(0), c.i32(1), c.i32(2), c.fp8(3), c.f16(4), c.pool);
  else
    cpu::moeGroupedLinear(q, c.f16(0), c.i32(1), c.i32(2), c.f16(3), c.f16(4), c.pool);
}

void runMoeCombine(OpContext &c) {
  const auto *pm = c.op.params_as_MoeCombineParams();
  cpu::moeCombine({c.tokens(), pm->top_k(), pm->dim(), pm->accumulate()}, c.f16(0), c.i32(1),
                  c.f32(2), c.f16(3), c.pool);
}

} // namespace volt::executor
