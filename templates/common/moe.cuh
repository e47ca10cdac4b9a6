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
  for (int base = 0; base < Experts; base += 32) {
    const int e = base + lane;
    int groups = 0;
    if (e < Experts) {
      const int rows = expertStarts[e + 1] - expertStarts[e];
      groups = (rows + rowsPerGroup - 1) / rowsPerGroup;
    }
    // Inclusive prefix sum of groups over the lanes.
    int prefix = groups;
    for (int d = 1; d < 32; d <<= 1) {
      int other = shuffle(prefix, lane >= d ? lane - d : lane);
      if (lane >= d)
        prefix += other;
    }
    const int total = shuffle(prefix, 31);
    if (slot < total) {
      const bool mine = slot < prefix && slot >= prefix - groups;
      const u32 who = warpBallot(mine);
      const int owner = __ffs(who) - 1;
      const int before = shuffle(prefix - groups, owner);
      groupInExpert = slot - before;
      return base + owner;
    }
    slot -= total;
  }
  groupInExpert = 0;
  return -1;
}

#endif // __CUDACC__ || VOLT_SIMT

} // namespace volt::moe
