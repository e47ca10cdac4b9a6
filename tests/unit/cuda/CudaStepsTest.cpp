//===- CudaStepsTest.cpp - submitting, finishing and refusing steps -------===//
//
// CudaBackend on FakeCuda with a real plan: steps in flight two at a time,
// the logits copied out chunk by chunk, what is refused and how, the errors
// create() gives for devices that cannot serve a plan, and that nothing is
// left behind.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/cuda/FakeCudaHarness.h"

namespace volt::cuda::testing {
namespace {

/// No message of the backend spans lines.
void expectOneLine(const std::string &message) {
  EXPECT_FALSE(message.empty());
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(CudaSteps, TwoStepsInFlightFinishInOrder) {
  Harness h;
  ASSERT_TRUE(h.create()) << h.error;
  Step a = h.decode(2, 1), b = h.decode(3, 2);
  Step prefill;
  prefill.width = h.width();
  prefill.add({40, 41, 42}, 3, 7);
  auto ta = h.backend->submitStep(a.batch());
  ASSERT_TRUE(ta.ok()) << ta.message();
  // The batch's arrays may be reused once submitStep returns.
  Step kept = a;
  a = h.decode(2, 9);
  auto tb = h.backend->submitStep(b.batch());
  ASSERT_TRUE(tb.ok()) << tb.message();
  EXPECT_EQ(*tb, *ta + 1);

  auto third = h.backend->submitStep(prefill.batch());
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.message(), "2 steps are in flight; finish the oldest before submitting another");
  std::vector<float> logits(prefill.seqs() * h.vocab());
  Status run = h.backend->runStep(prefill.batch(), logits);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.message(), "a step submitted with submitStep is still in flight; finish it first");

  std::vector<float> la(2 * h.vocab()), lb(3 * h.vocab());
  Status early = h.backend->finishStep(*tb, lb);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.message(), "step " + std::to_string(*tb) + " is not the oldest step in flight " +
                                 "(step " + std::to_string(*ta) + " is)");
  Status wrongSize = h.backend->finishStep(*ta, lb);
  ASSERT_FALSE(wrongSize.ok());
  EXPECT_EQ(wrongSize.message(), "logits buffer of " + std::to_string(3 * h.vocab()) +
                                     " floats for 2 rows x " + std::to_string(h.vocab()));
  Status fa = h.backend->finishStep(*ta, la);
  ASSERT_TRUE(fa.ok()) << fa.message();
  h.expectLogits(kept, la);
  // A slot is free again: the prefill goes in while b is in flight.
  auto tc = h.backend->submitStep(prefill.batch());
  ASSERT_TRUE(tc.ok()) << tc.message();
  Status fb = h.backend->finishStep(*tb, lb);
  ASSERT_TRUE(fb.ok()) << fb.message();
  h.expectLogits(b, lb);
  Status fc = h.backend->finishStep(*tc, logits);
  ASSERT_TRUE(fc.ok()) << fc.message();
  h.expectLogits(prefill, logits);
  Status none = h.backend->finishStep(*tc, logits);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.message(),
            "step " + std::to_string(*tc) + " is not the oldest step in flight " + "(none is)");
  // runStep works again.
  h.runAndCheck(h.decode(4, 5));
}

TEST(CudaSteps, APipelineOfStepsKeepsEachStepsInputsAndLogits) {
  // As an engine would: submit step n + 1, then finish step n. Every step
  // differs (sizes, tokens, decode or prefill), so that an input uploaded
  // from the wrong staging slot, or logits read from the wrong one, show.
  for (bool graphs : {true, false}) {
    SCOPED_TRACE(graphs ? "graphs" : "no graphs");
    Harness h;
    CudaBackendOptions o = h.options();
    o.graphs = graphs;
    ASSERT_TRUE(h.create(o)) << h.error;
    std::vector<Step> steps;
    for (int i = 0; i < 12; ++i) {
      if (i % 4 == 3) {
        Step s;
        s.width = h.width();
        s.add({i, i + 1, i + 2}, 3, 9).add({7 * i}, 5, 10);
        steps.push_back(s);
      } else {
        steps.push_back(h.decode(1 + (i * 5) % 8, i));
      }
    }
    std::vector<uint64_t> tickets;
    for (size_t i = 0; i <= steps.size(); ++i) {
      if (i < steps.size()) {
        auto t = h.backend->submitStep(steps[i].batch());
        ASSERT_TRUE(t.ok()) << "step " << i << ": " << t.message();
        tickets.push_back(*t);
      }
      if (i >= 1) {
        const Step &done = steps[i - 1];
        std::vector<float> logits(static_cast<size_t>(done.seqs()) * h.vocab());
        Status s = h.backend->finishStep(tickets[i - 1], logits);
        ASSERT_TRUE(s.ok()) << "step " << i - 1 << ": " << s.message();
        SCOPED_TRACE("step " + std::to_string(i - 1));
        h.expectLogits(done, logits);
      }
    }
    EXPECT_EQ(h.emulator->lmHeadLaunches, steps.size());
  }
}

