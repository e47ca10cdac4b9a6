//===- CudaSimtEndToEndTest.cpp - GPU plans run on the host, against the cpu backend -===//
//
// What tests/gpu/EndToEndTest.cpp checks on a GPU, without one: a GPU plan
// of a small model (SimModels.h) runs through the cuda backend on the fake
// driver and NCCL (tests/unit/cuda/FakeCuda.h), every launch executed by
// the SIMT emulator running the kernel instance the plan names
// (SimDevice.h), after PlanEmulator's pointer checks; the same plan runs
// on the cpu backend, and the logits agree within EndToEndTest's bound
// (2 % of the row's largest logit), the greedy tokens wherever the top two
// logits are further apart than twice that, and the sampler's candidates
// are exactly cpu::topCandidates of the rows the GPU returned.
//
// The steps are an engine's: a batched prefill of three prompts of
// different lengths (a step above max_num_seqs tokens: tiled attention and
// GEMMs), a long prompt prefilled in chunks alongside the others' decode
// tokens (mixed steps at the batched-token limit: the widest GEMM tiles,
// attention over earlier chunks), then greedy decoding through CUDA graphs
// — four sequences, then three (padded to the bucket of four), then the
// long one alone — whose long context (> split_k_tokens) splits decode
// attention across blocks into the kernel workspace; last, follow-up turns
// of two sequences beside the long one's decode (a tiled step that splits
// a decode). Steps alternate between runStep and the candidate path
// (runStepCandidates, then fetchRows), so both graph sets are captured and
// replayed. Tensor-parallel plans run their ranks on fake devices whose
// collectives are the fake NCCL's.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/TopCandidates.h"
#include "runtime/cuda/CudaBackend.h"
#include "runtime/engine/Engine.h"
#include "runtime/engine/Scheduler.h"
#include "runtime/executor/CpuBackend.h"
#include "runtime/plan/Caches.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/StepOperands.h"
#include "tests/support/GreedyRequests.h"
#include "tests/support/RouterTies.h"
#include "tests/unit/codegen/NvrtcAvailable.h"
#include "tests/unit/cuda/FakeCuda.h"
#include "tests/unit/cuda/PlanEmulator.h"
#include "tests/unit/cudasim/HostKernels.h"
#include "tests/unit/cudasim/SimDevice.h"
#include "tests/unit/cudasim/SimModels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <numeric>

namespace volt::cudasim {
namespace {

/// Sequences with their own KV blocks; each step takes, per sequence
/// listed, its next `count` tokens not yet in the cache (a follow-up turn
/// of the conversation where the sequence has fewer).
struct Sequences {
  int32_t blockSize = 16, maxBlocks = 0, vocab = 0;
  std::vector<std::vector<int32_t>> tokens; // per sequence, all so far
  std::vector<int32_t> cached;

  struct Batch {
    std::vector<int32_t> ids, positions, slots, starts{0}, context, tables, rows, seqs;
    engine::StepBatch view() const {
      engine::StepBatch b;
      b.numTokens = static_cast<int32_t>(ids.size());
      b.numSeqs = static_cast<int32_t>(context.size());
      b.maxBlocksPerSeq = static_cast<int32_t>(tables.size() / context.size());
      b.tokens = ids;
      b.positions = positions;
      b.slotMapping = slots;
      b.seqStarts = starts;
      b.contextLens = context;
      b.blockTables = tables;
      b.logitsRows = rows;
      // Each sequence keeps its own state slot (plans with recurrent
      // state read them; the others none).
      b.stateSlots = seqs;
      return b;
    }
  };

  /// A step of (sequence, tokens) parts.
  Batch step(const std::vector<std::pair<int32_t, int32_t>> &parts) {
    Batch b;
    for (auto [s, count] : parts) {
      const size_t si = static_cast<size_t>(s);
      const int32_t first = cached[si];
      while (static_cast<int32_t>(tokens[si].size()) < first + count)
        tokens[si].push_back((7 + 13 * static_cast<int32_t>(tokens[si].size()) + 29 * s) % vocab);
      for (int32_t p = first; p < first + count; ++p) {
        b.ids.push_back(tokens[si].at(static_cast<size_t>(p)));
        b.positions.push_back(p);
        const int32_t block = s * maxBlocks + p / blockSize;
        b.slots.push_back(block * blockSize + p % blockSize);
      }
      cached[si] = first + count;
      b.starts.push_back(static_cast<int32_t>(b.ids.size()));
      b.context.push_back(cached[si]);
      b.rows.push_back(static_cast<int32_t>(b.ids.size()) - 1);
      for (int32_t k = 0; k < maxBlocks; ++k)
        b.tables.push_back(s * maxBlocks + k);
      b.seqs.push_back(s);
    }
    return b;
  }
};

} // namespace

/// Test names show the model's name, not its bytes.
void PrintTo(const SimModel &m, std::ostream *os) { *os << m.name; }

namespace {

/// The plan's decode attention's split_k_tokens (0: it does not split).
int64_t splitKTokens(const plan::Plan &p) {
  for (const plan::Kernel *k : *p.kernels()) {
    const std::string source = k->source()->str();
    const size_t at = source.find(" split_k_tokens=");
    if (source.starts_with("paged_attention(") && at != std::string::npos)
      return std::stoll(source.substr(at + 16));
  }
  return 0;
}

/// How the GPU side of a step runs.
enum class Path { Logits, Candidates };

/// `m`'s plan, compiled and loaded; null (the test failed) when either fails.
std::unique_ptr<plan::LoadedPlan> loadSimPlan(const SimModel &m) {
  auto path = compileSimPlanHere(m);
  EXPECT_TRUE(path.ok()) << path.message();
  if (!path.ok())
    return nullptr;
  auto loaded = plan::LoadedPlan::load(*path);
  EXPECT_TRUE(loaded.ok()) << loaded.message();
  return loaded.ok() ? std::move(*loaded) : nullptr;
}

/// A GPU plan's two backends: the cuda backend on the fake driver and NCCL,
/// every launch checked by PlanEmulator and run by the SIMT emulator
/// (device memory starting as NaN, so that a kernel reading what no one
/// wrote shows), and the cpu backend on the same plan.
struct SimRig {
  explicit SimRig(const plan::LoadedPlan &plan, int ranks)
      : fake(ranks), checks(plan, fake), device(plan, fake) {}

