//===- RouterTies.h - MoE routing near-ties when comparing backends -*- C++ -*-===//
//
// The rule both end-to-end comparisons of the cuda backend with the cpu
// backend apply (tests/gpu/EndToEndTest.cpp on a GPU, tests/unit/cudasim on
// the host), in one place.
//
// MoE routing is discontinuous: where a token's k-th and (k+1)-th router
// logits nearly tie, the FP16 activations feeding the router, which differ
// between any two correct implementations by an ulp or two (2^-11 each),
// can pick different experts, and the row's logits then differ by far more
// than rounding. Each step records, per token, the smallest such gap over
// every MoE layer (RouterGaps: from the cpu backend's router ops through
// its op observer, or from the device's router launches); a row whose own
// token's gap is below kRouterTie is counted, not compared, and at most a
// tenth of the rows may be; a failed comparison says how close the
// sequence's routing came to a tie.
//
// With recurrent state a swap does not stay in its own row: the state
// carries it into every later token of the sequence. RouterGaps therefore
// also keeps, per token, a digest of the experts chosen in every MoE layer
// (the top k of the router logits each side's router read); where the two
// sides' digests differ, the sequence's later rows are not compared.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/executor/CpuBackend.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace volt::testing {

/// A row whose own token's routing had its k-th and (k+1)-th router logits
/// closer than this (relative) is on a knife-edge: counted, not compared
/// (as greedy tokens are compared only where the top two logits are apart).
constexpr double kRouterTie = 2e-3;

/// The gap between the k-th and (k+1)-th largest of `row` (one token's
/// router logits), relative: (kth - next) / max(1, |kth|). Infinity where
/// nothing could swap (top_k 0 or every expert chosen).
inline double topKGap(std::span<const float> row, uint32_t topK) {
  if (topK == 0 || topK >= row.size())
    return std::numeric_limits<double>::infinity();
  std::vector<float> sorted(row.begin(), row.end());
  std::nth_element(sorted.begin(), sorted.begin() + topK, sorted.end(), std::greater<float>());
  const double kth = *std::min_element(sorted.begin(), sorted.begin() + topK);
  return (kth - static_cast<double>(sorted[topK])) / std::max(1.0, std::fabs(kth));
}

/// Per token of a step, the smallest topKGap over the router logits
/// recorded since clear(). record() may be called from several threads at
/// once (the cpu backend's ranks); the rest between steps.
class RouterGaps {
public:
  /// Lowers the gaps of tokens 0..tokens-1 by those of `logits`
  /// (f32[tokens, experts], row-major).
  void record(std::span<const float> logits, size_t tokens, uint32_t experts, uint32_t topK) {
    if (topK == 0 || topK >= experts)
      return; // nothing could swap
    tokens = std::min<size_t>(tokens, logits.size() / experts);
    std::lock_guard<std::mutex> lock(mutex_);
    if (gaps_.size() < tokens) {
      gaps_.resize(tokens, std::numeric_limits<double>::infinity());
      routes_.resize(tokens, 0);
    }
    for (size_t t = 0; t < tokens; ++t) {
      const std::span<const float> row = logits.subspan(t * experts, experts);
      gaps_[t] = std::min(gaps_[t], topKGap(row, topK));
      routes_[t] += chosenDigest(row, topK);
    }
  }
  void clear() {
    gaps_.clear();
    routes_.clear();
  }
  /// Whether token `t` went to the same experts in every MoE layer here as
  /// in `other` (the layers may have been recorded in any order, by any
  /// number of ranks, as long as both sides had the same).
  bool sameRoute(const RouterGaps &other, size_t t) const { return route(t) == other.route(t); }
  /// Token `t`'s digest of its experts over the layers (0: none recorded).
  uint64_t route(size_t t) const { return t < routes_.size() ? routes_[t] : 0; }
  /// Tokens recorded (0: no MoE layer ran since clear()).
  size_t size() const { return gaps_.size(); }
  /// The smallest gap of tokens [first, end) (infinity: none recorded).
  double smallest(size_t first, size_t end) const {
    double gap = std::numeric_limits<double>::infinity();
    for (size_t t = first; t < end && t < gaps_.size(); ++t)
      gap = std::min(gap, gaps_[t]);
    return gap;
  }
  /// Whether token `row`'s routing sits on a near tie (gap below `tie`).
  bool onTie(size_t row, double tie = kRouterTie) const { return smallest(row, row + 1) < tie; }

private:
  /// A digest of the set of the top k of `row` (order-free: the layers'
  /// digests are summed).
  static uint64_t chosenDigest(std::span<const float> row, uint32_t topK) {
    std::vector<uint32_t> ids(row.size());
    for (uint32_t e = 0; e < ids.size(); ++e)
      ids[e] = e;
    std::nth_element(ids.begin(), ids.begin() + topK, ids.end(),
                     [&](uint32_t a, uint32_t b) { return row[a] > row[b]; });
    std::sort(ids.begin(), ids.begin() + topK);
    uint64_t h = 1469598103934665603ull; // FNV-1a over the sorted ids
    for (uint32_t i = 0; i < topK; ++i) {
      h ^= ids[i];
      h *= 1099511628211ull;
    }
    return h;
  }

