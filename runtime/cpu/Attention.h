//===- Attention.h - paged causal attention over an FP16 KV cache -*- C++ -*-===//
//
// OpKind Attention of runtime/schema/plan.fbs: one call serves a whole step,
// decodes and prefill chunks mixed (continuous batching).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/ThreadPool.h"

#include <cstdint>

namespace volt::cpu {

/// One layer's KV cache: K and V blocks of FP16 [numBlocks, blockSize,
/// numKvHeads, headDim]. Slot s is (block s / blockSize, offset s %
/// blockSize).
struct PagedKvCache {
  uint16_t *k = nullptr;
  uint16_t *v = nullptr;
  int64_t numBlocks = 0;
  int64_t blockSize = 0;
};

/// The step inputs attention reads (volt.plan.StepInput).
struct StepBatch {
  /// i32[T]: the cache slot of each token's k and v; a negative slot (a
  /// padding token) is not written.
  const int32_t *slotMapping = nullptr;
  /// i32[S + 1]: first token of each sequence in this step; the last is T.
  const int32_t *seqStarts = nullptr;
  /// i32[S]: context of each sequence after this step (cached + new).
  const int32_t *contextLens = nullptr;
  /// i32[S * maxBlocksPerSeq]: each sequence's block table.
  const int32_t *blockTables = nullptr;
  int64_t maxBlocksPerSeq = 0;
};

struct AttentionParams {
  int64_t tokens = 0;
  int64_t seqs = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;
  int64_t headDim = 0;
};

/// First writes every token's k and v (FP16, copied exactly from qkv) to
/// its slot. Then, for each token t of sequence s at position
/// p = contextLens[s] - (new tokens of s) + (index of t among them), and each
/// q head h (kv head h / (Hq / Hkv)), in FP32:
///   score[j] = dot(q, k[j]) * scale for j = 0..p (Kernels.h order),
///   scale = float(1 / sqrt(double(D))),
///   m = max score, e[j] = exp(score[j] - m), l = sum of e[j] in order j,
///   o[d] = (sum over j in order of e[j] * v[j][d]) / l, rounded to FP16.
/// qkv FP16 [T, (Hq + 2 Hkv) * D]; out FP16 [T, Hq * D].
void attention(const AttentionParams &params, const uint16_t *qkv, const StepBatch &batch,
               const PagedKvCache &cache, uint16_t *out, ThreadPool &pool);

} // namespace volt::cpu
