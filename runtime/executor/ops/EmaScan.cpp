//===- EmaScan.cpp - the cpu runner of EmaScan ----------------------------===//
#include "runtime/cpu/Ema.h"
#include "runtime/executor/OpContext.h"

namespace volt::executor {

void runEmaScan(OpContext &c) {
  cpu::emaScan({c.tokens(), c.seqs(), c.op.params_as_EmaScanParams()->dim()}, c.f16(0), c.f16(1),
               c.f32(2), c.i32(3), c.i32(4), c.i32(5), c.i32(6), c.f16(7), c.pool);
}

} // namespace volt::executor
