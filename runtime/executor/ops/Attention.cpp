//===- Attention.cpp - the cpu runners of QK-norm + RoPE and attention ---===//
#include "runtime/cpu/Ops.h"
#include "runtime/executor/OpContext.h"
#include "runtime/plan/Caches.h"

namespace volt::executor {

void runQkNormRope(OpContext &c) {
  const auto *pm = c.op.params_as_QkNormRopeParams();
  const bool norm = c.operandCount() == 4;
  cpu::qkNormRope({c.tokens(), pm->num_heads(), pm->num_kv_heads(), pm->head_dim(),
                   pm->rope_theta(), pm->eps(), pm->rotary_dim()},
                  c.f16(0), c.i32(1), norm ? c.f16(2) : nullptr, norm ? c.f16(3) : nullptr, c.pool);
}

void runAttention(OpContext &c) {
  const auto *pm = c.op.params_as_AttentionParams();
  // The layer's K blocks, then its V blocks (runtime/plan/Caches.h).
  const plan::CacheGroup *kv = plan::pagedKvGroup(c.rank);
  uint16_t *keys = c.f16(1);
  const uint64_t kHalves = plan::cacheLayerBytes(*kv) / 4;
  cpu::PagedKvCache cache{keys, keys + kHalves, kv->num_blocks(), kv->block_size()};
  cpu::StepBatch meta{c.i32(2), c.i32(3), c.i32(4), c.i32(5), c.batch.maxBlocksPerSeq};
  cpu::attention({c.tokens(), c.seqs(), pm->num_heads(), pm->num_kv_heads(), pm->head_dim()},
                 c.f16(0), meta, cache, c.f16(6), c.pool);
}

} // namespace volt::executor
