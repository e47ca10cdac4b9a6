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

} // namespace volt::kernels
