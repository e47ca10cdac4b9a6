//===- CudaGraphsTest.cpp - decode steps as CUDA graphs, on FakeCuda ------===//
//
// A real plan (a synthetic model compiled for a V100) run by CudaBackend on
// the fake driver: which steps are captured, what a captured step holds,
// what padded entries look like to the kernels, and that the logits are
// right whichever way a step ran.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/cuda/FakeCudaHarness.h"

#include <cstdlib>

namespace volt::cuda::testing {
namespace {

TEST(CudaGraphs, KernelsLoadOneModuleEachInPlanOrder) {
  Harness h;
  ASSERT_TRUE(h.create()) << h.error;
  const auto *kernels = h.plan->plan().kernels();
  auto loaded = h.fake.moduleFunctions(0);
  ASSERT_EQ(loaded.size(), kernels->size());
  for (uint32_t k = 0; k < kernels->size(); ++k)
    EXPECT_EQ(loaded[k], kernels->Get(k)->name()->str()) << "kernel " << k;
  EXPECT_EQ(h.backend->describeDevices(),
            std::vector<std::string>{"GPU 0: Fake V100 0 (sm_70), kernels from the plan's cubins"});
}

TEST(CudaGraphs, ANewerGpuLoadsThePtx) {
  Harness h;
  h.fake.computeCapability = {90};
  ASSERT_TRUE(h.create()) << h.error;
  EXPECT_EQ(h.backend->describeDevices(),
            std::vector<std::string>{
                "GPU 0: Fake V100 0 (sm_90), kernels from PTX compiled by the driver"});
  h.runAndCheck(h.decode(3));
}

TEST(CudaGraphs, PtxTheDriverRefusesIsNamedWithTheJitLog) {
  Harness h;
  h.fake.computeCapability = {90};
  h.fake.jitErrorLog = "ptxas application ptx input, line 12; error   : Unknown feature\n";
  ASSERT_FALSE(h.create());
  EXPECT_NE(h.error.find("loading kernel"), std::string::npos) << h.error;
  EXPECT_NE(h.error.find("CUDA_ERROR_INVALID_PTX"), std::string::npos) << h.error;
  EXPECT_NE(h.error.find("the driver's PTX compiler says: ptxas application ptx input, line 12; "
                         "error   : Unknown feature)"),
            std::string::npos)
      << h.error;
}

TEST(CudaGraphs, WeightsLandBeforeAnyKernelRuns) {
  // The weights are copied from pageable memory, which may return before
  // the DMA lands; the context is synchronised before the first step.
  Harness h;
  ASSERT_TRUE(h.create()) << h.error;
  const auto calls = h.fake.calls();
  size_t upload = calls.size(), sync = calls.size();
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].name == "cuMemcpyHtoD" && upload == calls.size())
      upload = i;
    if (calls[i].name == "cuCtxSynchronize" && upload < i && sync == calls.size())
      sync = i;
  }
  ASSERT_LT(upload, calls.size()) << "no weight upload";
  EXPECT_LT(sync, calls.size()) << "no cuCtxSynchronize after the weight upload";
}

