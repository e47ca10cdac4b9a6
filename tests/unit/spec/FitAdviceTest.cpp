// Fit advice: every change findFits lists fits when planned again, and is
// the mildest of its kind. The planner here is arithmetic shaped like the
// compiler's memory plan (weights and KV heads split by tensor_parallel_size,
// an arena per batched token, a state slot per sequence, an NCCL reserve
// from TP 2); voltc's own planner is checked end to end in
// tests/lit/voltc/compile-does-not-fit*.test.
#include "compiler/driver/FitAdvice.h"
#include "compiler/spec/Sku.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace volt::driver {
namespace {

constexpr int64_t GiB = 1ll << 30;
constexpr int64_t MiB = 1ll << 20;

struct Shape {
  int64_t weights = 0;        ///< all ranks together
  int64_t kvPerToken = 0;     ///< all ranks together
  int64_t arenaPerToken = 0;  ///< per rank
  int64_t statePerSeq = 0;    ///< all ranks together
  int maxTensorParallel = 4;  ///< 8 does not divide the heads
  int64_t context = 512 * MiB;
  int64_t nccl = 256 * MiB;
};

struct Planner {
  Shape shape;
  int calls = 0;

  Result<PlannedMemory> operator()(const spec::DeploySpec &s) {
    ++calls;
    const int tp = s.tensorParallelSize;
    if (tp > shape.maxTensorParallel)
      return Error("tensor_parallel_size " + std::to_string(tp) + " does not divide the heads");
    PlannedMemory p;
    p.budgetBytes = static_cast<int64_t>(static_cast<double>(s.sku.memoryBytes) * s.gpuMemoryUtilization);
    p.kvBlockSize = 16;
    p.kvBlockBytes = 16 * shape.kvPerToken / tp;
    p.blocksPerSeq = (*s.maxModelLen + 15) / 16;
    p.weightBytes = shape.weights / tp;
    p.stateBytes = s.maxNumSeqs * shape.statePerSeq / tp;
    p.kvBudgetBytes = p.budgetBytes - shape.context - (tp > 1 ? shape.nccl : 0) - p.weightBytes -
                      shape.arenaPerToken * s.maxNumBatchedTokens - p.stateBytes;
    p.fits = p.kvBudgetBytes >= p.blocksPerSeq * p.kvBlockBytes;
    return p;
  }
};

spec::Sku sku(const std::string &name, int64_t memory, spec::Arch arch = spec::Arch::Sm70) {
  spec::Sku s;
  s.name = name;
  s.memoryBytes = static_cast<uint64_t>(memory);
  s.arch = arch;
  return s;
}

FitOptions skus() {
  FitOptions o;
  o.skus = {sku("v100-pcie-16gb", 16 * GiB), sku("v100-sxm2-32gb", 32 * GiB),
            sku("v100-pcie-32gb", 32 * GiB), sku("a100-80gb", 80 * GiB, spec::Arch::Sm80)};
  return o;
}

spec::DeploySpec deployment(int64_t maxModelLen) {
  spec::DeploySpec s;
  s.target = "v100-pcie-16gb";
  s.sku = sku("v100-pcie-16gb", 16 * GiB);
  s.maxModelLen = maxModelLen;
  return s;
}

std::vector<FitChange> advise(const spec::DeploySpec &s, Planner &planner) {
  auto failed = planner(s);
  EXPECT_TRUE(failed.ok());
  EXPECT_FALSE(failed->fits);
  planner.calls = 0;
  return findFits(s, *failed, [&](const spec::DeploySpec &x) { return planner(x); }, skus());
}

/// The spec with a change applied, for planning it again here.
spec::DeploySpec apply(spec::DeploySpec s, const FitChange &change, const FitOptions &options) {
  for (const auto &[key, value] : change.keys) {
    if (key == "tensor_parallel_size")
      s.tensorParallelSize = std::stoi(value);
    else if (key == "max_model_len")
      s.maxModelLen = std::stoll(value);
    else if (key == "max_num_batched_tokens")
      s.maxNumBatchedTokens = std::stoll(value);
    else if (key == "max_num_seqs")
      s.maxNumSeqs = std::stoll(value);
    else if (key == "gpu_memory_utilization")
      s.gpuMemoryUtilization = std::stod(value);
    else if (key == "target") {
      for (const spec::Sku &k : options.skus)
        if (k.name == value)
          s.sku = k;
      s.target = value;
    } else
      ADD_FAILURE() << "unexpected key " << key;
  }
  return s;
}

std::vector<std::string> keysOf(const std::vector<FitChange> &fits) {
  std::vector<std::string> keys;
  for (const FitChange &f : fits) {
    std::string k;
    for (const auto &kv : f.keys)
      k += (k.empty() ? "" : "+") + kv.first + "=" + kv.second;
    keys.push_back(k);
  }
  return keys;
}

void expectEachFits(const spec::DeploySpec &s, const std::vector<FitChange> &fits, Planner planner) {
  for (const FitChange &f : fits) {
    auto p = planner(apply(s, f, skus()));
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(p->fits) << keysOf({f})[0];
    EXPECT_EQ(p->kvBudgetBytes, f.plan.kvBudgetBytes) << keysOf({f})[0];
  }
}

// The case: the weights alone exceed one 16 GB card. Neither a
// smaller arena nor 0.95 of the memory helps; TP 2 and a 32 GB card do.
TEST(FitAdvice, WeightsTooLargeForOneCard) {
  Planner planner{{.weights = static_cast<int64_t>(16.85 * GiB), .kvPerToken = 96 * 1024,
                   .arenaPerToken = 64 * 1024}};
  spec::DeploySpec s = deployment(40960);
  auto fits = advise(s, planner);
  EXPECT_THAT(keysOf(fits),
              ::testing::ElementsAre("tensor_parallel_size=2", "target=v100-pcie-32gb"));
  expectEachFits(s, fits, planner);
  EXPECT_LE(planner.calls, 12);
  std::string text = formatFitAdvice(s, fits);
  EXPECT_THAT(text, ::testing::HasSubstr("what would make it fit (each change re-planned):"));
  EXPECT_THAT(text, ::testing::HasSubstr("tensor_parallel_size: 2"));
  EXPECT_THAT(text, ::testing::HasSubstr("GiB for the KV cache per GPU"));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("gpu_memory_utilization")));
}

