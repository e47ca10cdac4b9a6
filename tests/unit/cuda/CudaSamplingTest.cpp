//===- CudaSamplingTest.cpp - sampling candidates on FakeCuda -------------===//
//
// runStepCandidates and fetchRows on a real plan (a synthetic model
// compiled for a V100, whose plan carries the top_candidates sampler): the
// candidates equal cpu::topCandidates of the emulated logits exactly, the
// temperatures reach the kernel (padding rows at 0), decode graphs hold
// the sampler's launch and replays give fresh candidates, only candidates
// cross to the host, rows are fetched while they last, tensor parallelism,
// and runStep unchanged beside it.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/TopCandidates.h"
#include "tests/unit/cuda/FakeCudaHarness.h"

#include <cmath>
#include <limits>

namespace volt::cuda::testing {
namespace {

/// A step's candidates, owning their arrays.
struct Candidates {
  std::vector<int32_t> ids;
  std::vector<float> values, stats;
  engine::StepCandidates view;

  Candidates(size_t seqs, size_t k) : ids(seqs * k), values(seqs * k), stats(seqs * 3) {
    view.ids = ids;
    view.values = values;
    view.stats = stats;
  }
};

/// cpu::topCandidates of the logits the emulator predicts for `step`.
Candidates reference(const Harness &h, const Step &step, const std::vector<float> &temperatures) {
  const auto logits = h.emulator->expectedLogits(step.tokens, step.rows);
  const size_t k = static_cast<size_t>(h.backend->candidatesPerSeq());
  Candidates c(static_cast<size_t>(step.seqs()), k);
  cpu::ThreadPool pool(1);
  cpu::topCandidates({step.seqs(), h.vocab(), static_cast<int64_t>(k)}, logits.data(),
                     temperatures.data(), c.ids.data(), c.values.data(), c.stats.data(), pool);
  return c;
}

/// Runs `step` for candidates and checks them against the reference.
void runAndCheckCandidates(Harness &h, const Step &step, const std::vector<float> &temperatures) {
  Candidates got(static_cast<size_t>(step.seqs()), 64);
  Status s = h.backend->runStepCandidates(step.batch(), temperatures, got.view);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(got.view.k, 64);
  const Candidates want = reference(h, step, temperatures);
  EXPECT_EQ(got.ids, want.ids);
  EXPECT_EQ(got.values, want.values);
  EXPECT_EQ(got.stats, want.stats);
}

/// Bytes copied device to host by the calls recorded since `from`.
uint64_t bytesToHost(const FakeCuda &fake, size_t from) {
  uint64_t bytes = 0;
  const auto calls = fake.calls();
  for (size_t i = from; i < calls.size(); ++i)
    if (calls[i].name == "cuMemcpyDtoHAsync" || calls[i].name == "cuMemcpyDtoH")
      bytes += calls[i].count;
  return bytes;
}

TEST(CudaSampling, GpuPlansCarryTheSamplerAndCpuPlansDoNot) {
  Harness h;
  ASSERT_TRUE(h.create()) << h.error;
  const plan::Plan &p = h.plan->plan();
  ASSERT_NE(p.sampler(), nullptr);
  EXPECT_EQ(p.kernels()->Get(p.sampler()->kernel())->name()->str(), "top_candidates");
  EXPECT_EQ(p.sampler()->k(), 64u);
  EXPECT_EQ(p.sampler()->threads(), 512u);
  EXPECT_EQ(h.backend->candidatesPerSeq(), 64);

  volt::testing::PlanRequest cpu;
  cpu.maxNumBatchedTokens = 64;
  auto loaded = plan::LoadedPlan::load(volt::testing::compilePlan(cpu));
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_EQ((*loaded)->plan().sampler(), nullptr);
}

TEST(CudaSampling, CandidatesOfADirectStepEqualTheCpuReference) {
  Harness h;
  ASSERT_TRUE(h.create()) << h.error;
  // A prefill and a decode together: direct launches at their own size.
  Step mixed;
  mixed.width = h.width();
  mixed.add({40, 41, 42}, 3, 7).add({7}, 9, 2).add({300, 301}, 5, 3);
  const size_t before = h.fake.calls().size();
  runAndCheckCandidates(h, mixed, {0.7f, 0.0f, 1.5f});
  ASSERT_EQ(h.emulator->sampler.size(), 1u);
  const SeenSampler &seen = h.emulator->sampler[0];
  EXPECT_FALSE(seen.fromGraph);
  EXPECT_EQ(seen.seqs, 3);
  EXPECT_EQ(seen.threads, 512u);
  EXPECT_EQ(seen.temperatures, (std::vector<float>{0.7f, 0.0f, 1.5f}));
  // Only the candidates came back: S x (k ids + k values + 3 stats).
  EXPECT_EQ(bytesToHost(h.fake, before), 3u * (64 * 8 + 12));
  EXPECT_EQ(h.backend->graphStats().directSteps, 1u);
}

TEST(CudaSampling, DecodeGraphsHoldTheSamplerAndReplaysGiveFreshCandidates) {
  Harness h;
  ASSERT_TRUE(h.create()) << h.error;
  // Three sequences: bucket 4, one padding row.
  runAndCheckCandidates(h, h.decode(3, 1), {1.0f, 0.5f, -1.0f});
  EXPECT_EQ(h.backend->graphStats().captures, 1u);
  const auto graphs = h.fake.graphs();
  ASSERT_EQ(graphs.size(), 1u);
  const auto &nodes = graphs[0].nodes;
  ASSERT_FALSE(nodes.empty());
  EXPECT_EQ(nodes.back().kernel, "top_candidates") << "the sampler ends the captured step";
  EXPECT_EQ(graphs[0].launches(), h.emulator->launchesPerStep(0) + 1);
  ASSERT_EQ(h.emulator->sampler.size(), 1u);
  EXPECT_TRUE(h.emulator->sampler[0].fromGraph);
  EXPECT_EQ(h.emulator->sampler[0].seqs, 4);
  EXPECT_EQ(h.emulator->sampler[0].temperatures, (std::vector<float>{1.0f, 0.5f, -1.0f, 0.0f}))
      << "the padding row's temperature is 0";

  // Replays read the new step's inputs and temperatures.
  for (int salt = 2; salt < 5; ++salt) {
    const float t = 0.25f * static_cast<float>(salt);
    const size_t before = h.fake.calls().size();
    runAndCheckCandidates(h, h.decode(3 + salt % 2, salt), std::vector<float>(3 + salt % 2, t));
    EXPECT_EQ(bytesToHost(h.fake, before), static_cast<uint64_t>(3 + salt % 2) * (64 * 8 + 12));
    EXPECT_EQ(h.emulator->sampler.back().temperatures[0], t);
  }
  EXPECT_EQ(h.backend->graphStats().captures, 1u);
  EXPECT_EQ(h.backend->graphStats().graphSteps, 4u);
  EXPECT_EQ(h.fake.directLaunches(), 0u);

  // runStep on the same bucket: its own graphs, without the sampler, and
  // full rows as before.
  h.runAndCheck(h.decode(4, 7));
  EXPECT_EQ(h.backend->graphStats().captures, 2u);
  const auto after = h.fake.graphs();
  ASSERT_EQ(after.size(), 2u);
  for (const FakeCall &node : after[1].nodes)
    EXPECT_NE(node.kernel, "top_candidates");
  EXPECT_EQ(h.emulator->sampler.size(), 4u);
}

TEST(CudaSampling, GraphsOffRunTheSamplerDirectly) {
  Harness h;
  CudaBackendOptions o = h.options();
  o.graphs = false;
  ASSERT_TRUE(h.create(o)) << h.error;
  runAndCheckCandidates(h, h.decode(5, 3), {0.9f, 0.8f, 0.0f, 2.0f, 1.0f});
  ASSERT_EQ(h.emulator->sampler.size(), 1u);
  EXPECT_FALSE(h.emulator->sampler[0].fromGraph);
  EXPECT_EQ(h.emulator->sampler[0].seqs, 5);
}

TEST(CudaSampling, FetchRowsGivesTheNamedRowsUntilTheNextStep) {
  Harness h;
  ASSERT_TRUE(h.create()) << h.error;
  std::vector<float> rows(2 * h.vocab());
  Status none = h.backend->fetchRows(std::vector<int32_t>{0, 1}, rows);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.message(), "no logits rows to fetch: rows stay on the GPU only from a "
                            "runStepCandidates step until the next step is submitted");