TEST(CudaGraphs, DecodeStepsCaptureEachBucketOnceThenReplay) {
  Harness h;
  ASSERT_TRUE(h.create()) << h.error;
  ASSERT_EQ(h.backend->decodeBuckets(), (std::vector<uint32_t>{1, 2, 4, 8}));
  const size_t perStep = h.emulator->launchesPerStep(0);
  // Sequences per step, the bucket each lands in, and whether it is new.
  const struct {
    int seqs;
    int bucket;
    bool captures;
  } cases[] = {{1, 1, true},  {2, 2, true},  {3, 4, true},  {4, 4, false}, {5, 8, true},
               {8, 8, false}, {6, 8, false}, {1, 1, false}, {3, 4, false}};
  uint64_t captures = 0;
  for (const auto &c : cases) {
    SCOPED_TRACE("decode step of " + std::to_string(c.seqs) + " sequences");
    const size_t capturedBefore = h.fake.capturedLaunches(), graphsBefore = h.fake.graphs().size();
    const size_t executedBefore = h.fake.executedLaunches();
    h.emulator->attention.clear();
    h.runAndCheck(h.decode(c.seqs, c.seqs));
    captures += c.captures;
    GraphStats stats = h.backend->graphStats();
    EXPECT_EQ(stats.captures, captures);
    EXPECT_EQ(stats.captureFailures, 0u);
    EXPECT_EQ(stats.directSteps, 0u);
    EXPECT_EQ(h.fake.directLaunches(), 0u);
    // A new bucket's capture holds the step's launches, once, in one graph
    // (a single-GPU plan has no collective to split it).
    EXPECT_EQ(h.fake.capturedLaunches() - capturedBefore, c.captures ? perStep : 0);
    ASSERT_EQ(h.fake.graphs().size() - graphsBefore, c.captures ? 1u : 0u);
    if (c.captures) {
      EXPECT_EQ(h.fake.graphs().back().launches(), perStep);
    }
    EXPECT_EQ(h.fake.executedLaunches() - executedBefore, perStep);
    // The kernels ran at the bucket's size, the padding inert.
    ASSERT_EQ(h.emulator->attention.size(), 1u);
    const SeenAttention &seen = h.emulator->attention[0];
    EXPECT_EQ(seen.tokens, c.bucket);
    EXPECT_EQ(seen.seqs, c.bucket);
    const Step step = h.decode(c.seqs, c.seqs);
    const size_t B = static_cast<size_t>(c.bucket);
    ASSERT_EQ(seen.positions.size(), B);
    ASSERT_EQ(seen.slots.size(), B);
    ASSERT_EQ(seen.seqStarts.size(), B + 1);
    ASSERT_EQ(seen.contextLens.size(), B);
    ASSERT_EQ(seen.blockTables.size(), B * static_cast<size_t>(h.width()));
    for (int p = 0; p < c.bucket; ++p) {
      const bool real = p < c.seqs;
      EXPECT_EQ(seen.positions[p], real ? step.positions[p] : 0) << p;
      EXPECT_EQ(seen.slots[p], real ? step.slots[p] : -1) << p;
      EXPECT_EQ(seen.seqStarts[p + 1], p + 1) << p;
      EXPECT_EQ(seen.contextLens[p], real ? step.contextLens[p] : 1) << p;
      for (int32_t b = 0; b < h.width(); ++b)
        ASSERT_EQ(seen.blockTables[p * h.width() + b],
                  real ? step.blockTables[p * h.width() + b] : 0)
            << p << ", " << b;
    }
  }
  EXPECT_EQ(h.backend->graphStats().graphSteps, std::size(cases));
  // Everything the graphs and steps made is released with the backend.
  h.backend.reset();
  EXPECT_EQ(h.fake.liveObjects(), 0) << h.fake.describeLive();
}

TEST(CudaGraphs, PaddingNeverChangesAKernelVariant) {
  // max_num_seqs 64: the GEMM ops switch variant above 8 and above 39
  // tokens, so the buckets hold 8 and 39 as well as the powers of two.
  Harness h(1, 64);
  ASSERT_TRUE(h.create()) << h.error;
  ASSERT_EQ(h.backend->decodeBuckets(), (std::vector<uint32_t>{1, 2, 4, 8, 16, 32, 39, 64}));
  const auto &ops = *h.plan->plan().ranks()->Get(0)->ops();
  for (int seqs : {5, 8, 9, 17, 33, 39, 40, 64, 33}) {
    SCOPED_TRACE(std::to_string(seqs) + " sequences");
    h.emulator->launched.clear();
    h.runAndCheck(h.decode(seqs));
    ASSERT_EQ(h.emulator->launched.size(), h.emulator->launchesPerStep(0));
    for (const SeenLaunch &l : h.emulator->launched) {
      const plan::Op *op = ops.Get(static_cast<flatbuffers::uoffset_t>(l.op));
      // The variant an unpadded step of `seqs` tokens selects.
      uint32_t expected = 0;
      for (const plan::Launch *launch : *op->launches())
        if (launch->max_tokens() >= static_cast<uint32_t>(seqs)) {
          expected = launch->kernel();
          break;
        }
      EXPECT_EQ(l.kernel, expected) << op->name()->str();
    }
  }
  EXPECT_EQ(h.backend->graphStats().captures, 5u); // 8, 16, 32, 39, 64
  EXPECT_EQ(h.backend->graphStats().graphSteps, 9u);
}

