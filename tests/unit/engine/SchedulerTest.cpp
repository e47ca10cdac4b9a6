//===- SchedulerTest.cpp - token budget, chunked prefill, admission, preemption,
// prefix caching, through the engine on the fake model ------------------===//
#include "tests/unit/engine/EngineHarness.h"
#include "tests/unit/engine/PieceDetokenizer.h"

#include <gtest/gtest.h>

#include <set>

namespace volt::engine {
namespace {

using testing::Harness;
using testing::randomPrompt;
using testing::referenceTokens;
using testing::smallConfig;

SamplingParams greedy(int32_t maxTokens) { return testing::greedyToLength(maxTokens); }

SamplingParams seeded(int32_t maxTokens, uint64_t seed) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.topP = 0.9f;
  p.seed = seed;
  p.maxTokens = maxTokens;
  return p;
}

// Submits `n` random requests and checks every output against the
// reference generator after running to idle.
void runAndCheck(Harness &h, int n, uint32_t seed, int32_t maxPrompt, int32_t maxOut,
                 bool sampled) {
  std::mt19937 rng(seed);
  struct Want {
    RequestId id;
    std::vector<int32_t> tokens;
  };
  std::vector<Want> wants;
  const int32_t vocab = h.engine->config().vocabSize;
  for (int i = 0; i < n; ++i) {
    auto prompt = randomPrompt(rng, 1 + int32_t(rng() % maxPrompt), vocab);
    int32_t out = 1 + int32_t(rng() % maxOut);
    SamplingParams p = sampled ? seeded(out, 1000 + i) : greedy(out);
    auto want = referenceTokens(prompt, out, p, p.seed.value_or(0), vocab);
    wants.push_back({h.submit(prompt, p), want});
  }
  h.runToIdle();
  for (const Want &w : wants) {
    const auto &c = h.results[w.id];
    EXPECT_TRUE(c.finished);
    EXPECT_EQ(c.tokens, w.tokens) << "request " << w.id;
    EXPECT_EQ(c.last.finishReason, FinishReason::Length);
  }
}

TEST(Scheduler, TokenBudgetAndSequenceLimitHold) {
  EngineConfig cfg = smallConfig();
  cfg.maxNumBatchedTokens = 32;
  cfg.maxNumSeqs = 5;
  Harness h(cfg);
  runAndCheck(h, 20, 1, 60, 20, false);
  ASSERT_FALSE(h.model->steps.empty());
  bool sawFullBudget = false;
  for (const auto &s : h.model->steps) {
    EXPECT_LE(s.numTokens, 32);
    EXPECT_LE(s.numSeqs, 5);
    sawFullBudget |= s.numTokens == 32;
  }
  EXPECT_TRUE(sawFullBudget);
}

TEST(Scheduler, LongPromptIsPrefilledInChunks) {
  EngineConfig cfg = smallConfig();
  cfg.maxNumBatchedTokens = 16;
  Harness h(cfg);
  std::mt19937 rng(2);
  auto prompt = randomPrompt(rng, 100, cfg.vocabSize);
  RequestId id = h.submit(prompt, greedy(3));
  // No token until the whole prompt is in the cache.
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(h.engine->step().ok());
    EXPECT_TRUE(h.results[id].outputs.empty()) << "step " << i;
  }
  h.runToIdle();
  std::vector<int32_t> lengths;
  for (const auto &s : h.model->steps)
    lengths.push_back(s.seqLengths[0]);
  EXPECT_EQ(lengths, (std::vector<int32_t>{16, 16, 16, 16, 16, 16, 4, 1, 1}));
  EXPECT_EQ(h.results[id].tokens, referenceTokens(prompt, 3, greedy(3), 0, cfg.vocabSize));
}

