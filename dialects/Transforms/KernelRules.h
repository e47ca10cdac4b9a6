//===- KernelRules.h - kernel facts that memory planning needs ---*- C++ -*-===//
//
// The part of a kernel's launch rules that the memory plan depends on,
// stated once, free of MLIR: --vexec-plan-memory sizes the kernel
// workspace by it, and the kernel registry (compiler/codegen/KernelDefs.h)
// plans the launches by it and refuses a smaller workspace.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <algorithm>
#include <cstdint>

namespace volt::kernels {

/// The most chunks one sequence is split into: longer contexts get longer
/// chunks, so that the merge's weights fit in static shared memory.
inline constexpr int64_t kMaxAttentionSplits = 256;

/// How paged attention splits long decode contexts across blocks
/// (templates/paged_attention.cu, and paged_attention_tiled.cu for the
/// decodes of larger steps): chunks of at least `splitTokens` positions, a
/// pool of `maxSplits` extra blocks per kv head, and `workspaceBytes` of
/// records. maxSplits 0: no split.
struct AttentionSplit {
  int64_t splitTokens = 0, maxSplits = 0;
  uint64_t workspaceBytes = 0;
};

/// The split of an attention op with `heads` query heads of `headDim` on a
/// rank, for contexts up to `maxContext` positions (max_blocks_per_seq x
/// kv_block_size), with the variant's `split_k_tokens` (0: none). The
/// workspace holds fewer than 2 maxSplits records of heads x (headDim + 2)
/// floats: (o[head_dim], max, sum) per query head. The variants of one op
/// share the workspace, as only one runs per step.
inline AttentionSplit attentionSplit(int64_t splitKTokens, int64_t maxContext, int64_t heads,
                                     int64_t headDim) {
  AttentionSplit s;
  if (splitKTokens <= 0 || maxContext <= splitKTokens)
    return s;
  s.splitTokens =
      std::max(splitKTokens, (maxContext + kMaxAttentionSplits - 1) / kMaxAttentionSplits);
  s.maxSplits = (maxContext + s.splitTokens - 1) / s.splitTokens;
  s.workspaceBytes = static_cast<uint64_t>(2 * s.maxSplits * heads * (headDim + 2)) * 4;
  return s;
}

/// The largest head_dim the tensor-core attention serves: a warp keeps 16
/// rows of O over at most 128 dimensions (head_dim / 2 FP32 accumulators
/// per thread); past 128 two warps share the rows, a half each.
inline constexpr int64_t kTiledAttentionMaxHeadDim = 256;

/// The tile of templates/paged_attention_tiled.cu: `queryTile` query rows
/// ((token, query head) pairs of one kv head) against `keyTile` keys at a
/// time, both rounded down to multiples of 16 (16..128), the warps that
/// share a row's dimensions, the block's threads and its dynamic shared
/// memory.
struct TiledAttentionShape {
  int64_t queryTile = 0, keyTile = 0, dimSplit = 1, threads = 0;
  uint64_t sharedBytes = 0;
};

inline TiledAttentionShape tiledAttentionShape(int64_t queryTile, int64_t keyTile,
                                               int64_t headDim) {
  TiledAttentionShape s;
  s.queryTile = std::clamp<int64_t>(queryTile / 16 * 16, 16, 128);
  s.keyTile = std::clamp<int64_t>(keyTile / 16 * 16, 16, 128);
  s.dimSplit = headDim > 128 ? 2 : 1;
  s.threads = s.queryTile / 16 * s.dimSplit * 32;
  // Q, K (or P, which shares its buffer) and V^T, rows padded by 8 halves;
  // with split dimensions each warp's partial scores in FP32.
  const int64_t q = s.queryTile * (headDim + 8);
  const int64_t k = std::max(s.keyTile * (headDim + 8), s.queryTile * (s.keyTile + 8));
  const int64_t vt = headDim * (s.keyTile + 8);
  const int64_t partial = s.dimSplit > 1 ? s.dimSplit * s.queryTile * (s.keyTile + 1) : 0;
  s.sharedBytes = static_cast<uint64_t>(2 * (q + k + vt) + 4 * partial);
  return s;
}

/// The chunked Gated DeltaNet kernel (templates/gated_delta_rule_chunked.cu):
/// tokens per chunk by default, and threads per block.
inline constexpr int64_t kGatedDeltaChunk = 64;
inline constexpr uint32_t kGatedDeltaChunkedThreads = 256;

/// Whether gated_delta_rule_chunked serves heads of `keyDim` x `valueDim`
/// (multiples of 16 up to 128) in chunks of `chunk` tokens (32 or 64) with
/// `dvSplit` blocks per head (each over valueDim / dvSplit columns, a
/// multiple of 16), and the dynamic shared memory a block needs (the
/// template's layout).
struct GatedDeltaChunkedShape {
  bool supported = false;
  int64_t chunk = 0, dvSplit = 1;
  uint64_t sharedBytes = 0;
};

inline GatedDeltaChunkedShape gatedDeltaChunkedShape(int64_t chunk, int64_t keyDim,
                                                     int64_t valueDim, int64_t dvSplit = 1) {
  GatedDeltaChunkedShape s;
  s.chunk = chunk;
  s.dvSplit = dvSplit;
  s.supported = (chunk == 32 || chunk == 64) && keyDim > 0 && keyDim % 16 == 0 &&
                keyDim <= 128 && valueDim > 0 && valueDim % 16 == 0 && valueDim <= 128 &&
                dvSplit >= 1 && valueDim % dvSplit == 0 && (valueDim / dvSplit) % 16 == 0;
  if (!s.supported)
    return s;
  // Q and K [chunk][dk + 4], V^T [dvs][chunk + 4], T or P [chunk][chunk + 4]
  // (halves); L/T in FP32 [chunk][chunk + 1] or S^T [dvs][dk + 4] (halves);
  // G, beta, the tail decays and the row sums [chunk][dvs / 16] (FP32);
  // dvs = valueDim / dvSplit.
  const int64_t dvs = valueDim / dvSplit;
  const int64_t qk = 2 * chunk * (keyDim + 4) * 2, vt = dvs * (chunk + 4) * 2,
                tp = chunk * (chunk + 4) * 2,
                x = std::max(chunk * (chunk + 1) * 4, dvs * (keyDim + 4) * 2),
                small = (3 * chunk + chunk * (dvs / 16)) * 4;
  s.sharedBytes = static_cast<uint64_t>(qk + vt + tp + x + small);
  return s;
}

/// Blocks per (sequence, value head) of gated_delta_rule_chunked: a long
/// prompt of one sequence has only `valueHeads` heads of work per rank
/// (16 on a V100 pair for Qwen3.6), so the value dimensions split (up to
/// 4 ways, 16 columns at least) until about the SMs' count of blocks runs.
inline int64_t gatedDeltaDvSplit(int64_t valueHeads, int64_t valueDim, int64_t smCount) {
  int64_t split = 1;
  while (split < 4 && valueHeads * split * 2 <= smCount && valueDim % (split * 2) == 0 &&
         (valueDim / (split * 2)) % 16 == 0)
    split *= 2;
  return split;
}

} // namespace volt::kernels
