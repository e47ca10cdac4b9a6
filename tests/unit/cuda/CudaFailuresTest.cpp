//===- CudaFailuresTest.cpp - driver and NCCL failures during steps -------===//
//
// CudaBackend on FakeCuda, with failures injected where a GPU can fail: a
// capture that fails on one rank only, and a launch or collective that
// fails part way through a tensor-parallel step, after which the ranks'
// collectives no longer pair up.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/cuda/FakeCudaHarness.h"

namespace volt::cuda::testing {
namespace {

TEST(CudaFailures, ACaptureFailingOnOneRankTurnsTheBucketDirectOnEvery) {
  Harness h(2);
  h.fake.endCaptureResult = 999;
  h.fake.endCaptureDevice = 1;
  ASSERT_TRUE(h.create()) << h.error;
  // Rank 0 replays its graphs, rank 1 launches the same padded step.
  h.runAndCheck(h.decode(3));
  ASSERT_EQ(h.log.size(), 1u);
  EXPECT_NE(h.log[0].find("(GPU 1: cuStreamEndCapture: CUDA error 999)"), std::string::npos)
      << h.log[0];
  GraphStats stats = h.backend->graphStats();
  EXPECT_EQ(stats.captureFailures, 1u);
  EXPECT_EQ(stats.captures, 0u);
  // From then on both ranks run the bucket's steps direct, unpadded.
  h.emulator->attention.clear();
  const size_t begun = h.fake.count("cuStreamBeginCapture");
  h.runAndCheck(h.decode(4, 1));
  ASSERT_EQ(h.emulator->attention.size(), 2u);
  EXPECT_EQ(h.emulator->attention[0].seqs, 4);
  EXPECT_EQ(h.emulator->attention[1].seqs, 4);
  EXPECT_EQ(h.fake.count("cuStreamBeginCapture"), begun);
  h.backend.reset();
  EXPECT_EQ(h.fake.liveObjects(), 0) << h.fake.describeLive();
  EXPECT_TRUE(h.fake.errors().empty());
}

/// Fails the `nth` call named `name` on `device` with `code`.
std::function<int(const FakeCall &)> failNth(std::string name, int device, int nth, int code) {
  auto seen = std::make_shared<int>(0);
  return [=](const FakeCall &c) {
    return c.name == name && c.device == device && ++*seen == nth ? code : 0;
  };
}

TEST(CudaFailures, AStepFailingOnOneRankStopsTheBackend) {
  for (const char *failing : {"cuLaunchKernel", "ncclAllReduce"}) {
    SCOPED_TRACE(failing);
    Harness h(2);
    CudaBackendOptions o = h.options();
    o.graphs = false;
    ASSERT_TRUE(h.create(o)) << h.error;
    h.runAndCheck(h.decode(2));
    // Rank 1 fails part way; rank 0 has queued its whole step, whose
    // collectives rank 1 will never join.
    h.fake.failCall = failNth(failing, 1, 4, std::string(failing) == "cuLaunchKernel" ? 700 : 3);
    Step step = h.decode(3, 1);
    std::vector<float> logits(3 * h.vocab());
    Status s = h.backend->runStep(step.batch(), logits);
    ASSERT_FALSE(s.ok());
    const std::string first = s.message();
    EXPECT_EQ(first.rfind("GPU 1: ", 0), 0u) << first;
    // Later steps are refused rather than pairing rank 0's stale
    // collectives with rank 1's new ones.
    h.fake.failCall = nullptr;
    s = h.backend->runStep(step.batch(), logits);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message(),
              "the cuda backend stopped after an earlier failure (" + first + "); create it again");
    auto t = h.backend->submitStep(step.batch());
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.message(), s.message());
    // Tearing down does not wait for collectives that will never run.
    h.backend.reset();
    EXPECT_EQ(h.fake.liveObjects(), 0) << h.fake.describeLive();
    EXPECT_TRUE(h.fake.errors().empty());
  }
}

TEST(CudaFailures, AFailedCallOrWaitStopsTheBackend) {
  {
    Harness h;
    ASSERT_TRUE(h.create()) << h.error;
    h.fake.failCall = failNth("cuMemcpyDtoHAsync", 0, 1, 1);
    std::vector<float> logits(2 * h.vocab());
    Status s = h.backend->runStep(h.decode(2).batch(), logits);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message(), "GPU 0: reading the logits: CUDA_ERROR_INVALID_VALUE: (fake CUDA)");
    h.fake.failCall = nullptr;
    s = h.backend->runStep(h.decode(2).batch(), logits);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("stopped after an earlier failure"), std::string::npos)
        << s.message();
  }
  {
    // A kernel fault shows at the next wait: finishing the step.
    Harness h;
    ASSERT_TRUE(h.create()) << h.error;
    auto ticket = h.backend->submitStep(h.decode(2).batch());
    ASSERT_TRUE(ticket.ok()) << ticket.message();
    h.fake.fault(0);
    std::vector<float> logits(2 * h.vocab());
    Status s = h.backend->finishStep(*ticket, logits);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message(), "GPU 0: running the step: CUDA_ERROR_ILLEGAL_ADDRESS: (fake CUDA)");
    auto next = h.backend->submitStep(h.decode(2).batch());
    ASSERT_FALSE(next.ok());
    EXPECT_EQ(next.message(),
              "the cuda backend stopped after an earlier failure (GPU 0: running "
              "the step: CUDA_ERROR_ILLEGAL_ADDRESS: (fake CUDA)); create it again");
  }
}

} // namespace
} // namespace volt::cuda::testing