TEST(Scheduler, DecodesComeFirstThenPrefillChunks) {
  EngineConfig cfg = smallConfig();
  cfg.maxNumBatchedTokens = 16;
  Harness h(cfg);
  std::mt19937 rng(3);
  auto a = randomPrompt(rng, 4, cfg.vocabSize);
  auto b = randomPrompt(rng, 40, cfg.vocabSize);
  RequestId ia = h.submit(a, greedy(10));
  ASSERT_TRUE(h.engine->step().ok());
  RequestId ib = h.submit(b, greedy(2));
  h.runToIdle();
  const auto &steps = h.model->steps;
  ASSERT_GE(steps.size(), 5u);
  EXPECT_EQ(steps[0].seqLengths, std::vector<int32_t>{4});
  EXPECT_EQ(steps[1].seqLengths, (std::vector<int32_t>{1, 15}));
  EXPECT_EQ(steps[2].seqLengths, (std::vector<int32_t>{1, 15}));
  EXPECT_EQ(steps[3].seqLengths, (std::vector<int32_t>{1, 10}));
  EXPECT_EQ(steps[4].seqLengths, (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(h.results[ia].tokens, referenceTokens(a, 10, greedy(10), 0, cfg.vocabSize));
  EXPECT_EQ(h.results[ib].tokens, referenceTokens(b, 2, greedy(2), 0, cfg.vocabSize));
}

TEST(Scheduler, AdmissionWaitsForBlocksInArrivalOrder) {
  EngineConfig cfg = smallConfig();
  cfg.numKvBlocks = 10; // 40 tokens
  Harness h(cfg);
  std::mt19937 rng(4);
  auto p1 = randomPrompt(rng, 20, cfg.vocabSize); // 5 blocks, up to 7
  auto p2 = randomPrompt(rng, 24, cfg.vocabSize); // 6 blocks: waits for the first
  auto p3 = randomPrompt(rng, 4, cfg.vocabSize);  // would fit, but may not overtake
  RequestId r1 = h.submit(p1, greedy(8));
  RequestId r2 = h.submit(p2, greedy(2));
  RequestId r3 = h.submit(p3, greedy(2));
  ASSERT_TRUE(h.engine->step().ok());
  EngineStats st = h.engine->stats();
  EXPECT_EQ(st.numRunning, 1);
  EXPECT_EQ(st.numWaiting, 2);
  while (!h.results[r1].finished) {
    ASSERT_TRUE(h.engine->step().ok());
    EXPECT_TRUE(h.results[r3].outputs.empty());
  }
  for (const auto &s : h.model->steps)
    EXPECT_EQ(s.numSeqs, 1);
  h.runToIdle();
  EXPECT_EQ(h.results[r2].tokens, referenceTokens(p2, 2, greedy(2), 0, cfg.vocabSize));
  EXPECT_EQ(h.results[r3].tokens, referenceTokens(p3, 2, greedy(2), 0, cfg.vocabSize));
  EXPECT_EQ(h.engine->stats().numPreemptions, 0u);
}

TEST(Scheduler, RequestsThatCanNeverRunAreRejected) {
  EngineConfig cfg = smallConfig();
  cfg.maxModelLen = 64;
  cfg.numKvBlocks = 8; // 32 tokens
  Harness h(cfg);
  auto reject = [&](std::vector<int32_t> prompt, SamplingParams p, const std::string &message,
                    bool detok = true) {
    Request r;
    r.promptTokens = std::move(prompt);
    r.sampling = std::move(p);
    if (detok)
      r.detokenizer = std::make_unique<testing::PieceDetokenizer>(std::vector<std::string>{"x"});
    auto id = h.engine->submit(std::move(r));
    ASSERT_FALSE(id.ok()) << message;
    EXPECT_EQ(id.message(), message);
  };
  reject({}, greedy(1), "prompt: expected at least one token, found none");
  reject({1, 64}, greedy(1), "prompt: token 64 at index 1 is outside the vocabulary [0, 64)");
  reject(std::vector<int32_t>(64, 1), greedy(1),
         "prompt: 64 tokens leave no room for output within max_model_len 64");
  reject(std::vector<int32_t>(60, 1), greedy(5),
         "max_tokens: 60 prompt tokens plus max_tokens 5 is 65, beyond max_model_len 64");
  reject(std::vector<int32_t>(30, 1), greedy(4),
         "request needs 9 KV-cache blocks (33 tokens at block_size 4), but the cache holds only 8");
  SamplingParams noLimit = greedy(1);
  noLimit.maxTokens.reset(); // up to max_model_len: 63 tokens, 16 blocks
  reject(
      {1}, noLimit,
      "request needs 16 KV-cache blocks (63 tokens at block_size 4), but the cache holds only 8");
  SamplingParams stop = greedy(1);
  stop.stop = {"x"};
  reject({1}, stop, "stop: stop strings need a detokenizer, and the request has none", false);
  SamplingParams bad = greedy(1);
  bad.topP = 2;
  reject({1}, bad, "top_p: expected a value in (0, 1], found 2");
  // Exactly at the limits is accepted: 29 + 4 - 1 = 32 tokens = 8 blocks.
  RequestId id = h.submit(std::vector<int32_t>(29, 1), greedy(4));
  EXPECT_NE(id, 0u);
  h.runToIdle();
  EXPECT_EQ(h.results[id].tokens.size(), 4u);
}

TEST(Scheduler, StopsAtMaxModelLen) {
  EngineConfig cfg = smallConfig();
  cfg.maxModelLen = 20;
  Harness h(cfg);
  SamplingParams p = greedy(1);
  p.maxTokens.reset();
  RequestId id = h.submit(std::vector<int32_t>(12, 3), p);
  h.runToIdle();
  EXPECT_EQ(h.results[id].tokens.size(), 8u);
  EXPECT_EQ(h.results[id].last.finishReason, FinishReason::Length);
  EXPECT_EQ(h.results[id].last.usage.completionTokens, 8);
}

TEST(Scheduler, PreemptionByRecomputeGivesIdenticalOutput) {
  for (bool sampled : {false, true}) {
    EngineConfig cfg = smallConfig();
    cfg.numKvBlocks = 14; // 56 token slots for 6 sequences of up to 44 tokens
    Harness h(cfg);
    runAndCheck(h, 6, 5, 14, 30, sampled);
    EngineStats st = h.engine->stats();
    EXPECT_GT(st.numPreemptions, 0u) << "the test needs preemptions to mean something";
    EXPECT_EQ(st.numFinished, 6u);
  }
}

TEST(Scheduler, PreemptsTheNewestRunningSequence) {
  EngineConfig cfg = smallConfig();
  cfg.numKvBlocks = 8;
  Harness h(cfg);
  std::mt19937 rng(6);
  std::vector<RequestId> ids;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 3; ++i) {
    prompts.push_back(randomPrompt(rng, 6, cfg.vocabSize));
    ids.push_back(h.submit(prompts.back(), greedy(14)));
  }
  h.runToIdle();
  EXPECT_GT(h.engine->stats().numPreemptions, 0u);
  // The oldest sequence is never the victim while newer ones run.
  EXPECT_EQ(h.results[ids[0]].last.times.numPreemptions, 0);
  EXPECT_GT(h.results[ids[2]].last.times.numPreemptions, 0);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(h.results[ids[i]].tokens,
              referenceTokens(prompts[i], 14, greedy(14), 0, cfg.vocabSize));
}

// A recurrent model's state follows each sequence through its slot: more
// requests than slots (slots are reused), prompts longer than a step's
// budget (the state carries across chunks), preemptions (a recomputed
// sequence starts over, in whichever slot is free). The fake model checks
// every state against the sequence's own history.
TEST(Scheduler, StateSlotsFollowEachSequence) {
  for (bool sampled : {false, true}) {
    EngineConfig cfg = smallConfig();
    cfg.maxNumSeqs = 4;
    cfg.numStateSlots = 4;
    cfg.maxNumBatchedTokens = 16;
    Harness h(cfg);
    runAndCheck(h, 12, 21, 40, 12, sampled);
    EXPECT_EQ(h.engine->stats().numFinished, 12u);
    size_t used = 0, most = 0;
    std::set<int32_t> seen;
    for (const auto &slots : h.model->slotsPerStep) {
      used += slots.size();
      most = std::max(most, slots.size());
      seen.insert(slots.begin(), slots.end());
    }
    EXPECT_EQ(seen, (std::set<int32_t>{0, 1, 2, 3})) << "12 requests reuse the 4 slots";
    EXPECT_EQ(most, 4u);
    EXPECT_GT(used, 0u);
  }
  for (bool sampled : {false, true}) {
    EngineConfig cfg = smallConfig();
    cfg.numKvBlocks = 14;
    cfg.maxNumSeqs = 8;
    cfg.numStateSlots = 8;
    Harness h(cfg);
    runAndCheck(h, 6, 5, 14, 30, sampled);
    EXPECT_GT(h.engine->stats().numPreemptions, 0u) << "the test needs preemptions";
  }
}

TEST(Scheduler, StateSlotsAreCheckedWithTheLimits) {
  EngineConfig cfg = smallConfig();
  cfg.numStateSlots = 3;
  cfg.maxNumSeqs = 4;
  Status few = validateConfig(cfg);
  ASSERT_FALSE(few.ok());
  EXPECT_EQ(few.message(), "num_state_slots: expected 0 or at least max_num_seqs (4), found 3");
  cfg.numStateSlots = 4;
  cfg.enablePrefixCaching = true;
  Status prefix = validateConfig(cfg);
  ASSERT_FALSE(prefix.ok());
  EXPECT_EQ(prefix.message(), "enable_prefix_caching: the model has layers with recurrent state, "
                              "whose prefixes cannot be reused; turn prefix caching off");
  cfg.enablePrefixCaching = false;
  EXPECT_TRUE(validateConfig(cfg).ok());
}

TEST(Scheduler, SharedPrefixHitsTheCache) {
  EngineConfig cfg = smallConfig();
  cfg.enablePrefixCaching = true;
  Harness h(cfg);
  std::mt19937 rng(7);
  auto shared = randomPrompt(rng, 32, cfg.vocabSize);
  RequestId a = h.submit(shared, greedy(4));
  h.runToIdle();
  EXPECT_EQ(h.results[a].last.usage.cachedPromptTokens, 0);
  EXPECT_GT(h.engine->stats().kvCache.cachedBlocks, 0);

  auto b = shared;
  auto tail = randomPrompt(rng, 5, cfg.vocabSize);
  b.insert(b.end(), tail.begin(), tail.end());
  RequestId ib = h.submit(b, greedy(6));
  h.runToIdle();
  EXPECT_EQ(h.results[ib].last.usage.cachedPromptTokens, 32);
  EXPECT_EQ(h.results[ib].tokens, referenceTokens(b, 6, greedy(6), 0, cfg.vocabSize));
  // Only the 5 new prompt tokens ran in b's first step.
  EXPECT_EQ(h.model->steps[h.model->steps.size() - 6].seqLengths, std::vector<int32_t>{5});
  EngineStats st = h.engine->stats();
  EXPECT_EQ(st.prefixCacheQueries, 32u + 37u);
  EXPECT_EQ(st.prefixCacheHits, 32u);

  // The same prompt again: the last token is always computed, so the
  // last full block is recomputed (31 tokens rounded down to blocks).
  RequestId ic = h.submit(shared, greedy(4));
  h.runToIdle();
  EXPECT_EQ(h.results[ic].last.usage.cachedPromptTokens, 28);
  EXPECT_EQ(h.results[ic].tokens, h.results[a].tokens);

  // After a reset nothing is found; while a request holds blocks, no reset.
  RequestId id = h.submit(shared, greedy(4));
  ASSERT_TRUE(h.engine->step().ok());
  Status busy = h.engine->resetPrefixCache();
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.message(), "cannot reset the prefix cache while 8 blocks are in use");
  h.runToIdle();
  ASSERT_TRUE(h.engine->resetPrefixCache().ok());
  EXPECT_EQ(h.engine->stats().kvCache.cachedBlocks, 0);
  RequestId after = h.submit(shared, greedy(4));
  h.runToIdle();
  EXPECT_EQ(h.results[after].last.usage.cachedPromptTokens, 0);
  EXPECT_EQ(h.results[after].tokens, h.results[id].tokens);
}

