//===- Ema.cpp ------------------------------------------------------------===//
#include "runtime/cpu/Ema.h"
#include "runtime/cpu/Scratch.h"

#include "runtime/numerics/Half.h"

#include <algorithm>
#include <vector>

namespace volt::cpu {

void emaScan(const EmaScanParams &p, const uint16_t *in, const uint16_t *decay, float *state,
             const int32_t *seqStarts, const int32_t *contextLens, const int32_t *stateSlots,
             const int32_t *snapshotSlots, uint16_t *out, ThreadPool &pool) {
  const int64_t H = p.dim;
  // One task per sequence: its tokens run in order, its channels side by side.
  pool.parallelFor(p.seqs, 1, [&](int64_t begin, int64_t end) {
    // Each thread's buffers, kept across ops (zeroed as new ones would be).
    std::vector<float> &st = detail::threadBuffer(0, H), &a = detail::threadBuffer(1, H);
    std::fill(st.begin(), st.end(), 0.0f);
    std::fill(a.begin(), a.end(), 0.0f);
    for (int64_t i = 0; i < H; ++i)
      a[static_cast<size_t>(i)] = halfToFloat(decay[i]);
    for (int64_t s = begin; s < end; ++s) {
      const int32_t first = seqStarts[s], last = seqStarts[s + 1];
      const int32_t slot = stateSlots[s];
      const bool fresh = contextLens[s] - (last - first) == 0;
      float *kept = slot >= 0 ? state + static_cast<int64_t>(slot) * H : nullptr;
      for (int64_t i = 0; i < H; ++i)
        st[static_cast<size_t>(i)] = fresh || !kept ? 0.0f : kept[i];
      for (int32_t t = first; t < last; ++t) {
        for (int64_t i = 0; i < H; ++i) {
          const float ai = a[static_cast<size_t>(i)];
          float &v = st[static_cast<size_t>(i)];
          v = ai * v + (1.0f - ai) * halfToFloat(in[static_cast<int64_t>(t) * H + i]);
          out[static_cast<int64_t>(t) * H + i] = floatToHalf(v);
        }
        if (snapshotSlots && snapshotSlots[t] >= 0)
          std::copy(st.begin(), st.end(), state + static_cast<int64_t>(snapshotSlots[t]) * H);
      }
      if (kept)
        for (int64_t i = 0; i < H; ++i)
          kept[i] = st[static_cast<size_t>(i)];
    }
  });
}

} // namespace volt::cpu
