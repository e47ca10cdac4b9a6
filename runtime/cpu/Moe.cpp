//===- Moe.cpp - router, align and combine --------------------------------===//
#include "runtime/cpu/Moe.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/Scratch.h"
#include "runtime/numerics/Half.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

namespace volt::cpu {

void moeRouter(const MoeRouterParams &params, const float *logits, int32_t *ids, float *weights,
               ThreadPool &pool) {
  const int64_t experts = params.numExperts, k = params.topK;
  assert(experts > 0 && k > 0 && k <= experts);
  pool.parallelFor(params.tokens, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> &p = detail::threadBuffer<float>(0, experts);
    std::vector<int32_t> &index = detail::threadBuffer<int32_t>(0, experts);
    for (int64_t t = begin; t < end; ++t) {
      const float *l = logits + t * experts;
      float m = *std::max_element(l, l + experts);
      float sum = 0.0f;
      for (int64_t e = 0; e < experts; ++e) {
        p[static_cast<size_t>(e)] = std::exp(l[e] - m);
        sum += p[static_cast<size_t>(e)];
      }
      for (int64_t e = 0; e < experts; ++e)
        p[static_cast<size_t>(e)] /= sum;
      for (int64_t e = 0; e < experts; ++e)
        index[static_cast<size_t>(e)] = static_cast<int32_t>(e);
      // Larger probability first; equal ones by lower expert index.
      std::partial_sort(index.begin(), index.begin() + k, index.end(), [&](int32_t a, int32_t b) {
        float pa = p[static_cast<size_t>(a)], pb = p[static_cast<size_t>(b)];
        return pa > pb || (pa == pb && a < b);
      });
      float selected = 0.0f;
      for (int64_t s = 0; s < k; ++s)
        selected += p[static_cast<size_t>(index[static_cast<size_t>(s)])];
      for (int64_t s = 0; s < k; ++s) {
        int32_t e = index[static_cast<size_t>(s)];
        float w = p[static_cast<size_t>(e)];
        ids[t * k + s] = e;
        weights[t * k + s] = params.renormalize ? w / selected : w;
      }
    }
  });
}

void moeAlign(const MoeAlignParams &params, const int32_t *ids, int32_t *order,
              int32_t *expertStarts) {
  const int64_t pairs = params.tokens * params.topK, experts = params.numExperts;
  std::fill_n(expertStarts, experts + 1, 0);
  for (int64_t p = 0; p < pairs; ++p) {
    assert(ids[p] >= 0 && ids[p] < experts);
    ++expertStarts[ids[p] + 1];
  }
  for (int64_t e = 0; e < experts; ++e)
    expertStarts[e + 1] += expertStarts[e];
  std::vector<int32_t> &next = detail::threadBuffer<int32_t>(0, experts);
  std::copy_n(expertStarts, experts, next.begin());
  for (int64_t p = 0; p < pairs; ++p)
    order[next[static_cast<size_t>(ids[p])]++] = static_cast<int32_t>(p);
}

void moeCombine(const MoeCombineParams &params, const uint16_t *in, const int32_t *order,
                const float *weights, uint16_t *out, ThreadPool &pool) {
  const int64_t k = params.topK, dim = params.dim, pairs = params.tokens * params.topK;
  assert(k > 0 && dim > 0 && params.tokens >= 0);
  // The caller's slot 1, read by the workers (who use int32 slot 0 for
  // nothing here, and float slots 0 and 1).
  std::vector<int32_t> &rowOfPair = detail::threadBuffer<int32_t>(1, pairs);
  for (int64_t j = 0; j < pairs; ++j) {
    assert(order[j] >= 0 && order[j] < pairs);
    rowOfPair[static_cast<size_t>(order[j])] = static_cast<int32_t>(j);
  }
  pool.parallelFor(
      params.tokens, std::max<int64_t>(1, 4096 / dim), [&](int64_t begin, int64_t end) {
        std::vector<float> &acc = detail::threadBuffer(0, dim), &row = detail::threadBuffer(1, dim);
        for (int64_t t = begin; t < end; ++t) {
          std::fill(acc.begin(), acc.end(), 0.0f);
          for (int64_t slot = 0; slot < k; ++slot) {
            int64_t j = rowOfPair[static_cast<size_t>(t * k + slot)];
            detail::halfToFloat(in + j * dim, row.data(), dim);
            detail::axpy(weights[t * k + slot], row.data(), acc.data(), dim);
          }
          uint16_t *o = out + t * dim;
          // Rounded to FP16 by the batch conversion (the scalar one's bits).
          if (params.accumulate) {
            detail::halfToFloat(o, row.data(), dim);
            for (int64_t i = 0; i < dim; ++i)
              acc[static_cast<size_t>(i)] += row[static_cast<size_t>(i)];
          }
          detail::floatToHalf(acc.data(), o, dim);
        }
      });
}

} // namespace volt::cpu