TEST(Scheduler, BlocksAreSharedOnlyAfterTheyAreComputed) {
  EngineConfig cfg = smallConfig();
  cfg.enablePrefixCaching = true;
  Harness h(cfg);
  std::mt19937 rng(8);
  auto prompt = randomPrompt(rng, 24, cfg.vocabSize);
  RequestId a = h.submit(prompt, greedy(3));
  RequestId b = h.submit(prompt, greedy(3));
  h.runToIdle();
  // Admitted in the same step: b could not reuse blocks a had yet to write.
  EXPECT_EQ(h.results[a].last.usage.cachedPromptTokens, 0);
  EXPECT_EQ(h.results[b].last.usage.cachedPromptTokens, 0);
  EXPECT_EQ(h.results[a].tokens, h.results[b].tokens);
}

TEST(Scheduler, PrefixCachingUnderPressureKeepsOutputsExact) {
  for (bool sampled : {false, true}) {
    EngineConfig cfg = smallConfig();
    cfg.enablePrefixCaching = true;
    cfg.numKvBlocks = 24;
    cfg.maxNumBatchedTokens = 24;
    Harness h(cfg);
    std::mt19937 rng(9);
    std::vector<std::vector<int32_t>> prefixes;
    prefixes.reserve(3);
    for (int i = 0; i < 3; ++i)
      prefixes.push_back(randomPrompt(rng, 8 + 4 * i, cfg.vocabSize));
    struct Want {
      RequestId id;
      std::vector<int32_t> tokens;
    };
    std::vector<Want> wants;
    for (int round = 0; round < 4; ++round) {
      for (int i = 0; i < 8; ++i) {
        auto prompt = prefixes[rng() % 3];
        auto tail = randomPrompt(rng, int32_t(rng() % 9), cfg.vocabSize);
        prompt.insert(prompt.end(), tail.begin(), tail.end());
        int32_t out = 4 + int32_t(rng() % 20);
        SamplingParams p = sampled ? seeded(out, rng()) : greedy(out);
        wants.push_back({h.submit(prompt, p),
                         referenceTokens(prompt, out, p, p.seed.value_or(0), cfg.vocabSize)});
      }
      // Let part of the work run before more arrives.
      for (int s = 0; s < 10; ++s)
        ASSERT_TRUE(h.engine->step().ok());
    }
    h.runToIdle();
    for (const Want &w : wants)
      EXPECT_EQ(h.results[w.id].tokens, w.tokens) << "request " << w.id;
    EngineStats st = h.engine->stats();
    EXPECT_GT(st.prefixCacheHits, 0u);
    EXPECT_GT(st.kvCache.cachedBlocks, 0);
    EXPECT_EQ(st.kvCache.usedBlocks, 0);
  }
}

} // namespace
} // namespace volt::engine
