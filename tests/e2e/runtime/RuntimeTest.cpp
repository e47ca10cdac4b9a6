// End to end on the cpu backend: plans compiled from synthetic models give
// the same greedy tokens at tensor_parallel_size 1, 2 and 4, alone or
// batched with other requests, prefilled in one step or in chunks; and the
// cpu backend's op observer.
#include "PlanFixture.h"
#include "runtime/plan/Caches.h"

#include "runtime/executor/CpuBackend.h"
#include "runtime/support/HugePages.h"
#include "runtime/serving/Generate.h"
#include "runtime/serving/Session.h"

#include <cmath>
#include <gtest/gtest.h>
#include <mutex>
#include <numeric>
#include <thread>

namespace volt {
namespace {

using testing::compilePlan;
using testing::PlanRequest;

/// Prompt ids inside the tiny models' 512-token vocabulary.
std::vector<int32_t> prompt(int n, int seed = 0) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    ids[static_cast<size_t>(i)] = (i * 37 + seed * 101 + 11) % 500;
  return ids;
}

std::unique_ptr<serving::Session> open(const std::filesystem::path &plan) {
  auto s = serving::Session::open(plan);
  EXPECT_TRUE(s.ok()) << s.message();
  return s.ok() ? std::move(*s) : nullptr;
}

engine::SamplingParams greedy(int maxTokens) {
  engine::SamplingParams p;
  p.temperature = 0.0f;
  p.maxTokens = maxTokens;
  p.ignoreEos = true;
  return p;
}

std::vector<int32_t> generateGreedy(const std::filesystem::path &plan,
                                    const std::vector<int32_t> &ids, int maxTokens) {
  auto s = open(plan);
  if (!s)
    return {};
  auto g = serving::generate(*s, ids, greedy(maxTokens));
  EXPECT_TRUE(g.ok()) << g.message();
  return g.ok() ? g->tokens : std::vector<int32_t>{};
}

/// The logits of one prefill of `ids` (one sequence, blocks 0..), straight
/// through the backend.
std::vector<float> prefillLogits(const std::filesystem::path &planPath,
                                 const std::vector<int32_t> &ids,
                                 const executor::CpuBackendOptions &options = {},
                                 std::string *weightsDescription = nullptr) {
  auto loaded = plan::LoadedPlan::load(planPath);
  EXPECT_TRUE(loaded.ok()) << loaded.message();
  auto backend = executor::CpuBackend::create(**loaded, options);
  EXPECT_TRUE(backend.ok()) << backend.message();
  if (weightsDescription)
    *weightsDescription = (*backend)->weightsDescription();
  const plan::Plan &p = (*loaded)->plan();
  int32_t blockSize = static_cast<int32_t>(plan::pagedKvGroup(*p.ranks()->Get(0))->block_size());
  int32_t width = static_cast<int32_t>(p.limits()->max_blocks_per_seq());
  int32_t n = static_cast<int32_t>(ids.size());
  std::vector<int32_t> positions(ids.size()), slots(ids.size()),
      starts = {0, n}, lens = {n}, table(static_cast<size_t>(width), 0), rows = {n - 1};
  std::iota(positions.begin(), positions.end(), 0);
  std::iota(slots.begin(), slots.end(), 0);
  for (int32_t b = 0; b < width; ++b)
    table[static_cast<size_t>(b)] = b;
  engine::StepBatch batch;
  batch.numTokens = n;
  batch.numSeqs = 1;
  batch.maxBlocksPerSeq = width;
  batch.tokens = ids;
  batch.positions = positions;
  batch.slotMapping = slots;
  batch.seqStarts = starts;
  batch.contextLens = lens;
  batch.blockTables = table;
  batch.logitsRows = rows;
  (void)blockSize;
  std::vector<float> logits(p.model()->vocab_size());
  auto st = (*backend)->runStep(batch, logits);
  EXPECT_TRUE(st.ok()) << st.message();
  return logits;
}

class EveryFamily : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryFamily, TensorParallelRanksAgree) {
  std::vector<int32_t> ids = prompt(24);
  PlanRequest r;
  r.family = GetParam();
  std::vector<float> one = prefillLogits(compilePlan(r), ids);
  std::vector<int32_t> tokensOne = generateGreedy(compilePlan(r), ids, 24);
  ASSERT_EQ(tokensOne.size(), 24u);
  float scale = 0.0f;
  for (float v : one)
    scale = std::max(scale, std::fabs(v));
  for (int tp : {2, 4}) {
    r.tensorParallelSize = tp;
    std::vector<float> split = prefillLogits(compilePlan(r), ids);
    ASSERT_EQ(split.size(), one.size());
    float worst = 0.0f;
    for (size_t i = 0; i < one.size(); ++i)
      worst = std::max(worst, std::fabs(split[i] - one[i]));
    // The ranks' partial sums are rounded to FP16 before the all-reduce
    // adds them, where one rank rounds the whole sum once: a few FP16 ulps
    // of each branch per layer, far below the logits' spread.
    EXPECT_LE(worst, 0.01f * scale) << "tp=" << tp << " max |logit| " << scale;
    EXPECT_EQ(generateGreedy(compilePlan(r), ids, 24), tokensOne) << "tp=" << tp;
  }
}

