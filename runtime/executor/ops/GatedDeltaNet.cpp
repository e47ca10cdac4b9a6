//===- GatedDeltaNet.cpp - the cpu runners of CausalConv1d, GatedDeltaRule ===//
#include "runtime/cpu/GatedDeltaNet.h"
#include "runtime/executor/OpContext.h"

namespace volt::executor {

void runCausalConv1d(OpContext &c) {
  const auto *p = c.op.params_as_CausalConv1dParams();
  cpu::causalConv1d({c.tokens(), c.seqs(), p->dim(), p->kernel()}, c.f16(0), c.f16(1), c.f16(2),
                    c.i32(3), c.i32(4), c.i32(5), c.i32(6), c.f16(7), c.pool);
}

void runGatedDeltaRule(OpContext &c) {
  const auto *p = c.op.params_as_GatedDeltaRuleParams();
  cpu::gatedDeltaRule({c.tokens(), c.seqs(), p->key_heads(), p->value_heads(), p->key_dim(),
                       p->value_dim(), p->eps()},
                      c.f16(0), c.f16(1), c.f16(2), c.f32(3), c.f32(4), c.f16(5), c.f32(6),
                      c.i32(7), c.i32(8), c.i32(9), c.i32(10), c.f16(11), c.pool);
}

} // namespace volt::executor