  std::mutex mutex_;
  std::vector<double> gaps_;
  std::vector<uint64_t> routes_;
};

/// Installs on `cpu` an op observer recording every MoeRouter op's logits
/// (its first operand, f32[T, num_experts]), on every rank, into `gaps`,
/// which must outlive the observer (or cpu.setOpObserver({}) first).
inline void observeRouterGaps(executor::CpuBackend &cpu, RouterGaps &gaps) {
  cpu.setOpObserver([&gaps](const executor::OpObservation &seen) {
    if (seen.kind != plan::OpKind::MoeRouter || seen.operands.empty())
      return;
    const plan::MoeRouterParams *params = seen.op->params_as_MoeRouterParams();
    std::span<const uint8_t> bytes = seen.operands[0];
    gaps.record({reinterpret_cast<const float *>(bytes.data()), bytes.size() / sizeof(float)},
                static_cast<size_t>(seen.numTokens), params->num_experts(), params->top_k());
  });
}

/// What a failed comparison should say about a gap from RouterGaps
/// (the smallest of the sequence's tokens in the step); empty for none.
inline std::string routerTieNote(double gap) {
  if (std::isinf(gap))
    return "";
  return "\n(the closest MoE routing of its tokens in this step: router logits " +
         std::to_string(gap) +
         " apart at the top-k boundary, relative; a gap within rounding lets the backends pick "
         "different experts)";
}

/// Whether `onTies` rows counted, not compared, of `rows` in all are few
/// enough (at most a tenth) for the comparison to still mean something.
inline bool fewEnoughTies(size_t onTies, size_t rows) { return onTies * 10 <= rows; }

/// One row of logits, the cpu backend's against the GPU's, by the bound
/// both end-to-end tests use: FP16 activations through every layer, a few
/// FP16 ulps of the largest logit.
struct RowComparison {
  /// The largest |cpu logit| and the largest difference (infinity where
  /// either side is NaN), at vocabulary index worstAt.
  double scale = 0, diff = 0;
  int32_t worstAt = 0;
  /// 2 % of scale, plus 1e-3.
  double bound = 0;
  /// The greedy tokens of each side, the cpu row's largest logit, and
  /// whether the cpu row's top two logits are further apart than twice
  /// the bound (only then must the greedy tokens agree).
  int32_t cpuBest = 0, gpuBest = 0;
  double top = 0;
  bool greedyDecided = false;
};

inline RowComparison compareRow(std::span<const float> cpu, std::span<const float> gpu) {
  RowComparison c;
  for (size_t v = 0; v < cpu.size(); ++v) {
    c.scale = std::max(c.scale, std::fabs(static_cast<double>(cpu[v])));
    double d = std::fabs(static_cast<double>(cpu[v]) - gpu[v]);
    if (std::isnan(d))
      d = std::numeric_limits<double>::infinity();
    if (d > c.diff) {
      c.diff = d;
      c.worstAt = static_cast<int32_t>(v);
    }
  }
  c.bound = 2e-2 * c.scale + 1e-3;
  c.cpuBest = static_cast<int32_t>(std::max_element(cpu.begin(), cpu.end()) - cpu.begin());
  c.gpuBest = static_cast<int32_t>(std::max_element(gpu.begin(), gpu.end()) - gpu.begin());
  std::vector<float> sorted(cpu.begin(), cpu.end());
  if (sorted.size() >= 2) {
    std::nth_element(sorted.begin(), sorted.begin() + 1, sorted.end(), std::greater<float>());
    c.greedyDecided = sorted[0] - sorted[1] > 2 * c.bound;
  }
  c.top = sorted.empty() ? 0 : sorted[0];
  return c;
}

} // namespace volt::testing