INSTANTIATE_TEST_SUITE_P(Runtime, EveryFamily,
                         ::testing::Values("qwen3-moe", "qwen2-moe", "mixtral", "qwen3", "llama"),
                         [](const auto &info) {
                           std::string n = info.param;
                           for (char &c : n)
                             if (c == '-')
                               c = '_';
                           return n;
                         });

TEST(Runtime, WeightsInHugePagesAndMappedGiveTheSameLogits) {
  // Where the weights are read from changes nothing but the speed: the
  // same logits bit for bit, on one rank and two.
  for (int tp : {1, 2}) {
    PlanRequest r;
    r.tensorParallelSize = tp;
    auto planPath = compilePlan(r);
    std::string mappedWhy, copiedWhy, autoWhy;
    std::vector<float> mapped =
        prefillLogits(planPath, prompt(19), {.weights = cpu::WeightMemory::Mapped}, &mappedWhy);
    std::vector<float> copied =
        prefillLogits(planPath, prompt(19), {.weights = cpu::WeightMemory::HugePages}, &copiedWhy);
    std::vector<float> automatic =
        prefillLogits(planPath, prompt(19), {.weights = cpu::WeightMemory::Auto}, &autoWhy);
    ASSERT_FALSE(mapped.empty());
    EXPECT_EQ(copied, mapped) << "tp " << tp;
    EXPECT_EQ(automatic, mapped) << "tp " << tp;
    EXPECT_EQ(mappedWhy, "weights read in place from the mapped packs (as asked)");
    EXPECT_TRUE(copiedWhy.starts_with("weights in huge pages (")) << copiedWhy;
    // Auto copies where the kernel has transparent huge pages, and says
    // why not elsewhere.
    const bool thp = transparentHugePages() == TransparentHugePages::Always ||
                     transparentHugePages() == TransparentHugePages::Madvise;
    EXPECT_TRUE(autoWhy.starts_with(thp ? "weights in huge pages ("
                                        : "weights read in place from the mapped packs ("))
        << autoWhy;
  }
}

TEST(Runtime, EveryFormatRuns) {
  for (auto format : {mkmodel::Format::CompressedTensors, mkmodel::Format::BF16}) {
    PlanRequest r;
    r.format = format;
    r.tensorParallelSize = 2;
    EXPECT_EQ(generateGreedy(compilePlan(r), prompt(10), 8).size(), 8u)
        << mkmodel::formatName(format);
  }
}