TEST(CudaGraphs, PrefillAndMixedStepsRunDirect) {
  Harness h;
  ASSERT_TRUE(h.create()) << h.error;
  const size_t perStep = h.emulator->launchesPerStep(0);
  Step prefill;
  prefill.width = h.width();
  prefill.add({5, 6, 7}, 3, 1).add({9, 10}, 2, 2);
  h.runAndCheck(prefill);
  Step mixed;
  mixed.width = h.width();
  mixed.add({8}, 4, 1).add({11, 12, 13, 14}, 4, 3).add({20}, 3, 2);
  h.emulator->attention.clear();
  h.runAndCheck(mixed);
  EXPECT_EQ(h.fake.count("cuStreamBeginCapture"), 0u);
  EXPECT_EQ(h.fake.directLaunches(), 2 * perStep);
  GraphStats stats = h.backend->graphStats();
  EXPECT_EQ(stats.directSteps, 2u);
  EXPECT_EQ(stats.graphSteps, 0u);
  // Unpadded.
  ASSERT_EQ(h.emulator->attention.size(), 1u);
  EXPECT_EQ(h.emulator->attention[0].tokens, 6);
  EXPECT_EQ(h.emulator->attention[0].seqs, 3);
  EXPECT_EQ(h.emulator->attention[0].slots, mixed.slots);
}

TEST(CudaGraphs, GraphsOffNeverCapture) {
  {
    Harness h;
    CudaBackendOptions o = h.options();
    o.graphs = false;
    ASSERT_TRUE(h.create(o)) << h.error;
    EXPECT_TRUE(h.backend->decodeBuckets().empty());
    for (int seqs : {1, 3, 8, 3})
      h.runAndCheck(h.decode(seqs));
    EXPECT_EQ(h.fake.count("cuStreamBeginCapture"), 0u);
    EXPECT_EQ(h.backend->graphStats().directSteps, 4u);
  }
  {
    Harness h;
    ::setenv("VOLT_CUDA_GRAPHS", "0", 1);
    const bool created = h.create();
    ::unsetenv("VOLT_CUDA_GRAPHS");
    ASSERT_TRUE(created) << h.error;
    EXPECT_TRUE(h.backend->decodeBuckets().empty());
    h.runAndCheck(h.decode(2));
    EXPECT_EQ(h.fake.count("cuStreamBeginCapture"), 0u);
  }
  {
    Harness h;
    ::setenv("VOLT_CUDA_GRAPHS", "sometimes", 1);
    const bool created = h.create();
    ::unsetenv("VOLT_CUDA_GRAPHS");
    ASSERT_FALSE(created);
    EXPECT_EQ(h.error, "VOLT_CUDA_GRAPHS: expected 0 or 1 (off or on), found 'sometimes'");
  }
}

