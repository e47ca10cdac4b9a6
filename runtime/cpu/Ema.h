//===- Ema.h - EmaScan -------------------------------------------*- C++ -*-===//
//
// OpKind EmaScan (runtime/schema/Ops.def): a per-channel moving average over
// each sequence's tokens, its state kept per sequence in a slot.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/ThreadPool.h"

#include <cstdint>

namespace volt::cpu {

struct EmaScanParams {
  int64_t tokens = 0, seqs = 0;
  /// Channels H.
  int64_t dim = 0;
};

/// For each sequence s (tokens seqStarts[s] .. seqStarts[s + 1] - 1, the
/// first at position contextLens[s] - its token count) and channel i, in
/// token order: st = a * st + (1 - a) * x (FP32, products and sums rounded
/// separately), out = fp16(st), with a = decay[i] and x = in[t, i]. st
/// starts at 0 when the sequence's first token here is at position 0, else
/// at state[slot * H + i]; the final st is stored there (slot =
/// stateSlots[s]; -1: start from 0 and store nothing), and after a token t
/// whose snapshotSlots[t] >= 0 (null: none), st is copied to that slot. `in`, `decay`,
/// `out` FP16; `state` FP32 [slots, H].
void emaScan(const EmaScanParams &params, const uint16_t *in, const uint16_t *decay, float *state,
             const int32_t *seqStarts, const int32_t *contextLens, const int32_t *stateSlots,
             const int32_t *snapshotSlots, uint16_t *out, ThreadPool &pool);

} // namespace volt::cpu