TEST(Runtime, BatchingDoesNotChangeGreedyOutput) {
  PlanRequest r;
  r.family = "qwen2-moe";
  auto planPath = compilePlan(r);
  const int n = 17;
  std::vector<std::vector<int32_t>> alone;
  for (int i = 0; i < n; ++i)
    alone.push_back(generateGreedy(planPath, prompt(5 + i * 3, i), 16));

  auto s = open(planPath);
  ASSERT_NE(s, nullptr);
  std::vector<std::vector<int32_t>> together(n);
  for (int i = 0; i < n; ++i) {
    engine::Request request;
    request.promptTokens = prompt(5 + i * 3, i);
    request.sampling = greedy(16);
    request.onOutput = [&together, i](const engine::RequestOutput &out) {
      if (out.token)
        together[static_cast<size_t>(i)].push_back(*out.token);
    };
    ASSERT_TRUE(s->engine().submit(std::move(request)).ok());
  }
  ASSERT_TRUE(s->engine().runUntilIdle().ok());
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(together[static_cast<size_t>(i)], alone[static_cast<size_t>(i)]) << "request " << i;
  EXPECT_EQ(s->engine().stats().kvCache.usedBlocks, 0);
}

TEST(Runtime, TheCandidatePathGivesTheRowPathsGreedyTokens) {
  // The engine sampling from 64 candidates per sequence (the cuda
  // backend's path; here the cpu backend computes them with
  // cpu::topCandidates) against whole rows: the same greedy tokens for
  // every family at tp 1 and 2; sampled requests are reproducible and
  // mostly decided without rows.
  for (const char *family : {"qwen3-moe", "qwen2-moe", "mixtral", "qwen3"})
    for (int tp : {1, 2}) {
      PlanRequest r;
      r.family = family;
      r.tensorParallelSize = tp;
      auto planPath = compilePlan(r);
      std::vector<int32_t> tokens[2];
      for (int candidates : {0, 64}) {
        serving::SessionOptions options;
        options.backend = "cpu";
        options.cpuCandidates = candidates;
        auto s = serving::Session::open(planPath, options);
        ASSERT_TRUE(s.ok()) << s.message();
        auto g = serving::generate(**s, prompt(9, tp), greedy(24));
        ASSERT_TRUE(g.ok()) << g.message();
        tokens[candidates ? 1 : 0] = g->tokens;
        const engine::EngineStats stats = (*s)->engine().stats();
        EXPECT_EQ(stats.sampledFromCandidates, candidates ? 24u : 0u) << family << " tp " << tp;
        EXPECT_EQ(stats.rowsFetched, 0u);
      }
      EXPECT_EQ(tokens[0], tokens[1]) << family << " tp " << tp;
    }

  PlanRequest r;
  auto planPath = compilePlan(r);
  std::vector<int32_t> sampled[2];
  for (int run = 0; run < 2; ++run) {
    serving::SessionOptions options;
    options.backend = "cpu";
    options.cpuCandidates = 64;
    auto s = serving::Session::open(planPath, options);
    ASSERT_TRUE(s.ok()) << s.message();
    engine::SamplingParams p = greedy(32);
    p.temperature = 0.8f;
    p.topP = 0.9f;
    p.seed = 11;
    auto g = serving::generate(**s, prompt(7, 3), p);
    ASSERT_TRUE(g.ok()) << g.message();
    sampled[run] = g->tokens;
    const engine::EngineStats stats = (*s)->engine().stats();
    EXPECT_EQ(stats.sampledFromCandidates + stats.rowsFetched, 32u);
  }
  EXPECT_EQ(sampled[0], sampled[1]);
}

TEST(Runtime, CpuCandidatesAreCheckedAndRowsComeOnlyAfterACandidateStep) {
  auto loaded = plan::LoadedPlan::load(compilePlan(PlanRequest{}));
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  executor::CpuBackendOptions options;
  options.candidates = 48;
  auto bad = executor::CpuBackend::create(**loaded, options);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("sampling candidates: expected 0 or a power of two up to 256"),
            std::string::npos)
      << bad.message();
  options.candidates = 16;
  auto backend = executor::CpuBackend::create(**loaded, options);
  ASSERT_TRUE(backend.ok()) << backend.message();
  EXPECT_EQ((*backend)->candidatesPerSeq(), 16);
  const size_t vocab = (*loaded)->plan().model()->vocab_size();
  std::vector<float> row(vocab);
  const int32_t first = 0;
  Status early = (*backend)->fetchRows(std::span(&first, 1), row);
  ASSERT_FALSE(early.ok());
  EXPECT_NE(early.message().find("no step's rows to fetch"), std::string::npos) << early.message();
}