  const Step step = h.decode(5, 4);
  runAndCheckCandidates(h, step, std::vector<float>(5, 1.0f));
  const auto expected = h.emulator->expectedLogits(step.tokens, step.rows);
  const std::vector<int32_t> wanted = {0, 2, 3};
  std::vector<float> three(3 * h.vocab());
  Status fetched = h.backend->fetchRows(wanted, three);
  ASSERT_TRUE(fetched.ok()) << fetched.message();
  for (size_t i = 0; i < wanted.size(); ++i)
    for (uint32_t c = 0; c < h.vocab(); ++c)
      ASSERT_EQ(three[i * h.vocab() + c], expected[wanted[i] * h.vocab() + c])
          << "sequence " << wanted[i] << ", column " << c;
  // Again, and the last row alone: the rows stay until the next step.
  std::vector<float> last(h.vocab());
  ASSERT_TRUE(h.backend->fetchRows(std::vector<int32_t>{4}, last).ok());
  EXPECT_EQ(last, std::vector<float>(expected.begin() + 4 * h.vocab(), expected.end()));

  Status descending = h.backend->fetchRows(std::vector<int32_t>{2, 1}, rows);
  EXPECT_EQ(descending.message(), "sequences to fetch must be ascending; 1 follows 2");
  Status outside = h.backend->fetchRows(std::vector<int32_t>{0, 5}, rows);
  EXPECT_EQ(outside.message(), "sequence 5 is outside the last step's 5 sequences");
  Status size = h.backend->fetchRows(std::vector<int32_t>{0}, rows);
  EXPECT_EQ(size.message(), "rows buffer of " + std::to_string(2 * h.vocab()) +
                                " floats for 1 sequences x " + std::to_string(h.vocab()));

