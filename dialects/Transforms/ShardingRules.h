//===- ShardingRules.h - how a model splits over GPUs, stated once -*- C++ -*-===//
//
// The tensor-parallel rules, which --volt-shard-tensor-parallel applies to
// the graph and compiler/model/TensorParallel.h to a model description
// (`voltc check`, the per-GPU weight estimate), both through these
// functions. Free of MLIR.
//
//   role          weights                       split
//   qkv           q|k|v (+ biases)              q by heads; k, v by KV heads when the
//                                               ranks divide them, else each rank holds
//                                               one KV head (replicated by the ranks
//                                               that share it)
//   row           o_proj, down, expert down     input columns split; an all-reduce
//                                               completes the branch before the
//                                               residual add
//   column        gate|up, expert gate|up       output rows split along the width
//   replicated    router, shared_expert_gate,   whole on every rank
//                 norms, EMA mixers
//   linear heads  Gated DeltaNet q|k|v, z,      split by key heads (each rank's value
//                 b|a, conv, A_log, dt_bias     heads are those its key heads serve);
//                                               out_proj row-parallel
//   vocab         embed_tokens, lm_head         rows split (vocab-parallel) when the
//                                               ranks divide the vocabulary, completed
//                                               by an all-reduce (embedding) or an
//                                               all-gather (logits); else replicated
//
// A width split into NVFP4 weights must leave whole 16-element blocks.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace volt::sharding {

/// The tensor_parallel_size values volt compiles for.
inline constexpr int kTensorParallelSizes[] = {1, 2, 4, 8};

inline bool isValidSize(int64_t tp) {
  for (int s : kTensorParallelSizes)
    if (s == tp)
      return true;
  return false;
}

/// How the KV heads lie over the ranks: `parts` distinct slices, each held
/// by `replicas` ranks.
struct KvSplit {
  int64_t parts = 1, replicas = 1;
};

/// Why `heads` query and `kvHeads` KV heads cannot split over `tp` ranks;
/// nullopt when they can.
inline std::optional<std::string> headsError(int64_t heads, int64_t kvHeads, int64_t tp) {
  const std::string t = std::to_string(tp);
  if (heads % tp != 0)
    return "tensor_parallel_size " + t + " does not divide num_attention_heads " +
           std::to_string(heads) + "; each rank must hold whole heads";
  if (kvHeads % tp != 0 && tp % kvHeads != 0)
    return "tensor_parallel_size " + t + " and num_key_value_heads " + std::to_string(kvHeads) +
           " do not divide one another; KV heads can be split or replicated only when one "
           "divides the other";
  return std::nullopt;
}

/// The KV split (after headsError found none).
inline KvSplit kvSplit(int64_t kvHeads, int64_t tp) {
  if (kvHeads % tp == 0)
    return {tp, 1};
  return {kvHeads, tp / kvHeads};
}

/// Whether the embedding and the LM head split by vocabulary rows.
inline bool vocabParallel(int64_t vocab, int64_t tp) { return tp > 1 && vocab % tp == 0; }

/// The vocabulary rows one rank holds.
inline int64_t vocabRowsPerRank(int64_t vocab, int64_t tp) {
  return vocabParallel(vocab, tp) ? vocab / tp : vocab;
}

/// Why a `width` (named `field`) cannot split over `tp` ranks (into whole
/// NVFP4 blocks when `nvfp4`); nullopt when it can.
inline std::optional<std::string> widthError(const std::string &field, int64_t width, int64_t tp,
                                             bool nvfp4) {
  const std::string t = std::to_string(tp);
  if (width % tp != 0)
    return "tensor_parallel_size " + t + " does not divide " + field + " " + std::to_string(width) +
           "; use a tensor_parallel_size that divides it";
  if (nvfp4 && (width / tp) % 16 != 0)
    return "tensor_parallel_size " + t + " splits " + field + " " + std::to_string(width) +
           " into slices of " + std::to_string(width / tp) +
           ", which are not whole 16-element NVFP4 blocks; use a smaller tensor_parallel_size";
  return std::nullopt;
}

/// Why `keyHeads` linear-attention key heads cannot split over `tp` ranks
/// (each rank holds whole key heads and the value heads they serve);
/// nullopt when they can.
inline std::optional<std::string> linearHeadsError(int64_t keyHeads, int64_t tp) {
  if (keyHeads % tp == 0)
    return std::nullopt;
  std::string works;
  for (int s : kTensorParallelSizes)
    if (keyHeads % s == 0)
      works += (works.empty() ? "" : ", ") + std::to_string(s);
  return "tensor_parallel_size " + std::to_string(tp) + " does not divide linear_num_key_heads " +
         std::to_string(keyHeads) + "; each rank must hold whole key heads (sizes that work: " +
         works + ")";
}

} // namespace volt::sharding
