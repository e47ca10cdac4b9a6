//===- FitAdvice.cpp ------------------------------------------------------===//
#include "compiler/driver/FitAdvice.h"

#include "compiler/spec/Sku.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

namespace volt::driver {
namespace {

constexpr int kTensorParallelSizes[] = {2, 4, 8};
/// The highest gpu_memory_utilization advised: above it, the driver's own
/// allocations and fragmentation leave too little margin.
constexpr double kMaxUtilization = 0.95;
/// A max_model_len shorter than this is no advice to serve a model with.
constexpr int64_t kShortestContext = 256;

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

/// Length of the common prefix of two SKU names: "v100-pcie-16gb" is
/// closer to "v100-pcie-32gb" than to "v100-sxm2-32gb".
size_t commonPrefix(const std::string &a, const std::string &b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n])
    ++n;
  return n;
}

class Search {
public:
  Search(const spec::DeploySpec &spec, const MemoryPlanner &plan) : spec_(spec), plan_(plan) {}

  /// The plan of `s`, or nothing when the spec is not valid for the model.
  std::optional<PlannedMemory> planOf(const spec::DeploySpec &s) const {
    auto r = plan_(s);
    if (!r)
      return std::nullopt;
    return *r;
  }

  /// The longest max_model_len at which `s` fits, from the plan `p` of `s`
  /// at a length that does not fit; verified by re-planning.
  std::optional<FitChange> longestContext(spec::DeploySpec s, PlannedMemory p) const {
    const int64_t wanted = *s.maxModelLen;
    for (int attempt = 0; attempt < 6; ++attempt) {
      if (p.kvBudgetBytes <= 0 || p.kvBlockBytes <= 0 || p.kvBlockSize <= 0)
        return std::nullopt;
      int64_t len = p.kvBudgetBytes / p.kvBlockBytes * p.kvBlockSize;
      // Round numbers where they cost little: a multiple of 1024 from 8192.
      if (len >= 8192)
        len = len / 1024 * 1024;
      len = std::min(len, *s.maxModelLen - 1);
      if (len < std::min(kShortestContext, wanted))
        return std::nullopt;
      s.maxModelLen = len;
      auto r = planOf(s);
      if (!r)
        return std::nullopt;
      if (r->fits)
        return FitChange{{{"max_model_len", std::to_string(len)}}, *r, len};
      p = *r;
    }
    return std::nullopt;
  }

  /// The smallest larger tensor_parallel_size that fits on its own; the
  /// plans of those that are valid but do not fit go to `valid`.
  std::optional<FitChange>
  tensorParallel(std::vector<std::pair<int, PlannedMemory>> &valid) const {
    for (int tp : kTensorParallelSizes) {
      if (tp <= spec_.tensorParallelSize)
        continue;
      spec::DeploySpec s = spec_;
      s.tensorParallelSize = tp;
      auto r = planOf(s);
      if (!r)
        continue;
      if (r->fits)
        return FitChange{{{"tensor_parallel_size", std::to_string(tp)}}, *r, *s.maxModelLen};
      valid.push_back({tp, *r});
    }
    return std::nullopt;
  }

  /// The largest smaller max_num_batched_tokens (halving, down to
  /// max_num_seqs) that fits.
  std::optional<FitChange> batchedTokens() const {
    const int64_t floor = std::max<int64_t>(spec_.maxNumSeqs, 16);
    for (int64_t v = spec_.maxNumBatchedTokens / 2; v >= floor; v /= 2) {
      spec::DeploySpec s = spec_;
      s.maxNumBatchedTokens = v;
      auto r = planOf(s);
      if (r && r->fits)
        return FitChange{{{"max_num_batched_tokens", std::to_string(v)}}, *r, *s.maxModelLen};
    }
    return std::nullopt;
  }

  /// The largest max_num_seqs whose recurrent state leaves room for one
  /// sequence's KV cache (models with state only).
  std::optional<FitChange> sequences(const PlannedMemory &failed) const {
    if (failed.stateBytes <= 0 || spec_.maxNumSeqs <= 1)
      return std::nullopt;
    const int64_t perSeq = (failed.stateBytes + spec_.maxNumSeqs - 1) / spec_.maxNumSeqs;
    const int64_t deficit = failed.blocksPerSeq * failed.kvBlockBytes - failed.kvBudgetBytes;
    int64_t n = spec_.maxNumSeqs - (deficit + perSeq - 1) / perSeq;
    for (int attempt = 0; attempt < 4 && n >= 1; ++attempt, --n) {
      spec::DeploySpec s = spec_;
      s.maxNumSeqs = n;
      s.maxNumBatchedTokens = std::max(s.maxNumBatchedTokens, n);
      auto r = planOf(s);
      if (!r)
        return std::nullopt;
      if (r->fits)
        return FitChange{{{"max_num_seqs", std::to_string(n)}}, *r, *s.maxModelLen};
    }
    return std::nullopt;
  }

  /// The smallest gpu_memory_utilization, in hundredths up to 0.95, at
  /// which the deployment fits.
  std::optional<FitChange> utilization(const PlannedMemory &failed) const {
    const double memory = static_cast<double>(spec_.sku.memoryBytes);
    if (memory <= 0)
      return std::nullopt;
    const int64_t needed =
        failed.budgetBytes - failed.kvBudgetBytes + failed.blocksPerSeq * failed.kvBlockBytes;
    double u = std::ceil(static_cast<double>(needed) / memory * 100.0) / 100.0;
    for (int attempt = 0; attempt < 2; ++attempt, u += 0.01) {
      if (u > kMaxUtilization + 1e-9 || u <= spec_.gpuMemoryUtilization)
        return std::nullopt;
      spec::DeploySpec s = spec_;
      s.gpuMemoryUtilization = u;
      auto r = planOf(s);
      if (!r)
        return std::nullopt;
      if (r->fits) {
        char text[16];
        std::snprintf(text, sizeof text, "%.2f", u);
        return FitChange{{{"gpu_memory_utilization", text}}, *r, *s.maxModelLen};
      }
    }
    return std::nullopt;
  }

