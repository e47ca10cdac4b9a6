// templates/common/moe.cuh - finding a block's expert in a grouped MoE GEMM.
//
// MoeAlign sorts the step's (token, slot) pairs by expert: expertStarts[e]
// .. expertStarts[e + 1] are expert e's rows. A grouped GEMM runs one launch
// for all experts; its grid is sized for the worst case (every pair its own
// expert, or every expert's last tile partly filled), and each block finds
// which expert and which rows are its own from expertStarts, which costs a
// scan of E integers the whole warp shares. Blocks past the last expert
// exit at once.
#pragma once

#include "common/volt.cuh"

namespace volt::moe {

#if defined(__CUDACC__) || defined(VOLT_SIMT)

/// The expert holding the `slot`-th group of `rowsPerGroup` rows, counting
/// each expert's groups in expert order, and the group's index within its
/// expert; expert -1 when there are fewer groups. Every lane of the warp
/// gets the answer.
template <int Experts>
VOLT_DEVICE int findExpertGroup(const int *expertStarts, int slot, int rowsPerGroup,
                                int &groupInExpert) {
  const int lane = static_cast<int>(laneId());
  // Every round's counts are loaded before the first scan: the loads are
  // independent, so the block waits for one round trip to memory instead
  // of one per 32 experts before it can start on its weights.
  constexpr int Rounds = (Experts + 31) / 32;
  int groups[Rounds];
#pragma unroll
  for (int r = 0; r < Rounds; ++r) {
    const int e = r * 32 + lane;
    groups[r] = 0;
    if (e < Experts) {
      const int rows = expertStarts[e + 1] - expertStarts[e];
      groups[r] = (rows + rowsPerGroup - 1) / rowsPerGroup;
    }
  }
  // Every round is scanned (no early exit), so that the rounds unroll and
  // `groups` stays in registers.
  int expert = -1;
  groupInExpert = 0;
#pragma unroll
  for (int r = 0; r < Rounds; ++r) {
    // Inclusive prefix sum of groups over the lanes.
    int prefix = groups[r];
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      int other = shuffle(prefix, lane >= d ? lane - d : lane);
      if (lane >= d)
        prefix += other;
    }
    const int total = shuffle(prefix, 31);
    if (expert < 0) {
      if (slot < total) {
        const bool mine = slot < prefix && slot >= prefix - groups[r];
        const u32 who = warpBallot(mine);
        const int owner = __ffs(who) - 1;
        const int before = shuffle(prefix - groups[r], owner);
        groupInExpert = slot - before;
        expert = r * 32 + owner;
      } else {
        slot -= total;
      }
    }
  }
  return expert;
}


/// The input row of sorted pair j: in[order[j] / TopK] when the GEMM
/// gathers token rows, in[j] when its input is already one row per pair.
template <int K, int TopK, bool Gather>
VOLT_DEVICE const u16 *pairRow(const u16 *in, const int *order, int j) {
  const int source = Gather ? order[j] / TopK : j;
  return in + static_cast<i64>(source) * K;
}

/// A grouped GEMV block's share: the group of up to 8 pairs of one expert
/// that blockIdx.y names. Fills the tile's input row (one per token column
/// of the mma layout; a column past the group's pairs reads its first
/// pair and stores nothing), output row and expert; false when the block
/// has no group.
template <int Experts, int K, int TopK, bool Gather, typename TileIo>
VOLT_DEVICE bool gemvGroup(const u16 *in, const int *order, const int *expertStarts, TileIo &io) {
  int group = 0;
  const int expert = findExpertGroup<Experts>(expertStarts, blockIdx.y, 8, group);
  if (expert < 0)
    return false;
  const int first = expertStarts[expert] + group * 8;
  const int rows = min(expertStarts[expert + 1] - first, 8);
  const int lane = static_cast<int>(laneId());
  const int column = (lane & 3) + ((lane >> 4) << 2);
  const int j = first + (column < rows ? column : 0);
  io.x = pairRow<K, TopK, Gather>(in, order, j);
  io.outRow = column < rows ? j : -1;
  io.expert = expert;
  return true;
}

/// A grouped GEMM block's share: the tile of up to TileM pairs of one
/// expert that blockIdx.y names (expert -1: none), its first pair and its
/// pair count.
struct GemmGroup {
  int expert = -1, first = 0, tokens = 0;
};
template <int Experts, int TileM>
VOLT_DEVICE GemmGroup gemmGroup(const int *expertStarts) {
  GemmGroup g;
  int group = 0;
  g.expert = findExpertGroup<Experts>(expertStarts, blockIdx.y, TileM, group);
  if (g.expert < 0)
    return g;
  g.first = expertStarts[g.expert] + group * TileM;
  g.tokens = min(expertStarts[g.expert + 1] - g.first, TileM);
  return g;
}

#endif // __CUDACC__ || VOLT_SIMT

} // namespace volt::moe