TEST(Runtime, LongContextChunkedPrefillMatchesOneStep) {
  // 600 prompt tokens cross 38 KV blocks of 16; a 64-token step budget
  // prefills them in 10 chunks.
  std::vector<int32_t> ids = prompt(600, 7);
  PlanRequest wide;
  wide.maxNumBatchedTokens = 1024;
  PlanRequest narrow;
  narrow.maxNumBatchedTokens = 64;
  narrow.maxNumSeqs = 16;
  auto a = generateGreedy(compilePlan(wide), ids, 16);
  auto b = generateGreedy(compilePlan(narrow), ids, 16);
  ASSERT_EQ(a.size(), 16u);
  EXPECT_EQ(a, b);
}

TEST(Runtime, RequestsBeyondTheLimitsAreRejected) {
  auto s = open(compilePlan(PlanRequest{}));
  ASSERT_NE(s, nullptr);
  engine::Request tooLong;
  tooLong.promptTokens = prompt(2100);
  tooLong.sampling = greedy(4);
  auto id = s->engine().submit(std::move(tooLong));
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.message().find("2048"), std::string::npos) << id.message();
  engine::Request badSampling;
  badSampling.promptTokens = prompt(4);
  badSampling.sampling.temperature = -1.0f;
  auto bad = s->engine().submit(std::move(badSampling));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("temperature"), std::string::npos) << bad.message();
}

} // namespace
} // namespace volt

namespace volt {
namespace {

double correlation(const std::vector<float> &a, const std::vector<float> &b) {
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ma += a[i];
    mb += b[i];
  }
  ma /= a.size();
  mb /= b.size();
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}

TEST(Runtime, QuantizingAnUnquantizedCheckpointToNvfp4) {
  // weights: {quantize: nvfp4} quantizes the BF16 linears at compile time;
  // the logits stay close to the BF16 plan's (NVFP4 rounding, not a
  // different model), and the packs shrink.
  testing::PlanRequest dense;
  dense.family = "llama";
  dense.format = mkmodel::Format::BF16;
  testing::PlanRequest quantized = dense;
  quantized.extra = "weights: {quantize: nvfp4}\n";
  auto densePlan = testing::compilePlan(dense), quantizedPlan = testing::compilePlan(quantized);
  std::vector<int32_t> ids = prompt(20, 3);
  double r = correlation(prefillLogits(densePlan, ids), prefillLogits(quantizedPlan, ids));
  EXPECT_GT(r, 0.9) << "correlation of BF16 and NVFP4 logits";
  EXPECT_LT(r, 1.0) << "the quantized plan must differ from the dense one";
  EXPECT_LT(std::filesystem::file_size(quantizedPlan.parent_path() / "weights.rank0.bin"),
            std::filesystem::file_size(densePlan.parent_path() / "weights.rank0.bin") * 2 / 3);
}

TEST(Runtime, Fp32ResidualStream) {
  testing::PlanRequest half;
  testing::PlanRequest full;
  full.extra = "residual_dtype: fp32\n";
  std::vector<int32_t> ids = prompt(20, 4);
  std::vector<float> a = prefillLogits(testing::compilePlan(half), ids);
  std::vector<float> b = prefillLogits(testing::compilePlan(full), ids);
  float scale = 0, worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::fabs(a[i]));
    worst = std::max(worst, std::fabs(a[i] - b[i]));
  }
  EXPECT_GT(worst, 0.0f) << "an FP32 residual stream rounds differently";
  EXPECT_LE(worst, 0.01f * scale);
}