TEST(CudaGraphs, AFailedCaptureFallsBackToDirectLaunches) {
  Harness h;
  h.fake.endCaptureResult = 999; // CUDA_ERROR_UNKNOWN
  ASSERT_TRUE(h.create()) << h.error;
  const size_t perStep = h.emulator->launchesPerStep(0);
  h.runAndCheck(h.decode(3));
  ASSERT_EQ(h.log.size(), 1u);
  EXPECT_EQ(h.log[0], "cuda backend: capturing the decode step of 4 sequences as a CUDA graph "
                      "failed (GPU 0: cuStreamEndCapture: CUDA error 999); decode steps of that "
                      "size run with direct launches");
  GraphStats stats = h.backend->graphStats();
  EXPECT_EQ(stats.captures, 0u);
  EXPECT_EQ(stats.captureFailures, 1u);
  EXPECT_EQ(stats.directSteps, 1u);
  EXPECT_EQ(h.fake.directLaunches(), perStep);
  // The bucket is not tried again: its steps run direct and unpadded.
  h.emulator->attention.clear();
  h.runAndCheck(h.decode(4, 1));
  h.runAndCheck(h.decode(3, 2));
  EXPECT_EQ(h.fake.count("cuStreamBeginCapture"), 1u);
  EXPECT_EQ(h.backend->graphStats().directSteps, 3u);
  ASSERT_EQ(h.emulator->attention.size(), 2u);
  EXPECT_EQ(h.emulator->attention[1].seqs, 3);
  EXPECT_EQ(h.log.size(), 1u);
  // Other buckets still capture.
  h.fake.endCaptureResult = 0;
  h.runAndCheck(h.decode(2));
  EXPECT_EQ(h.backend->graphStats().captures, 1u);
}

TEST(CudaGraphs, TensorParallelStepsIssueTheCollectivesBetweenGraphs) {
  Harness h(2);
  ASSERT_TRUE(h.create()) << h.error;
  const std::vector<uint32_t> buckets = h.backend->decodeBuckets();
  ASSERT_EQ(buckets, (std::vector<uint32_t>{1, 2, 4, 8}));
  h.runAndCheck(h.decode(3));
  EXPECT_EQ(h.fake.capturedCollectives(), 0u);
  const auto calls = h.fake.calls();
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    size_t launches = 0, graphs = 0;
    for (const FakeGraph &g : h.fake.graphs())
      if (g.device == rank) {
        launches += g.launches();
        ++graphs;
      }
    EXPECT_EQ(launches, h.emulator->launchesPerStep(static_cast<uint32_t>(rank)));
    const std::vector<uint64_t> expected =
        h.emulator->allReduceCounts(static_cast<uint32_t>(rank), 4, 4);
    // One graph per run of launches between collectives (the all-gather's
    // column copies are the last).
    EXPECT_EQ(graphs, expected.size() + 2);
    std::vector<uint64_t> reduced;
    std::vector<std::string> order;
    for (const FakeCall &c : calls)
      if (c.device == rank &&
          (c.name == "ncclAllReduce" || c.name == "ncclAllGather" || c.name == "cuGraphLaunch")) {
        order.push_back(c.name);
        if (c.name == "ncclAllReduce")
          reduced.push_back(c.count);
      }
    EXPECT_EQ(reduced, expected);
    // Graph, collective, graph, ...: never two collectives or graphs in a row.
    for (size_t i = 1; i < order.size(); ++i)
      EXPECT_NE(order[i] == "cuGraphLaunch", order[i - 1] == "cuGraphLaunch") << i;
  }
  // Replayed: collectives again between the graphs, the logits right.
  h.runAndCheck(h.decode(4, 3));
  h.runAndCheck(h.decode(2, 4));
  GraphStats stats = h.backend->graphStats();
  EXPECT_EQ(stats.captures, 2u);
  EXPECT_EQ(stats.graphSteps, 3u);
  EXPECT_EQ(h.fake.capturedCollectives(), 0u);
  // A prefill step runs direct on both ranks.
  Step prefill;
  prefill.width = h.width();
  prefill.add({1, 2, 3, 4}, 4, 5).add({100, 200}, 2, 6);
  h.runAndCheck(prefill);
  EXPECT_EQ(h.backend->graphStats().directSteps, 1u);
}

} // namespace
} // namespace volt::cuda::testing