// Only the KV cache is short: the longest max_model_len that fits is found
// (a multiple of 1024 from 8192), and one 1024 longer does not fit.
TEST(FitAdvice, LongestContextIsTheLongest) {
  Planner planner{{.weights = 10 * GiB, .kvPerToken = 256 * 1024, .arenaPerToken = 64 * 1024}};
  spec::DeploySpec s = deployment(40960);
  auto fits = advise(s, planner);
  ASSERT_FALSE(fits.empty());
  auto context = std::find_if(fits.begin(), fits.end(),
                              [](const FitChange &f) { return f.keys[0].first == "max_model_len"; });
  ASSERT_NE(context, fits.end());
  const int64_t len = std::stoll(context->keys[0].second);
  EXPECT_EQ(len % 1024, 0);
  EXPECT_GE(len, 8192);
  spec::DeploySpec longer = s;
  longer.maxModelLen = len + 1024;
  EXPECT_FALSE(planner(longer)->fits);
  expectEachFits(s, fits, planner);
  // 0.95 of the card is enough here, and is the smallest utilization that is.
  auto util = std::find_if(fits.begin(), fits.end(), [](const FitChange &f) {
    return f.keys[0].first == "gpu_memory_utilization";
  });
  if (util != fits.end()) {
    spec::DeploySpec less = s;
    less.gpuMemoryUtilization = std::stod(util->keys[0].second) - 0.01;
    EXPECT_FALSE(planner(less)->fits);
  }
}

