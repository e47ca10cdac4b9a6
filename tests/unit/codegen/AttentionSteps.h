//===- AttentionSteps.h - a step's paged layout for attention tests -*- C++ -*-===//
//
// The host side of an attention step as the engine lays it out: each
// sequence's blocks taken from a shuffled pool (so block tables are
// scattered over the cache), the slot of every new token, padding tokens
// written nowhere; the attention op and program info voltc would plan.
// Shared by the SIMT tests of paged_attention and paged_attention_tiled.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/codegen/Launches.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace volt::codegen::testing {

struct PagedStep {
  int tokens = 0;
  int64_t numBlocks = 0;
  std::vector<int32_t> seqStarts, blockTables, slotMapping, positions;
};

/// Sequence s has newTokens[s] new tokens and contexts[s] positions after
/// the step; tokens in `padding` get slot -1. The cache holds every
/// sequence's maxBlocks blocks and `spareBlocks` more.
inline PagedStep layoutPagedStep(const std::vector<int32_t> &newTokens,
                                 const std::vector<int32_t> &contexts,
                                 const std::vector<int32_t> &padding, int64_t blockSize,
                                 int64_t maxBlocks, int64_t spareBlocks, std::mt19937 &rng) {
  PagedStep p;
  const int seqs = static_cast<int>(contexts.size());
  p.seqStarts = {0};
  for (int32_t n : newTokens)
    p.seqStarts.push_back(p.seqStarts.back() + n);
  p.tokens = p.seqStarts.back();
  p.numBlocks = seqs * maxBlocks + spareBlocks;
  std::vector<int32_t> free(static_cast<size_t>(p.numBlocks));
  std::iota(free.begin(), free.end(), 0);
  std::shuffle(free.begin(), free.end(), rng);
  p.blockTables.assign(static_cast<size_t>(seqs * maxBlocks), 0);
  p.slotMapping.assign(static_cast<size_t>(p.tokens), 0);
  p.positions.assign(p.slotMapping.size(), 0);
  size_t next = 0;
  for (int s = 0; s < seqs; ++s) {
    const size_t su = static_cast<size_t>(s);
    const int32_t context = contexts[su];
    EXPECT_LE(context, blockSize * maxBlocks);
    for (int64_t b = 0; b < (context + blockSize - 1) / blockSize; ++b)
      p.blockTables[static_cast<size_t>(s * maxBlocks + b)] = free[next++];
    for (int t = p.seqStarts[su]; t < p.seqStarts[su + 1]; ++t) {
      const int position = context - newTokens[su] + (t - p.seqStarts[su]);
      p.positions[static_cast<size_t>(t)] = position;
      p.slotMapping[static_cast<size_t>(t)] = static_cast<int32_t>(
          p.blockTables[static_cast<size_t>(s * maxBlocks + position / blockSize)] * blockSize +
          position % blockSize);
    }
  }
  for (int32_t t : padding)
    p.slotMapping[static_cast<size_t>(t)] = -1;
  return p;
}

/// The program facts attention launches are planned from, with the
/// workspace split-K needs (splitTokens 0: none).
inline ProgramInfo attentionProgram(const PagedStep &p, int64_t blockSize, int64_t maxBlocks,
                                    int64_t heads, int64_t kvHeads, int64_t dim,
                                    int64_t splitTokens) {
  ProgramInfo program;
  program.kvBlocks = static_cast<uint32_t>(p.numBlocks);
  program.kvBlockSize = static_cast<uint32_t>(blockSize);
  program.kvHeads = static_cast<uint32_t>(kvHeads);
  program.headDim = static_cast<uint32_t>(dim);
  program.maxBlocksPerSeq = static_cast<uint32_t>(maxBlocks);
  program.workspaceBytes =
      attentionSplit(splitTokens, maxBlocks * blockSize, heads, dim).workspaceBytes;
  return program;
}

inline OperandInfo attentionOperand(OperandKind kind, uint32_t index) {
  OperandInfo o;
  o.kind = kind;
  o.index = index;
  return o;
}

/// An Attention op: (qkv, kv cache, slots, seq starts, contexts, block
/// tables) -> out.
inline OpInfo attentionOp(int64_t heads, int64_t kvHeads, int64_t dim) {
  OpInfo op;
  op.kind = plan::OpKind::Attention;
  op.name = "attention";
  op.operands = {attentionOperand(OperandKind::Arena, 0), attentionOperand(OperandKind::Cache, 0),
                 attentionOperand(OperandKind::Input, 2), attentionOperand(OperandKind::Input, 3),
                 attentionOperand(OperandKind::Input, 4), attentionOperand(OperandKind::Input, 5),
                 attentionOperand(OperandKind::Arena, 1)};
  plan::AttentionParamsT p;
  p.num_heads = static_cast<uint32_t>(heads);
  p.num_kv_heads = static_cast<uint32_t>(kvHeads);
  p.head_dim = static_cast<uint32_t>(dim);
  op.params.Set(p);
  return op;
}

} // namespace volt::codegen::testing