/// One step of `seqs` sequences of `n` new tokens each (sequence s in
/// blocks s * width..), after `cached` tokens of each already in the cache.
struct ObserverStep {
  std::vector<int32_t> ids, positions, slots, starts{0}, lens, tables, rows;
  engine::StepBatch view(int32_t width) const {
    engine::StepBatch b;
    b.numTokens = static_cast<int32_t>(ids.size());
    b.numSeqs = static_cast<int32_t>(lens.size());
    b.maxBlocksPerSeq = width;
    b.tokens = ids;
    b.positions = positions;
    b.slotMapping = slots;
    b.seqStarts = starts;
    b.contextLens = lens;
    b.blockTables = tables;
    b.logitsRows = rows;
    return b;
  }
};

ObserverStep observerStep(int32_t seqs, int32_t n, int32_t cached, int32_t width,
                          int32_t blockSize) {
  ObserverStep st;
  for (int32_t s = 0; s < seqs; ++s) {
    for (int32_t p = cached; p < cached + n; ++p) {
      st.ids.push_back((p * 37 + s * 101 + 11) % 500);
      st.positions.push_back(p);
      st.slots.push_back((s * width + p / blockSize) * blockSize + p % blockSize);
    }
    st.starts.push_back(static_cast<int32_t>(st.ids.size()));
    st.lens.push_back(cached + n);
    st.rows.push_back(static_cast<int32_t>(st.ids.size()) - 1);
    for (int32_t b = 0; b < width; ++b)
      st.tables.push_back(s * width + b);
  }
  return st;
}