TEST(CudaSteps, LogitsComeBackInChunks) {
  Harness h;
  CudaBackendOptions o = h.options();
  o.logitsChunkBytes = 3 * h.vocab() * 4; // three rows
  ASSERT_TRUE(h.create(o)) << h.error;
  for (int seqs : {8, 7, 3, 1, 4}) {
    SCOPED_TRACE(std::to_string(seqs) + " sequences");
    h.fake.clearCalls();
    h.runAndCheck(h.decode(seqs, seqs));
    std::vector<uint64_t> copies;
    for (const FakeCall &c : h.fake.calls())
      if (c.name == "cuMemcpyDtoHAsync")
        copies.push_back(c.count / (h.vocab() * 4));
    std::vector<uint64_t> expected;
    for (int row = 0; row < seqs; row += 3)
      expected.push_back(static_cast<uint64_t>(std::min(3, seqs - row)));
    EXPECT_EQ(copies, expected);
  }
}

// A speculative verify step: a sequence's last token and its drafts each
// get a logits row (R > S), through the row gather and the LM head, the
// rows coming back in chunks; the candidate path keeps one row per
// sequence.
TEST(CudaSteps, AVerifyStepReturnsARowPerDraft) {
  Harness h;
  CudaBackendOptions o = h.options();
  o.logitsChunkBytes = 3 * h.vocab() * 4; // three rows
  ASSERT_TRUE(h.create(o)) << h.error;
  Step verify = h.decode(2, 4);
  verify.add({7, 8, 9, 10}, 20, 3); // its last token and three drafts
  verify.rows = {0, 1, 2, 3, 4, 5};
  h.fake.clearCalls();
  h.runAndCheck(verify);
  std::vector<uint64_t> copies;
  for (const FakeCall &c : h.fake.calls())
    if (c.name == "cuMemcpyDtoHAsync")
      copies.push_back(c.count / (h.vocab() * 4));
  EXPECT_EQ(copies, (std::vector<uint64_t>{3, 3}));
  // Then a decode step again (a CUDA graph bucket) with one row each.
  h.runAndCheck(h.decode(3, 5));
  if (h.backend->candidatesPerSeq() > 0) {
    std::vector<float> temperatures(2, 0.0f);
    std::vector<int32_t> ids(2 * size_t(h.backend->candidatesPerSeq()));
    std::vector<float> values(ids.size()), stats(6);
    engine::StepCandidates out{h.backend->candidatesPerSeq(), ids, values, stats};
    Status s = h.backend->runStepCandidates(verify.batch(), temperatures, out);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("sampling candidates serve one row per sequence"),
              std::string::npos)
        << s.message();
  }
}

TEST(CudaSteps, TensorParallelPipeline) {
  Harness h(2);
  CudaBackendOptions o = h.options();
  o.logitsChunkBytes = 2 * h.vocab() * 4;
  ASSERT_TRUE(h.create(o)) << h.error;
  std::vector<Step> steps = {h.decode(3, 1), h.decode(5, 2), h.decode(3, 3), h.decode(8, 4)};
  Step prefill;
  prefill.width = h.width();
  prefill.add({3, 1, 4, 1, 5}, 5, 11);
  steps.insert(steps.begin() + 2, prefill);
  std::vector<uint64_t> tickets;
  for (size_t i = 0; i <= steps.size(); ++i) {
    if (i < steps.size()) {
      auto t = h.backend->submitStep(steps[i].batch());
      ASSERT_TRUE(t.ok()) << t.message();
      tickets.push_back(*t);
    }
    if (i >= 1) {
      std::vector<float> logits(static_cast<size_t>(steps[i - 1].seqs()) * h.vocab());
      Status s = h.backend->finishStep(tickets[i - 1], logits);
      ASSERT_TRUE(s.ok()) << s.message();
      h.expectLogits(steps[i - 1], logits);
    }
  }
  EXPECT_EQ(h.fake.capturedCollectives(), 0u);
}

TEST(CudaSteps, DestroyingTheBackendWithAStepInFlightLeavesNothing) {
  Harness h(2);
  ASSERT_TRUE(h.create()) << h.error;
  h.runAndCheck(h.decode(3));
  ASSERT_TRUE(h.backend->submitStep(h.decode(2).batch()).ok());
  ASSERT_TRUE(h.backend->submitStep(h.decode(5).batch()).ok());
  EXPECT_GT(h.fake.liveObjects(), 0);
  h.backend.reset();
  EXPECT_EQ(h.fake.liveObjects(), 0) << h.fake.describeLive();
  EXPECT_TRUE(h.fake.errors().empty());
}