  // A later step ends them, whichever way it is run.
  h.runAndCheck(h.decode(2, 5));
  EXPECT_FALSE(h.backend->fetchRows(std::vector<int32_t>{0}, last).ok());
  runAndCheckCandidates(h, h.decode(2, 6), {1.0f, 1.0f});
  ASSERT_TRUE(h.backend->fetchRows(std::vector<int32_t>{1}, last).ok());
  auto ticket = h.backend->submitStep(h.decode(2, 7).batch());
  ASSERT_TRUE(ticket.ok()) << ticket.message();
  Status gone = h.backend->fetchRows(std::vector<int32_t>{1}, last);
  EXPECT_EQ(gone.message(), none.message());
  std::vector<float> logits(2 * h.vocab());
  ASSERT_TRUE(h.backend->finishStep(*ticket, logits).ok());
  h.expectLogits(h.decode(2, 7), logits);
}

TEST(CudaSampling, TensorParallelTwoSamplesOnRankZeroOverFullRows) {
  Harness h(2);
  ASSERT_TRUE(h.create()) << h.error;
  runAndCheckCandidates(h, h.decode(3, 1), {1.0f, 0.0f, 0.3f});
  runAndCheckCandidates(h, h.decode(3, 2), {0.6f, 0.6f, 0.6f});
  Step prefill;
  prefill.width = h.width();
  prefill.add({10, 11, 12, 13}, 4, 5).add({99}, 7, 6);
  runAndCheckCandidates(h, prefill, {2.0f, 0.0f});
  ASSERT_EQ(h.emulator->sampler.size(), 3u);
  for (const SeenSampler &s : h.emulator->sampler)
    EXPECT_EQ(s.device, 0);
  std::vector<float> row(h.vocab());
  ASSERT_TRUE(h.backend->fetchRows(std::vector<int32_t>{1}, row).ok());
  const auto expected = h.emulator->expectedLogits(prefill.tokens, prefill.rows);
  EXPECT_EQ(row, std::vector<float>(expected.begin() + h.vocab(), expected.end()));
  h.runAndCheck(h.decode(3, 3));
}

TEST(CudaSampling, BadArgumentsAreRefusedInOneLine) {
  Harness h;
  ASSERT_TRUE(h.create()) << h.error;
  const Step step = h.decode(2);
  Candidates c(2, 64);
  Status count = h.backend->runStepCandidates(step.batch(), std::vector<float>{1.0f}, c.view);
  EXPECT_EQ(count.message(), "temperatures hold 1 values for 2 sequences");
  Status nan = h.backend->runStepCandidates(
      step.batch(), std::vector<float>{1.0f, std::numeric_limits<float>::quiet_NaN()}, c.view);
  EXPECT_EQ(nan.message(), "temperature of sequence 1 is NaN; expected a number (<= 0: greedy)");
  Candidates small(1, 64);
  Status sizes =
      h.backend->runStepCandidates(step.batch(), std::vector<float>{1.0f, 1.0f}, small.view);
  EXPECT_EQ(sizes.message(), "candidate buffers of 64 ids, 64 values and 3 stats for 2 sequences "
                             "x 64 candidates (expected 128, 128 and 6)");
  auto ticket = h.backend->submitStep(step.batch());
  ASSERT_TRUE(ticket.ok());
  Status inFlight =
      h.backend->runStepCandidates(step.batch(), std::vector<float>{1.0f, 1.0f}, c.view);
  EXPECT_EQ(inFlight.message(),
            "a step submitted with submitStep is still in flight; finish it first");
  std::vector<float> logits(2 * h.vocab());
  ASSERT_TRUE(h.backend->finishStep(*ticket, logits).ok());
  EXPECT_TRUE(h.emulator->sampler.empty());
  // Nothing was broken by the refusals.
  runAndCheckCandidates(h, step, {1.0f, 1.0f});
}

TEST(CudaSampling, TheCandidateBuffersAreAllocatedAtCreateAndCountedInTheMemoryCheck) {
  uint64_t need = 0;
  {
    Harness h;
    ASSERT_TRUE(h.create()) << h.error;
    need = h.backend->deviceBytes();
    const size_t allocations = h.fake.count("cuMemAlloc"), pinned = h.fake.count("cuMemAllocHost");
    runAndCheckCandidates(h, h.decode(2), {1.0f, 1.0f});
    EXPECT_EQ(h.fake.count("cuMemAlloc"), allocations) << "no allocation after create()";
    EXPECT_EQ(h.fake.count("cuMemAllocHost"), pinned);
  }
  {
    // Exactly what it allocates is enough...
    Harness h;
    h.fake.usedByOthers = h.fake.totalMemory - need;
    ASSERT_TRUE(h.create()) << h.error;
  }
  {
    // ... and a byte less is not: the check counts every allocation, the
    // sampler's temperatures and candidates (2.8 KiB here) among them.
    Harness h;
    h.fake.usedByOthers = h.fake.totalMemory - (need - 1);
    ASSERT_FALSE(h.create());
    EXPECT_NE(h.error.find(": rank 0 needs "), std::string::npos) << h.error;
  }
}

} // namespace
} // namespace volt::cuda::testing