TEST(CpuBackendObserver, SeesEveryOpOfEveryRankInOrderAndTheRoutersChoices) {
  PlanRequest r;
  r.family = "qwen3-moe";
  r.tensorParallelSize = 2;
  auto loaded = plan::LoadedPlan::load(compilePlan(r));
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  const plan::Plan &p = (*loaded)->plan();
  auto backend = executor::CpuBackend::create(**loaded, {.threads = 2});
  ASSERT_TRUE(backend.ok()) << backend.message();
  const int32_t width = static_cast<int32_t>(p.limits()->max_blocks_per_seq());
  const int32_t blockSize =
      static_cast<int32_t>(plan::pagedKvGroup(*p.ranks()->Get(0))->block_size());

  struct Seen {
    uint32_t opIndex;
    plan::OpKind kind;
    int64_t tokens;
    bool onCaller;
  };
  std::mutex mutex;
  std::vector<std::vector<Seen>> seen(p.ranks()->size());
  // Per rank, the experts each router op chose, in op order.
  std::vector<std::vector<int32_t>> chosen(p.ranks()->size());
  size_t routers = 0, routerMismatches = 0, operandMismatches = 0;
  const std::thread::id caller = std::this_thread::get_id();
  const float *logitsAt = nullptr;
  size_t outputsAtLogits = 0;
  (*backend)->setOpObserver([&](const executor::OpObservation &o) {
    std::lock_guard<std::mutex> lock(mutex);
    seen[o.rank].push_back({o.opIndex, o.kind, o.numTokens, std::this_thread::get_id() == caller});
    const plan::Op *op = p.ranks()->Get(o.rank)->ops()->Get(o.opIndex);
    operandMismatches += o.op != op || o.operands.size() != op->operands()->size() ||
                         o.name != (op->name() ? op->name()->str() : "");
    for (size_t i = 0; i < o.operands.size(); ++i) {
      const plan::Operand *operand = op->operands()->Get(static_cast<unsigned>(i));
      if (operand->kind() == plan::OperandKind::Output)
        outputsAtLogits +=
            o.rank == 0 && reinterpret_cast<const float *>(o.operands[i].data()) == logitsAt;
      if (operand->kind() == plan::OperandKind::Arena) {
        const plan::Buffer *b = p.ranks()->Get(o.rank)->buffers()->Get(operand->index());
        operandMismatches +=
            o.operands[i].size() !=
            std::min(b->bytes(),
                     b->per_token_bytes() * static_cast<uint64_t>(o.numTokens) + b->fixed_bytes());
      }
    }
    if (o.kind != plan::OpKind::MoeRouter)
      return;
    // (logits f32[T, E]) -> (ids i32[T, k], weights): the k largest,
    // ties to the lower expert.
    ++routers;
    const plan::MoeRouterParams *params = o.op->params_as_MoeRouterParams();
    const uint32_t experts = params->num_experts(), k = params->top_k();
    const auto *logits = reinterpret_cast<const float *>(o.operands[0].data());
    const auto *ids = reinterpret_cast<const int32_t *>(o.operands[1].data());
    ASSERT_GE(o.operands[0].size(), o.numTokens * experts * sizeof(float));
    ASSERT_GE(o.operands[1].size(), o.numTokens * k * sizeof(int32_t));
    for (int64_t t = 0; t < o.numTokens; ++t) {
      std::vector<int32_t> order(experts);
      std::iota(order.begin(), order.end(), 0);
      const float *l = logits + t * experts;
      std::stable_sort(order.begin(), order.end(),
                       [&](int32_t a, int32_t b) { return l[a] > l[b]; });
      std::vector<int32_t> want(order.begin(), order.begin() + k),
          got(ids + t * k, ids + t * k + k);
      std::sort(want.begin(), want.end());
      std::sort(got.begin(), got.end());
      routerMismatches += want != got;
      chosen[o.rank].insert(chosen[o.rank].end(), got.begin(), got.end());
    }
  });

  const size_t vocab = p.model()->vocab_size();
  const std::vector<ObserverStep> steps = {observerStep(2, 9, 0, width, blockSize),
                                           observerStep(2, 1, 9, width, blockSize)};
  for (const ObserverStep &step : steps) {
    for (auto &r : seen)
      r.clear();
    std::vector<float> logits(step.lens.size() * vocab);
    logitsAt = logits.data();
    Status ran = (*backend)->runStep(step.view(width), logits);
    ASSERT_TRUE(ran.ok()) << ran.message();
    for (size_t rank = 0; rank < seen.size(); ++rank) {
      const auto *ops = p.ranks()->Get(static_cast<unsigned>(rank))->ops();
      ASSERT_EQ(seen[rank].size(), ops->size()) << "rank " << rank;
      for (size_t i = 0; i < seen[rank].size(); ++i) {
        EXPECT_EQ(seen[rank][i].opIndex, i) << "rank " << rank;
        EXPECT_EQ(seen[rank][i].kind, ops->Get(static_cast<unsigned>(i))->kind());
        EXPECT_EQ(seen[rank][i].tokens, static_cast<int64_t>(step.ids.size()));
        // Rank 0 runs on the caller's thread, the others on their own.
        EXPECT_EQ(seen[rank][i].onCaller, rank == 0) << "rank " << rank << " op " << i;
      }
    }
  }
  EXPECT_EQ(operandMismatches, 0u);
  EXPECT_EQ(outputsAtLogits, steps.size()) << "rank 0's output operand is the caller's logits";
  EXPECT_GT(routers, 0u);
  EXPECT_EQ(routerMismatches, 0u) << "router ops whose logits do not give the experts they chose";
  // The router is replicated: every rank routes every token alike.
  for (size_t rank = 1; rank < chosen.size(); ++rank)
    EXPECT_EQ(chosen[rank], chosen[0]) << "rank " << rank;

  // Removed, it is called no more.
  (*backend)->setOpObserver({});
  const size_t before = seen[0].size();
  std::vector<float> logits(2 * vocab);
  ObserverStep next = observerStep(2, 1, 10, width, blockSize);
  ASSERT_TRUE((*backend)->runStep(next.view(width), logits).ok());
  EXPECT_EQ(seen[0].size(), before);
}

} // namespace
} // namespace volt