  /// SKUs of the target's architecture with more memory, nearest first.
  std::vector<spec::Sku> largerSkus(const FitOptions &options) const {
    std::vector<spec::Sku> all = options.skus;
    if (all.empty())
      for (const std::string &name : spec::builtinSkuNames())
        if (auto sku = spec::loadSku(name, {}))
          all.push_back(*sku);
    std::vector<spec::Sku> larger;
    for (const spec::Sku &sku : all)
      if (sku.arch == spec_.sku.arch && sku.memoryBytes > spec_.sku.memoryBytes)
        larger.push_back(sku);
    std::sort(larger.begin(), larger.end(), [&](const spec::Sku &a, const spec::Sku &b) {
      if (a.memoryBytes != b.memoryBytes)
        return a.memoryBytes < b.memoryBytes;
      size_t pa = commonPrefix(a.name, spec_.sku.name), pb = commonPrefix(b.name, spec_.sku.name);
      if (pa != pb)
        return pa > pb;
      return a.name < b.name;
    });
    return larger;
  }

  static spec::DeploySpec withSku(spec::DeploySpec s, const spec::Sku &sku) {
    s.target = sku.name;
    s.sku = sku;
    return s;
  }

private:
  const spec::DeploySpec &spec_;
  const MemoryPlanner &plan_;
};

} // namespace

std::vector<FitChange> findFits(const spec::DeploySpec &spec, const PlannedMemory &failed,
                                const MemoryPlanner &plan, const FitOptions &options) {
  Search search(spec, plan);
  std::vector<FitChange> fits;
  auto add = [&](std::optional<FitChange> change) {
    if (change)
      fits.push_back(std::move(*change));
  };

  std::vector<std::pair<int, PlannedMemory>> validTensorParallel;
  add(search.tensorParallel(validTensorParallel));
  add(search.longestContext(spec, failed));
  add(search.batchedTokens());
  add(search.sequences(failed));
  add(search.utilization(failed));
  const std::vector<spec::Sku> skus = search.largerSkus(options);
  std::vector<std::pair<spec::Sku, PlannedMemory>> validSkus;
  for (const spec::Sku &sku : skus) {
    spec::DeploySpec s = Search::withSku(spec, sku);
    auto r = search.planOf(s);
    if (!r)
      continue;
    if (r->fits) {
      fits.push_back(FitChange{{{"target", sku.name}}, *r, *s.maxModelLen});
      break;
    }
    validSkus.push_back({sku, *r});
  }
  if (!fits.empty())
    return fits;

  // No single change is enough: a larger tensor_parallel_size or SKU with
  // the longest context that then fits, or both together.
  for (const auto &[tp, p] : validTensorParallel) {
    spec::DeploySpec s = spec;
    s.tensorParallelSize = tp;
    if (auto change = search.longestContext(s, p)) {
      change->keys.insert(change->keys.begin(), {"tensor_parallel_size", std::to_string(tp)});
      fits.push_back(std::move(*change));
    }
  }
  for (const auto &[sku, p] : validSkus) {
    if (auto change = search.longestContext(Search::withSku(spec, sku), p)) {
      change->keys.insert(change->keys.begin(), {"target", sku.name});
      fits.push_back(std::move(*change));
      break;
    }
  }
  for (const auto &[sku, p] : validSkus) {
    bool found = false;
    for (const auto &[tp, q] : validTensorParallel) {
      spec::DeploySpec s = Search::withSku(spec, sku);
      s.tensorParallelSize = tp;
      auto r = search.planOf(s);
      if (r && r->fits) {
        fits.push_back(FitChange{{{"target", sku.name}, {"tensor_parallel_size", std::to_string(tp)}},
                                 *r,
                                 *s.maxModelLen});
        found = true;
        break;
      }
    }
    if (found)
      break;
  }
  return fits;
}

std::string formatFitAdvice(const spec::DeploySpec &spec, const std::vector<FitChange> &fits) {
  if (fits.empty())
    return "nothing re-planned fits: no larger tensor_parallel_size, shorter max_model_len, "
           "smaller max_num_batched_tokens or max_num_seqs, gpu_memory_utilization up to 0.95 or "
           "" +
           std::string(spec::archName(spec.sku.arch)) +
           " SKU with more memory, alone or paired, leaves room for one sequence";
  std::string text = "what would make it fit (each change re-planned):";
  for (const FitChange &f : fits) {
    std::string keys;
    for (const auto &[k, v] : f.keys)
      keys += (keys.empty() ? "" : ", ") + k + ": " + v;
    const int64_t perSeq = f.plan.blocksPerSeq * f.plan.kvBlockBytes;
    char line[256];
    std::snprintf(line, sizeof line, "\n  %-46s → %s for the KV cache per GPU (%.1f sequences of %lld tokens)",
                  keys.c_str(), gib(f.plan.kvBudgetBytes).c_str(),
                  perSeq > 0 ? static_cast<double>(f.plan.kvBudgetBytes) / static_cast<double>(perSeq)
                             : 0.0,
                  static_cast<long long>(f.maxModelLen));
    text += line;
  }
  return text;
}

} // namespace volt::driver