  /// Makes the rig for `plan`, or fails the test (null).
  static std::unique_ptr<SimRig> create(const plan::LoadedPlan &plan, int ranks) {
    auto rig = std::make_unique<SimRig>(plan, ranks);
    rig->fake.fillDeviceMemory = 0xFF;
    rig->checks.install();
    Status ready = rig->device.ready();
    EXPECT_TRUE(ready.ok()) << ready.message();
    if (!ready.ok())
      return nullptr;
    rig->device.install();
    cuda::CudaBackendOptions options;
    options.driver = rig->fake.driver();
    options.nccl = rig->fake.nccl();
    options.log = [r = rig.get()](const std::string &line) { r->log.push_back(line); };
    auto created = cuda::CudaBackend::create(plan, options);
    EXPECT_TRUE(created.ok()) << created.message();
    auto cpuCreated = executor::CpuBackend::create(plan);
    EXPECT_TRUE(cpuCreated.ok()) << cpuCreated.message();
    if (!created.ok() || !cpuCreated.ok())
      return nullptr;
    rig->gpu = std::move(*created);
    rig->cpu = std::move(*cpuCreated);
    return rig;
  }

  cuda::testing::FakeCuda fake;
  cuda::testing::PlanEmulator checks;
  SimDevice device;
  std::vector<std::string> log;
  std::unique_ptr<cuda::CudaBackend> gpu;
  std::unique_ptr<executor::CpuBackend> cpu;
};

class CudaSimtEndToEnd : public ::testing::TestWithParam<SimModel> {};

TEST_P(CudaSimtEndToEnd, MatchesCpuBackend) {
  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  // NVRTC is here now: a table generated without it is stale, not a reason.
  ASSERT_TRUE(hostKernelsUnavailable().empty())
      << hostKernelsUnavailable()
      << " (NVRTC is installed now: rebuild the target cudasim_instances)";
  const SimModel &m = GetParam();
  auto loaded = loadSimPlan(m);
  ASSERT_NE(loaded, nullptr);
  const plan::LoadedPlan &planFile = *loaded;
  const plan::Plan &p = planFile.plan();

  auto rig = SimRig::create(planFile, m.tensorParallelSize);
  ASSERT_NE(rig, nullptr);
  SimDevice &device = rig->device;
  cuda::CudaBackend &gpu = *rig->gpu;
  executor::CpuBackend &cpu = *rig->cpu;

  const int32_t vocab = static_cast<int32_t>(p.model()->vocab_size());
  const int32_t k = gpu.candidatesPerSeq();
  ASSERT_GT(k, 0) << "the plan has no sampler";
  Sequences seqs;
  seqs.blockSize = static_cast<int32_t>(plan::pagedKvGroup(*p.ranks()->Get(0))->block_size());
  seqs.maxBlocks = static_cast<int32_t>(p.limits()->max_blocks_per_seq());
  seqs.vocab = vocab;
  ASSERT_GE(plan::pagedKvGroup(*p.ranks()->Get(0))->num_blocks(),
            static_cast<uint32_t>(4 * seqs.maxBlocks))
      << "the KV cache holds fewer blocks than the test's sequences use";
  // Three short prompts and one past split_k_tokens, whose decode
  // attention then splits (templates/common/split_attention.cuh).
  const int32_t longPrompt = 540;
  const int64_t splitTokens = splitKTokens(p);
  EXPECT_GT(splitTokens, 0) << "the plan's decode attention does not split";
  EXPECT_GT(longPrompt, splitTokens)
      << "the long prompt no longer splits decode attention: lengthen it";
  ASSERT_LT(longPrompt + 16, kMaxModelLen);
  const std::vector<int32_t> lengths = {5, 11, 19, longPrompt};
  for (size_t s = 0; s < lengths.size(); ++s) {
    std::vector<int32_t> prompt;
    for (int32_t i = 0; i < lengths[s]; ++i)
      prompt.push_back((17 + 31 * i + 101 * static_cast<int32_t>(s)) % vocab);
    seqs.tokens.push_back(prompt);
    seqs.cached.push_back(0);
  }

  // The schedule: (sequence, tokens) parts per step, and the GPU path.
  const int32_t chunk = kMaxNumBatchedTokens - 3;
  std::vector<std::pair<std::vector<std::pair<int32_t, int32_t>>, Path>> schedule = {
      {{{0, 5}, {1, 11}, {2, 19}}, Path::Logits},
      {{{0, 1}, {1, 1}, {2, 1}, {3, chunk}}, Path::Candidates},
      {{{0, 1}, {1, 1}, {2, 1}, {3, chunk}}, Path::Logits},
      {{{0, 1}, {1, 1}, {2, 1}, {3, longPrompt - 2 * chunk}}, Path::Candidates},
  };
  for (int i = 0; i < 4; ++i)
    schedule.push_back({{{0, 1}, {1, 1}, {2, 1}, {3, 1}}, i % 2 ? Path::Logits : Path::Candidates});
  for (int i = 0; i < 3; ++i)
    schedule.push_back({{{0, 1}, {2, 1}, {3, 1}}, i % 2 ? Path::Logits : Path::Candidates});
  for (int i = 0; i < 2; ++i)
    schedule.push_back({{{3, 1}}, i % 2 ? Path::Logits : Path::Candidates});
  // Follow-up turns of two sequences beside the long one's decode: a step
  // above max_num_seqs (paged_attention_tiled) that splits a decode.
  schedule.push_back({{{0, 8}, {1, 8}, {3, 1}}, Path::Candidates});
  schedule.push_back({{{0, 1}, {1, 1}, {3, 1}}, Path::Logits});

  // The cpu side's routing gaps, as tests/gpu/EndToEndTest.cpp gets them.
  testing::RouterGaps cpuGaps;
  testing::observeRouterGaps(cpu, cpuGaps);
  double worst = 0, gapDifference = 0;
  size_t compared = 0, greedyChecked = 0, onTies = 0, sidesDisagreeOnTie = 0, carriedRows = 0;
  // With recurrent state, a token that went to different experts on the
  // two sides (a routing tie) is carried by the state into every later
  // token of its sequence: those are not compared (on KV alone, one
  // position of many differs, which the bound absorbs).
  const bool recurrent = plan::stateSlotCount(*p.ranks()->Get(0)) > 0;
  std::vector<bool> carried(seqs.tokens.size(), false);
  for (size_t step = 0; step < schedule.size(); ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const auto &[parts, path] = schedule[step];
    Sequences::Batch batch = seqs.step(parts);
    device.routerGaps.clear();
    cpuGaps.clear();
    const engine::StepBatch view = batch.view();
    const size_t S = batch.context.size();
    std::vector<float> want(S * vocab), got(S * vocab);
    // The candidate path's output, when it ran.
    std::vector<int32_t> ids;
    std::vector<float> values, stats;
    Status ranCpu = cpu.runStep(view, want);
    ASSERT_TRUE(ranCpu.ok()) << ranCpu.message();
    if (path == Path::Logits) {
      Status ran = gpu.runStep(view, got);
      ASSERT_TRUE(ran.ok()) << ran.message();
    } else {
      std::vector<float> temperatures(S, 0.7f);
      temperatures[0] = 0.0f;
      ids.resize(S * k);
      values.resize(ids.size());
      stats.resize(S * 3);
      std::vector<int32_t> wantIds(ids.size());
      std::vector<float> wantValues(ids.size()), wantStats(stats.size());
      engine::StepCandidates out{k, ids, values, stats};
      Status ran = gpu.runStepCandidates(view, temperatures, out);
      ASSERT_TRUE(ran.ok()) << ran.message();
      std::vector<int32_t> all(S);
      for (size_t s = 0; s < S; ++s)
        all[s] = static_cast<int32_t>(s);
      Status fetched = gpu.fetchRows(all, got);
      ASSERT_TRUE(fetched.ok()) << fetched.message();
      // The sampler kernel against the reference op, on the GPU's rows.
      cpu::ThreadPool pool(1);
      cpu::topCandidates({static_cast<int64_t>(S), vocab, k}, got.data(), temperatures.data(),
                         wantIds.data(), wantValues.data(), wantStats.data(), pool);
      EXPECT_EQ(ids, wantIds);
      EXPECT_EQ(values, wantValues);
      for (size_t i = 0; i < stats.size(); ++i)
        EXPECT_NEAR(stats[i], wantStats[i], 1e-5 * std::fabs(wantStats[i]) + 1e-30) << "stat " << i;
    }
    // Both sides' routing gaps, token by token: where neither is near a
    // tie, no expert was swapped in any layer, so they agree to rounding;
    // a wrong row or a missed router op on the cpu side (the observer
    // tests/gpu/EndToEndTest.cpp depends on) would not.
    // Per sequence of the step: carried into its row from earlier tokens.
    std::vector<bool> carriedToRow(S, false);
    for (size_t s = 0, t = 0; s < S; ++s)
      for (; t < static_cast<size_t>(batch.starts[s + 1]); ++t) {
        const size_t seq = static_cast<size_t>(batch.seqs[s]);
        if (t == static_cast<size_t>(batch.rows[s]))
          carriedToRow[s] = carried[seq];
        const double cpuGap = cpuGaps.smallest(t, t + 1),
                     gpuGap = device.routerGaps.smallest(t, t + 1);
        ASSERT_EQ(std::isinf(cpuGap), std::isinf(gpuGap)) << "token " << t << "'s routing gaps";
        const bool tie = cpuGap < testing::kRouterTie || gpuGap < testing::kRouterTie;
        if (!tie && !carried[seq])
          gapDifference = std::max(gapDifference, std::fabs(cpuGap - gpuGap));
        sidesDisagreeOnTie += (cpuGap < testing::kRouterTie) != (gpuGap < testing::kRouterTie);
        carried[seq] = carried[seq] || (recurrent && !device.routerGaps.sameRoute(cpuGaps, t));
      }
    for (size_t s = 0; s < S; ++s) {
      const std::span<const float> x(want.data() + s * vocab, static_cast<size_t>(vocab));
      const std::span<const float> y(got.data() + s * vocab, static_cast<size_t>(vocab));
      const testing::RowComparison c = testing::compareRow(x, y);
      auto &all = seqs.tokens[static_cast<size_t>(batch.seqs[s])];
      // A prefill chunk that does not end its prompt samples nothing.
      if (seqs.cached[static_cast<size_t>(batch.seqs[s])] == static_cast<int32_t>(all.size()))
        all.push_back(c.cpuBest);
      // Either side near a tie: the two sides' gaps differ by up to 3.5e-3
      // away from ties, so one side's gap alone can miss a swap.
      const size_t row = static_cast<size_t>(batch.rows[s]);
      if (device.routerGaps.onTie(row) || cpuGaps.onTie(row)) {
        ++onTies;
        continue;
      }
      if (carriedToRow[s]) {
        ++carriedRows;
        continue;
      }
      worst = std::max(worst, c.diff / std::max(c.scale, 1e-6));
      ++compared;
      EXPECT_LE(c.diff, c.bound) << "sequence " << batch.seqs[s] << ", logit " << c.worstAt
                                 << ": cpu " << x[c.worstAt] << ", gpu " << y[c.worstAt]
                                 << testing::routerTieNote(device.routerGaps.smallest(
                                        static_cast<size_t>(batch.starts[s]),
                                        static_cast<size_t>(batch.starts[s + 1])));
      if (c.greedyDecided) {
        ++greedyChecked;
        EXPECT_EQ(c.cpuBest, c.gpuBest) << "sequence " << batch.seqs[s];
        if (!ids.empty()) {
          EXPECT_EQ(ids[s * k], c.cpuBest) << "sequence " << batch.seqs[s] << "'s first candidate";
        }
      }
      // The candidates are the cpu row's logits at their ids.
      for (size_t j = s * k; j < (s + 1) * k && !ids.empty(); ++j) {
        ASSERT_GE(ids[j], 0);
        ASSERT_LT(ids[j], vocab);
        EXPECT_NEAR(values[j], x[ids[j]], c.bound)
            << "sequence " << batch.seqs[s] << ", candidate " << j - s * k;
      }
      if (!stats.empty()) {
        EXPECT_NEAR(stats[s * 3], c.top, c.bound) << "sequence " << batch.seqs[s] << "'s M";
      }
    }
    if (HasFailure())
      break;
  }
  std::printf("%s: %zu rows compared, %zu greedy tokens checked, largest logit difference %.2e "
              "of the largest logit; %zu rows on a routing tie and %zu after one in the recurrent "
              "state not compared\n",
              m.name.c_str(), compared, greedyChecked, worst, onTies, carriedRows);
  std::printf("%s: the two sides' routing gaps %.2e apart at most away from ties; tokens on a "
              "tie by one side only: %zu\n",
              m.name.c_str(), gapDifference, sidesDisagreeOnTie);
  if (HasFailure())
    return;
  EXPECT_TRUE(testing::fewEnoughTies(onTies, compared + onTies))
      << "too many rows on routing ties to compare";
  // The tiny models route a token to other experts on the two sides now
  // and then (8 experts, top 2, ulp-level router inputs apart): with
  // recurrent state, long prompts are often carried (measured: 14 of the 48 rows on qwen3-next);
  // enough rows must remain.
  EXPECT_GE(compared, 24u) << "too few rows compared: most were carried past a routing tie";
  // Measured: at most 3.44e-3 (median 2.5e-4) over these plans' tokens
  // where every kernel sums as the cpu op does; 1.12e-2 on
  // qwen3.5-moe-nvfp4-tp1, whose prefill steps run the chunked Gated
  // DeltaNet kernel (FP16 operands on tensor cores: outputs within about
  // 1 % of the cpu op's, SimtGdnChunkedTest.cpp). Another token's gaps are
  // typically 0.1 or more apart.
  EXPECT_LE(gapDifference, 2e-2) << "the cpu backend's routing gaps are not the device's";
  // What ran: the steps reached the kernels they are there for.
  EXPECT_EQ(device.skipped, 0u);
  for (const char *kernel :
       {"paged_attention", "paged_attention_tiled", "top_candidates", "embedding", "gather_rows"})
    EXPECT_GT(device.launches[kernel], 0u) << kernel;
  EXPECT_GT(device.graphLaunches, 0u);
  const cuda::GraphStats graphs = gpu.graphStats();
  EXPECT_GT(graphs.captures, 0u);
  EXPECT_EQ(graphs.captureFailures, 0u);
  EXPECT_GT(graphs.graphSteps, graphs.captures) << "no captured graph was replayed";
  std::string kernels;
  for (const auto &[name, n] : device.launches)
    kernels += " " + name + "=" + std::to_string(n);
  std::printf("%s: launches run:%s (%zu from graphs)\n", m.name.c_str(), kernels.c_str(),
              device.graphLaunches);
}

INSTANTIATE_TEST_SUITE_P(Plans, CudaSimtEndToEnd, ::testing::ValuesIn(simModels()),
                         [](const ::testing::TestParamInfo<SimModel> &info) {
                           return simTestName(info.param);
                         });

// Speculative verify steps on the GPU: a plan compiled with
// `speculative` (k = 3) runs steps whose sequences carry drafts, each
// draft-carrying token a logits row (R > S: the row gather, the LM head and
// the logits copy over R rows), the recurrent kernels copying each state
// after a draft-carrying token into a spare slot; then a rejected draft is
// rolled back by taking that slot as the sequence's own, and the next
// steps read it. The cpu backend runs the same steps; every row agrees
// within the bound where no routing tie intervenes, so a wrong copy, a
// wrong rollback or a wrong row would show in the rows after it.
class CudaSimtVerifySteps : public ::testing::TestWithParam<SimModel> {};

TEST_P(CudaSimtVerifySteps, MatchCpuBackendThroughRollbacks) {
  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  ASSERT_TRUE(hostKernelsUnavailable().empty())
      << hostKernelsUnavailable()
      << " (NVRTC is installed now: rebuild the target cudasim_instances)";
  const SimModel &m = GetParam();
  auto loaded = loadSimPlan(m);
  ASSERT_NE(loaded, nullptr);
  const plan::LoadedPlan &planFile = *loaded;
  const plan::Plan &p = planFile.plan();
  ASSERT_NE(p.speculative(), nullptr);
  constexpr int32_t kDrafts = 3;
  ASSERT_EQ(p.speculative()->num_speculative_tokens(), uint32_t(kDrafts));

  auto rig = SimRig::create(planFile, m.tensorParallelSize);
  ASSERT_NE(rig, nullptr);
  SimDevice &device = rig->device;
  cuda::CudaBackend &gpu = *rig->gpu;
  executor::CpuBackend &cpu = *rig->cpu;
  testing::RouterGaps cpuGaps;
  testing::observeRouterGaps(cpu, cpuGaps);

  const plan::Rank *rank0 = p.ranks()->Get(0);
  const int32_t vocab = static_cast<int32_t>(p.model()->vocab_size());
  const int32_t blockSize = static_cast<int32_t>(plan::pagedKvGroup(*rank0)->block_size());
  const int32_t maxBlocks = static_cast<int32_t>(p.limits()->max_blocks_per_seq());
  const bool recurrent = plan::stateSlotCount(*rank0) > 0;
  if (recurrent)
    ASSERT_EQ(plan::stateSlotCount(*rank0), uint32_t(kMaxNumSeqs * (1 + kDrafts)));

  // Three sequences: their tokens (the last not yet computed), computed
  // count, own state slot and spare slots.
  struct Seq {
    std::vector<int32_t> tokens;
    int32_t computed = 0, slot = 0;
    std::vector<int32_t> spares;
    bool carried = false;
  };
  std::vector<Seq> seqs(3);
  for (int32_t s = 0; s < 3; ++s) {
    for (int32_t i = 0; i < 9 + 7 * s; ++i)
      seqs[s].tokens.push_back((17 + 31 * i + 101 * s) % vocab);
    seqs[s].slot = s;
    for (int32_t j = 0; j < kDrafts; ++j)
      seqs[s].spares.push_back(kMaxNumSeqs + s * kDrafts + j);
  }
  size_t compared = 0, onTies = 0, carriedRows = 0, rollbacks = 0, verifyRows = 0;
  for (int step = 0; step < 8; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    engine::StepBuffers buf;
    buf.maxBlocksPerSeq = maxBlocks;
    buf.seqStarts = {0};
    std::vector<int32_t> &ids = buf.tokens, &positions = buf.positions, &slots = buf.slotMapping,
                         &starts = buf.seqStarts, &context = buf.contextLens,
                         &tables = buf.blockTables, &rows = buf.logitsRows,
                         &own = buf.stateSlots, &copies = buf.stateSnapshots;
    std::vector<int32_t> drafts(seqs.size(), 0);
    for (size_t s = 0; s < seqs.size(); ++s) {
      Seq &q = seqs[s];
      // Step 0 prefills; then each sequence verifies 0..3 drafts.
      const int32_t m = step == 0 ? 0 : (step + static_cast<int32_t>(s)) % (kDrafts + 1);
      drafts[s] = m;
      const int32_t first = q.computed;
      const int32_t count = static_cast<int32_t>(q.tokens.size()) - first + m;
      for (int32_t j = 0; j < count; ++j) {
        const int32_t pos = first + j;
        const bool draft = pos >= static_cast<int32_t>(q.tokens.size());
        ids.push_back(draft ? (5 + 7 * pos + 3 * step) % vocab : q.tokens[static_cast<size_t>(pos)]);
        positions.push_back(pos);
        slots.push_back((static_cast<int32_t>(s) * maxBlocks + pos / blockSize) * blockSize +
                        pos % blockSize);
        // The state after the last token and each draft but the last.
        const int32_t fromEnd = count - 1 - j;
        copies.push_back(fromEnd >= 1 && fromEnd <= m ? q.spares[static_cast<size_t>(m - fromEnd)]
                                                      : -1);
      }
      for (int32_t j = m; j >= 0; --j)
        rows.push_back(static_cast<int32_t>(ids.size()) - 1 - j);
      starts.push_back(static_cast<int32_t>(ids.size()));
      context.push_back(first + count);
      for (int32_t b = 0; b < maxBlocks; ++b)
        tables.push_back(static_cast<int32_t>(s) * maxBlocks + b);
      own.push_back(q.slot);
    }
    // Plans without state take no slots; the prefill step makes no copies.
    if (!recurrent)
      own.clear();
    if (!recurrent || step == 0)
      copies.clear();
    const engine::StepBatch b = buf.view();
    const size_t R = rows.size();
    std::vector<float> want(R * vocab), got(R * vocab);
    device.routerGaps.clear();
    cpuGaps.clear();
    Status ranCpu = cpu.runStep(b, want);
    ASSERT_TRUE(ranCpu.ok()) << ranCpu.message();
    Status ran = gpu.runStep(b, got);
    ASSERT_TRUE(ran.ok()) << ran.message();
    verifyRows += R - seqs.size();
    size_t row = 0;
    for (size_t s = 0; s < seqs.size(); ++s) {
      Seq &q = seqs[s];
      for (int32_t t = starts[s]; t < starts[s + 1]; ++t)
        q.carried = q.carried ||
                    (recurrent && !device.routerGaps.sameRoute(cpuGaps, static_cast<size_t>(t)));
      for (int32_t j = 0; j <= drafts[s]; ++j, ++row) {
        const std::span<const float> x(want.data() + row * vocab, static_cast<size_t>(vocab));
        const std::span<const float> y(got.data() + row * vocab, static_cast<size_t>(vocab));
        const size_t t = static_cast<size_t>(rows[row]);
        if (device.routerGaps.onTie(t) || cpuGaps.onTie(t)) {
          ++onTies;
          continue;
        }
        if (q.carried) {
          ++carriedRows;
          continue;
        }
        const testing::RowComparison c = testing::compareRow(x, y);
        ++compared;
        EXPECT_LE(c.diff, c.bound) << "sequence " << s << ", row " << j << ", logit "
                                   << c.worstAt << ": cpu " << x[c.worstAt] << ", gpu "
                                   << y[c.worstAt];
      }
      // Keep `kept` of the drafts (all of them every third round) and a
      // correction token; a rejected draft rolls the state back.
      const int32_t m = drafts[s];
      const int32_t kept = m == 0 ? 0 : (step % 3 == 0 ? m : (step + static_cast<int32_t>(s)) % m);
      const int32_t first = static_cast<int32_t>(q.tokens.size());
      for (int32_t j = 0; j < kept; ++j)
        q.tokens.push_back(ids[static_cast<size_t>(starts[s + 1] - m + j)]);
      q.tokens.push_back((11 + 3 * first + step) % vocab);
      q.computed = first + kept;
      if (kept < m && recurrent) {
        std::swap(q.slot, q.spares[static_cast<size_t>(kept)]);
        ++rollbacks;
      }
    }
    if (HasFailure())
      break;
  }
  std::printf("%s: %zu rows compared (%zu draft rows in all), %zu on a routing tie, %zu after one "
              "in the recurrent state; %zu rollbacks\n",
              m.name.c_str(), compared, verifyRows, onTies, carriedRows, rollbacks);
  EXPECT_GT(verifyRows, 10u);
  EXPECT_GE(compared, 12u) << "too few rows compared";
  if (recurrent)
    EXPECT_GT(rollbacks, 3u);
  EXPECT_EQ(device.skipped, 0u);
  EXPECT_GT(device.launches["gather_rows"], 0u);
}

/// The serving engine over the cuda backend on the emulated GPU: greedy
/// requests with `drafts` n-gram draft tokens (0: none); each request's
/// tokens, and the speculative counters.
struct GpuEngineRun {
  std::vector<std::vector<int32_t>> tokens;
  engine::SpecDecodeStats spec;
};

GpuEngineRun runGpuEngine(const plan::LoadedPlan &planFile, int ranks, int32_t drafts,
                          const std::vector<std::vector<int32_t>> &prompts, int32_t maxTokens) {
  GpuEngineRun run;
  auto rig = SimRig::create(planFile, ranks);
  EXPECT_NE(rig, nullptr);
  if (!rig)
    return run;
  engine::EngineConfig c = plan::engineConfigOf(planFile.plan());
  c.numSpeculativeTokens = drafts;
  c.promptLookupMin = 1;
  c.promptLookupMax = 2;
  auto e = engine::Engine::create(c, *rig->gpu);
  EXPECT_TRUE(e.ok()) << e.message();
  if (!e.ok())
    return run;
  run.tokens = testing::runGreedyRequests(**e, prompts, maxTokens);
  run.spec = (*e)->stats().specDecode;
  EXPECT_EQ(rig->device.skipped, 0u);
  return run;
}

// The engine verifying n-gram drafts on the emulated GPU gives every greedy
// request the tokens the same GPU plan gives without drafts (verify steps
// as direct launches over R rows, rollbacks of recurrent state, decode
// steps through CUDA graphs), except at a near tie: measured, one of 96
// tokens parts on Qwen3-MoE, where the cpu backend's two logits are 4e-4
// apart.
TEST_P(CudaSimtVerifySteps, EngineOutputsAreThoseWithoutDrafts) {
  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  ASSERT_TRUE(hostKernelsUnavailable().empty()) << hostKernelsUnavailable();
  const SimModel &m = GetParam();
  auto loaded = loadSimPlan(m);
  ASSERT_NE(loaded, nullptr);
  const int32_t vocab = static_cast<int32_t>(loaded->plan().model()->vocab_size());
  // Prompts that repeat a phrase, so that lookups find drafts.
  std::vector<std::vector<int32_t>> prompts;
  for (int32_t length : {21, 9, 30}) {
    std::vector<int32_t> p;
    for (int32_t i = 0; i < length; ++i)
      p.push_back((5 + 13 * (i % (3 + length % 4)) + length) % vocab);
    prompts.push_back(p);
  }
  const GpuEngineRun plain = runGpuEngine(*loaded, m.tensorParallelSize, 0, prompts, 32);
  const GpuEngineRun spec = runGpuEngine(*loaded, m.tensorParallelSize, 3, prompts, 32);
  ASSERT_EQ(spec.tokens.size(), prompts.size());
  // The GPU's verify steps run other kernel variants than its decode steps
  // (GEMM tiles, not GEMV), so their logits differ by rounding: the tokens
  // must agree wherever the next token is decided, and may part only at a
  // near tie. Where they part, the cpu backend's logits of that prefix
  // (one prefill step) say whether the two tokens were within the bound.
  auto cpu = executor::CpuBackend::create(*loaded);
  ASSERT_TRUE(cpu.ok()) << cpu.message();
  const plan::Plan &p = loaded->plan();
  const int32_t blockSize = static_cast<int32_t>(plan::pagedKvGroup(*p.ranks()->Get(0))->block_size());
  const int32_t width = static_cast<int32_t>(p.limits()->max_blocks_per_seq());
  const bool recurrent = plan::stateSlotCount(*p.ranks()->Get(0)) > 0;
  size_t matched = 0, parted = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    ASSERT_EQ(spec.tokens[i].size(), 32u);
    ASSERT_EQ(plain.tokens[i].size(), 32u);
    const auto part = std::mismatch(spec.tokens[i].begin(), spec.tokens[i].end(),
                                    plain.tokens[i].begin());
    const size_t j = static_cast<size_t>(part.first - spec.tokens[i].begin());
    matched += j;
    if (j == spec.tokens[i].size())
      continue;
    ++parted;
    // The prefix as one prefill step: token t at position and KV slot t.
    engine::StepBuffers prefix;
    prefix.tokens = prompts[i];
    prefix.tokens.insert(prefix.tokens.end(), plain.tokens[i].begin(),
                         plain.tokens[i].begin() + j);
    const int32_t n = static_cast<int32_t>(prefix.tokens.size());
    prefix.positions.resize(prefix.tokens.size());
    std::iota(prefix.positions.begin(), prefix.positions.end(), 0);
    prefix.slotMapping = prefix.positions;
    prefix.maxBlocksPerSeq = width;
    prefix.blockTables.resize(static_cast<size_t>(width));
    std::iota(prefix.blockTables.begin(), prefix.blockTables.end(), 0);
    prefix.seqStarts = {0, n};
    prefix.contextLens = {n};
    prefix.logitsRows = {n - 1};
    if (recurrent)
      prefix.stateSlots = {0};
    ASSERT_LE(n, kMaxNumBatchedTokens);
    ASSERT_LE((n + blockSize - 1) / blockSize, width);
    std::vector<float> logits(static_cast<size_t>(vocab));
    Status ran = (*cpu)->runStep(prefix.view(), logits);
    ASSERT_TRUE(ran.ok()) << ran.message();
    const testing::RowComparison c = testing::compareRow(logits, logits);
    const double a = logits[size_t(*part.first)], z = logits[size_t(*part.second)];
    std::printf("%s: request %zu parts at output %zu (with drafts %d, without %d; cpu logits "
                "%.4f and %.4f, bound %.4f)\n",
                m.name.c_str(), i, j, *part.first, *part.second, a, z, c.bound);
    EXPECT_LE(std::fabs(a - z), 2 * c.bound)
        << "the tokens part where the next token is decided: a verify step's row is wrong";
  }
  EXPECT_GE(matched * 4, prompts.size() * 32 * 3) << "too few tokens the same";
  EXPECT_LE(parted, 1u);
  EXPECT_GT(spec.spec.numDrafts, 0u);
  EXPECT_GT(spec.spec.numAcceptedTokens, 0u);
  std::printf("%s: %llu verify rounds, %llu of %llu draft tokens accepted\n", m.name.c_str(),
              static_cast<unsigned long long>(spec.spec.numDrafts),
              static_cast<unsigned long long>(spec.spec.numAcceptedTokens),
              static_cast<unsigned long long>(spec.spec.numDraftTokens));
}

// The MTP draft program on the emulated GPU: after a prefill, a catch-up
// draft step over the prompt's positions and a chained step give the cpu
// backend's draft logits within the end-to-end bound; and the engine
// drafting with it gives every greedy request the tokens the plan gives
// without drafts (up to a near tie, as above).
TEST(CudaSimtMtp, DraftStepsMatchTheCpuBackendAndTheEngineTheTokensWithoutDrafts) {
  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  ASSERT_TRUE(hostKernelsUnavailable().empty()) << hostKernelsUnavailable();
  const SimModel &m = simModels().back();
  ASSERT_EQ(m.name, "qwen3.5-moe-bf16-tp1-mtp");
  auto loaded = loadSimPlan(m);
  ASSERT_NE(loaded, nullptr);
  const plan::Plan &p = loaded->plan();
  ASSERT_TRUE(plan::hasDraftProgram(p));
  const int32_t vocab = static_cast<int32_t>(p.model()->vocab_size());
  const int32_t width = static_cast<int32_t>(p.limits()->max_blocks_per_seq());
  {
  auto rig = SimRig::create(*loaded, m.tensorParallelSize);
  ASSERT_NE(rig, nullptr);
  engine::StepBackend *backends[] = {rig->gpu.get(), rig->cpu.get()};

  // One sequence of 24 prompt tokens at positions and slots 0..23.
  const int32_t n = 24;
  engine::StepBuffers prefill;
  for (int32_t t = 0; t < n; ++t)
    prefill.tokens.push_back((7 + 31 * t) % vocab);
  prefill.positions.resize(size_t(n));
  std::iota(prefill.positions.begin(), prefill.positions.end(), 0);
  prefill.slotMapping = prefill.positions;
  prefill.maxBlocksPerSeq = width;
  prefill.blockTables.resize(size_t(width));
  std::iota(prefill.blockTables.begin(), prefill.blockTables.end(), 0);
  prefill.seqStarts = {0, n};
  prefill.contextLens = {n};
  prefill.logitsRows = {n - 1};
  prefill.stateSlots = {0};
  // The catch-up: position t paired with token t + 1 (a next token at the
  // end), rows 0..7 of the 24 (max_logits_rows is 16).
  engine::StepBuffers catchUp = prefill;
  catchUp.tokens.erase(catchUp.tokens.begin());
  catchUp.tokens.push_back(3);
  catchUp.hiddenRows = catchUp.positions;
  catchUp.stateSlots.clear();
  catchUp.logitsRows = {0, 3, 9, 16, 23};
  // A chained step at position n from the catch-up's last row.
  engine::StepBuffers chain = catchUp;
  chain.tokens = {11};
  chain.positions = {n};
  chain.slotMapping = {n};
  chain.seqStarts = {0, 1};
  chain.contextLens = {n + 1};
  chain.logitsRows = {0};
  chain.hiddenRows = {n - 1};
  std::vector<float> logits[2][3];
  for (int b = 0; b < 2; ++b) {
    logits[b][0].resize(size_t(vocab));
    logits[b][1].resize(catchUp.logitsRows.size() * size_t(vocab));
    logits[b][2].resize(size_t(vocab));
    Status s = backends[b]->runStep(prefill.view(), logits[b][0]);
    ASSERT_TRUE(s.ok()) << s.message();
    s = backends[b]->runDraftStep(catchUp.view(), logits[b][1]);
    ASSERT_TRUE(s.ok()) << s.message();
    s = backends[b]->runDraftStep(chain.view(), logits[b][2]);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  for (int step = 0; step < 3; ++step)
    for (size_t r = 0; r * size_t(vocab) < logits[1][step].size(); ++r) {
      auto gpuRow = std::span(logits[0][step]).subspan(r * size_t(vocab), size_t(vocab));
      auto cpuRow = std::span(logits[1][step]).subspan(r * size_t(vocab), size_t(vocab));
      const testing::RowComparison c = testing::compareRow(cpuRow, gpuRow);
      EXPECT_LE(c.diff, c.bound) << "step " << step << " row " << r;
    }
  // A draft step starting from rows the last step did not leave is refused.
  engine::StepBuffers beyond = chain;
  beyond.hiddenRows = {1};
  std::vector<float> row(static_cast<size_t>(vocab));
  EXPECT_NE(rig->gpu->runDraftStep(beyond.view(), row).message().find("the last step left 1"),
            std::string::npos);
  EXPECT_EQ(rig->device.skipped, 0u);
  }

  std::vector<std::vector<int32_t>> prompts;
  for (int32_t length : {21, 9, 30}) {
    std::vector<int32_t> prompt;
    for (int32_t i = 0; i < length; ++i)
      prompt.push_back((5 + 13 * (i % (3 + length % 4)) + length) % vocab);
    prompts.push_back(prompt);
  }
  const GpuEngineRun plain = runGpuEngine(*loaded, m.tensorParallelSize, 0, prompts, 32);
  const GpuEngineRun spec = runGpuEngine(*loaded, m.tensorParallelSize, 3, prompts, 32);
  ASSERT_EQ(spec.tokens.size(), prompts.size());
  size_t matched = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(spec.tokens[i].size(), 32u);
    matched += size_t(std::mismatch(spec.tokens[i].begin(), spec.tokens[i].end(),
                                    plain.tokens[i].begin())
                          .first -
                      spec.tokens[i].begin());
  }
  EXPECT_GE(matched * 4, prompts.size() * 32 * 3) << "too few tokens the same";
  EXPECT_GT(spec.spec.numDrafts, 0u);
  EXPECT_GT(spec.spec.numDraftSteps, 0u);
  // Drafts after the first come from chained draft steps.
  EXPECT_GT(spec.spec.numDraftTokens, spec.spec.numDrafts);
  std::printf("%s: %zu of %zu tokens as without drafts; %llu verify rounds, %llu draft steps, "
              "%llu of %llu draft tokens accepted\n",
              m.name.c_str(), matched, prompts.size() * 32,
              static_cast<unsigned long long>(spec.spec.numDrafts),
              static_cast<unsigned long long>(spec.spec.numDraftSteps),
              static_cast<unsigned long long>(spec.spec.numAcceptedTokens),
              static_cast<unsigned long long>(spec.spec.numDraftTokens));
}

std::vector<SimModel> verifyModels() {
  const std::string spec = "speculative: {method: ngram, num_speculative_tokens: 3}\n";
  return {{"qwen3-moe-nvfp4-tp1-spec", "qwen3-moe", mkmodel::Format::ModelOpt, 1, spec},
          {"toy-ema-bf16-tp1-spec", "toy-ema", mkmodel::Format::BF16, 1, spec},
          {"qwen3-next-nvfp4-tp2-spec", "qwen3-next", mkmodel::Format::ModelOpt, 2, spec}};
}

INSTANTIATE_TEST_SUITE_P(Plans, CudaSimtVerifySteps, ::testing::ValuesIn(verifyModels()),
                         [](const ::testing::TestParamInfo<SimModel> &info) {
                           return simTestName(info.param);
                         });

} // namespace
} // namespace volt::cudasim