// A smaller activation arena helps when the arena is what is short; the
// largest max_num_batched_tokens that fits is the one listed.
TEST(FitAdvice, SmallerArena) {
  Planner planner{{.weights = 12 * GiB, .kvPerToken = 16 * 1024, .arenaPerToken = 1 * MiB}};
  spec::DeploySpec s = deployment(4096);
  s.maxNumBatchedTokens = 2048;
  auto fits = advise(s, planner);
  auto arena = std::find_if(fits.begin(), fits.end(), [](const FitChange &f) {
    return f.keys[0].first == "max_num_batched_tokens";
  });
  ASSERT_NE(arena, fits.end());
  spec::DeploySpec twice = s;
  twice.maxNumBatchedTokens = std::stoll(arena->keys[0].second) * 2;
  EXPECT_FALSE(planner(twice)->fits);
  expectEachFits(s, fits, planner);
}

// A model with recurrent state: fewer sequences leave room for the KV.
TEST(FitAdvice, FewerSequencesForStatefulModels) {
  Planner planner{{.weights = 10 * GiB, .kvPerToken = 64 * 1024, .arenaPerToken = 64 * 1024,
                   .statePerSeq = 60 * MiB}};
  spec::DeploySpec s = deployment(32768);
  s.maxNumSeqs = 64;
  auto fits = advise(s, planner);
  auto seqs = std::find_if(fits.begin(), fits.end(),
                           [](const FitChange &f) { return f.keys[0].first == "max_num_seqs"; });
  ASSERT_NE(seqs, fits.end());
  spec::DeploySpec more = s;
  more.maxNumSeqs = std::stoll(seqs->keys[0].second) + 1;
  EXPECT_FALSE(planner(more)->fits);
  expectEachFits(s, fits, planner);
}

// No single change is enough: pairs of a larger tensor_parallel_size (or
// SKU) with the longest context that then fits.
TEST(FitAdvice, PairsWhenNoSingleChangeFits) {
  Planner planner{{.weights = 40 * GiB, .kvPerToken = 1 * MiB, .arenaPerToken = 64 * 1024}};
  spec::DeploySpec s = deployment(131072);
  auto fits = advise(s, planner);
  ASSERT_FALSE(fits.empty());
  for (const FitChange &f : fits)
    EXPECT_EQ(f.keys.size(), 2u) << keysOf({f})[0];
  EXPECT_EQ(fits[0].keys[0], (std::pair<std::string, std::string>{"tensor_parallel_size", "4"}));
  EXPECT_EQ(fits[0].keys[1].first, "max_model_len");
  expectEachFits(s, fits, planner);
}

TEST(FitAdvice, NothingFits) {
  Planner planner{{.weights = 400 * GiB, .kvPerToken = 1024, .arenaPerToken = 1024}};
  spec::DeploySpec s = deployment(4096);
  auto fits = advise(s, planner);
  EXPECT_TRUE(fits.empty());
  EXPECT_THAT(formatFitAdvice(s, fits), ::testing::HasSubstr("nothing re-planned fits"));
}

// A candidate the planner refuses (TP 8 here) is left out, never listed.
TEST(FitAdvice, InvalidCandidatesAreLeftOut) {
  Planner planner{{.weights = 40 * GiB, .kvPerToken = 1024, .arenaPerToken = 1024,
                   .maxTensorParallel = 2}};
  spec::DeploySpec s = deployment(4096);
  auto fits = advise(s, planner);
  EXPECT_THAT(keysOf(fits),
              ::testing::ElementsAre("target=v100-pcie-32gb+tensor_parallel_size=2"));
  for (const FitChange &f : fits)
    for (const auto &kv : f.keys)
      if (kv.first == "tensor_parallel_size")
        EXPECT_EQ(kv.second, "2");
  expectEachFits(s, fits, planner);
}

} // namespace
} // namespace volt::driver