TEST(CudaSteps, RefusesBatchesThePlanCannotServe) {
  Harness h;
  ASSERT_TRUE(h.create()) << h.error;
  Step step = h.decode(2);
  step.tokens[1] = static_cast<int32_t>(h.vocab());
  auto t = h.backend->submitStep(step.batch());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.message(), "token id 512 is outside the vocabulary (0..511)");
  Step wide = h.decode(2);
  wide.width = 3;
  t = h.backend->submitStep(wide.batch());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.message(), "block tables of width 3, the plan's is " + std::to_string(h.width()));
  Step nine = h.decode(8);
  nine.add({1}, 2, 20);
  t = h.backend->submitStep(nine.batch());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.message(), "step of 9 sequences; the plan serves 1..8");
  // A verify step asks for more logits rows than sequences, up to the
  // plan's max_logits_rows (max_num_seqs here: a plan without drafts);
  // logits rows must be ascending rows of the step.
  Step verify = h.decode(1);
  verify.add({7, 8, 9, 10, 11, 12, 13, 14, 15}, 18, 2);
  verify.rows = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  t = h.backend->submitStep(verify.batch());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.message(), "step of 9 logits rows for 2 sequences; the plan serves one per sequence "
                         "up to 8 in all");
  Step backwards = h.decode(2);
  std::swap(backwards.rows[0], backwards.rows[1]);
  t = h.backend->submitStep(backwards.batch());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.message(), "logits row 0 (entry 1): expected ascending token rows of the step's 2");
  Step outside = h.decode(2);
  outside.rows[1] = 2;
  t = h.backend->submitStep(outside.batch());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.message(), "logits row 2 (entry 1): expected ascending token rows of the step's 2");
  // Nothing was enqueued by a refused step.
  EXPECT_EQ(h.fake.count("cuLaunchKernel"), 0u);
}

TEST(CudaSteps, NotEnoughDeviceMemoryIsOneLine) {
  Harness h;
  h.fake.usedByOthers = h.fake.totalMemory - (1 << 20);
  ASSERT_FALSE(h.create());
  expectOneLine(h.error);
  EXPECT_NE(h.error.find(": rank 0 needs "), std::string::npos) << h.error;
  EXPECT_NE(h.error.find("GPU 0 (Fake V100 0) has 1.00 MiB free; lower gpu_memory_utilization"),
            std::string::npos)
      << h.error;
  EXPECT_EQ(h.fake.liveObjects(), 0) << h.fake.describeLive();
}

TEST(CudaSteps, APlanForANewerGpuIsOneLine) {
  Harness h;
  h.fake.computeCapability = {60};
  ASSERT_FALSE(h.create());
  expectOneLine(h.error);
  EXPECT_NE(h.error.find(": the plan is for sm_70; GPU 0 (Fake V100 0) is sm_60, older than that; "
                         "compile the spec for this GPU's SKU"),
            std::string::npos)
      << h.error;
  EXPECT_EQ(h.fake.liveObjects(), 0) << h.fake.describeLive();
}

TEST(CudaSteps, ATensorParallelPlanWithoutNcclIsOneLine) {
  Harness h(2);
  CudaBackendOptions o = h.options();
  o.nccl = nullptr;
  o.ncclLibraries = {"libvolt-no-such-nccl.so.2"};
  ASSERT_FALSE(h.create(o));
  expectOneLine(h.error);
  EXPECT_EQ(h.error.rfind("NCCL is not installed (tried libvolt-no-such-nccl.so.2 (", 0), 0u)
      << h.error;
  EXPECT_NE(h.error.find("); a plan with tensor_parallel_size > 1 needs it to run on GPUs"),
            std::string::npos)
      << h.error;
  EXPECT_EQ(h.fake.liveObjects(), 0) << h.fake.describeLive();
}

TEST(CudaSteps, TooFewGpusIsOneLine) {
  Harness h(2);
  CudaBackendOptions o = h.options();
  o.devices = {0, 2};
  ASSERT_FALSE(h.create(o));
  expectOneLine(h.error);
  EXPECT_NE(h.error.find(": the plan needs 2 GPU(s) (device 2); this machine has 2"),
            std::string::npos)
      << h.error;
  EXPECT_EQ(h.fake.liveObjects(), 0) << h.fake.describeLive();
}

} // namespace
} // namespace volt::cuda::testing
