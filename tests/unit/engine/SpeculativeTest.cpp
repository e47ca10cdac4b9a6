//===- SpeculativeTest.cpp - n-gram drafts, verify steps and acceptance on
// the fake model: speculative outputs are the non-speculative ones -------===//
#include "runtime/engine/NgramProposer.h"
#include "tests/unit/engine/EngineHarness.h"
#include "tests/unit/engine/PieceDetokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace volt::engine {
namespace {

using testing::Harness;
using testing::PieceDetokenizer;
using testing::randomPrompt;
using testing::referenceTokens;
using testing::smallConfig;

std::vector<int32_t> propose(std::vector<int32_t> tokens, int32_t minN, int32_t maxN, size_t k) {
  std::vector<int32_t> out(k, -1);
  out.resize(size_t(proposeNgram(tokens, minN, maxN, out)));
  return out;
}

TEST(NgramProposer, DraftsFollowTheMostRecentLongestMatch) {
  // Suffix [1 2 3] recurs at the start; [2 3] recurs later too, but the
  // longer match wins.
  EXPECT_EQ(propose({1, 2, 3, 7, 8, 2, 3, 9, 1, 2, 3}, 1, 3, 3), (std::vector<int32_t>{7, 8, 2}));
  // With maxN 2 the most recent [2 3] wins.
  EXPECT_EQ(propose({1, 2, 3, 7, 8, 2, 3, 9, 1, 2, 3}, 1, 2, 3), (std::vector<int32_t>{9, 1, 2}));
  // Of two occurrences of the same length, the most recent.
  EXPECT_EQ(propose({5, 6, 1, 5, 6, 2, 5, 6}, 2, 2, 1), (std::vector<int32_t>{2}));
  // ... unless an older one is followed by more of the drafts wanted: in a
  // run of repeats the latest occurrence has one follower.
  EXPECT_EQ(propose({5, 6, 1, 5, 6, 2, 5, 6}, 2, 2, 3), (std::vector<int32_t>{2, 5, 6}));
  EXPECT_EQ(propose({5, 6, 1, 5, 6, 2, 5, 6}, 2, 2, 4), (std::vector<int32_t>{1, 5, 6, 2}));
  EXPECT_EQ(propose({8, 9, 9, 9, 9, 9}, 1, 1, 3), (std::vector<int32_t>{9, 9, 9}));
  EXPECT_EQ(propose({8, 9, 9, 9, 9, 9}, 1, 1, 9), (std::vector<int32_t>{9, 9, 9, 9}));
}

TEST(NgramProposer, NoDraftsBelowTheMinimumOrAtTheEnd) {
  EXPECT_TRUE(propose({1, 2, 3, 4, 9, 3, 4}, 3, 5, 4).empty()); // only [3 4] recurs
  EXPECT_EQ(propose({1, 2, 3, 4, 9, 3, 4}, 2, 5, 4), (std::vector<int32_t>{9, 3, 4}));
  EXPECT_TRUE(propose({4, 4}, 2, 2, 4).empty()); // too short to hold a match and a draft
  // The drafts stop where the sequence ends.
  EXPECT_EQ(propose({4, 4, 4}, 2, 2, 5), (std::vector<int32_t>{4}));
  EXPECT_TRUE(propose({1, 2, 3}, 1, 1, 4).empty());
  EXPECT_TRUE(propose({1, 2, 1}, 1, 1, 0).empty());
  EXPECT_EQ(propose({1, 2, 1}, 1, 1, 4), (std::vector<int32_t>{2, 1}));
}

SamplingParams greedy(int32_t maxTokens) { return testing::greedyToLength(maxTokens); }

SamplingParams seeded(int32_t maxTokens, uint64_t seed) {
  SamplingParams p;
  p.temperature = 0.7f;
  p.topK = 8;
  p.seed = seed;
  p.maxTokens = maxTokens;
  p.ignoreEos = true;
  p.repetitionPenalty = 1.05f;
  return p;
}

EngineConfig specConfig(int32_t k) {
  EngineConfig c = smallConfig();
  c.numSpeculativeTokens = k;
  c.promptLookupMin = 1;
  c.promptLookupMax = 3;
  return c;
}

// A Markov model (logits from the last token) repeats itself, so prompt
// lookup finds drafts the target agrees with.
constexpr int32_t kWindow = 1;

struct Submitted {
  std::vector<RequestId> ids;
  std::vector<std::vector<int32_t>> want;
};

// Submits `n` random requests (greedy or seeded) and records what the
// reference generator says each must produce.
Submitted submitMany(Harness &h, int n, uint32_t seed, bool sampled, int32_t maxPrompt = 20,
               int32_t maxOut = 40) {
  h.model->window = kWindow;
  std::mt19937 rng(seed);
  Submitted r;
  const int32_t vocab = h.engine->config().vocabSize;
  for (int i = 0; i < n; ++i) {
    auto prompt = randomPrompt(rng, 1 + int32_t(rng() % uint32_t(maxPrompt)), vocab);
    const int32_t out = 1 + int32_t(rng() % uint32_t(maxOut));
    SamplingParams p = sampled ? seeded(out, 500 + i) : greedy(out);
    r.want.push_back(referenceTokens(prompt, out, p, *p.seed, vocab, kWindow));
    r.ids.push_back(h.submit(prompt, p));
  }
  return r;
}

void expectOutputs(Harness &h, const Submitted &r) {
  for (size_t i = 0; i < r.ids.size(); ++i) {
    const testing::Collected &c = h.results[r.ids[i]];
    EXPECT_TRUE(c.finished);
    EXPECT_EQ(c.tokens, r.want[i]) << "request " << i;
    EXPECT_EQ(c.last.finishReason, FinishReason::Length);
    // One output per token, counted as of its emission.
    for (size_t j = 0; j < c.outputs.size(); ++j)
      EXPECT_EQ(c.outputs[j].usage.completionTokens, int32_t(j) + 1);
  }
}

TEST(Speculative, GreedyAndSeededOutputsAreTheNonSpeculativeOnes) {
  for (int32_t k : {1, 3, 7}) {
    for (bool sampled : {false, true}) {
      SCOPED_TRACE("k=" + std::to_string(k) + (sampled ? " seeded" : " greedy"));
      Harness h(specConfig(k));
      Submitted r = submitMany(h, 12, uint32_t(40 + k), sampled);
      h.runToIdle();
      expectOutputs(h, r);
      const SpecDecodeStats st = h.engine->stats().specDecode;
      EXPECT_GT(st.numDrafts, 0u);
      EXPECT_LE(st.numAcceptedTokens, st.numDraftTokens);
      EXPECT_LE(st.numDraftTokens, st.numDrafts * uint64_t(k));
      uint64_t perPos = 0;
      for (int32_t j = 0; j < kMaxSpeculativeTokens; ++j) {
        perPos += st.acceptedPerPosition[size_t(j)];
        if (j >= k)
          EXPECT_EQ(st.acceptedPerPosition[size_t(j)], 0u);
        if (j > 0) // a draft is kept only after the ones before it
          EXPECT_LE(st.acceptedPerPosition[size_t(j)], st.acceptedPerPosition[size_t(j - 1)]);
      }
      EXPECT_EQ(perPos, st.numAcceptedTokens);
      // Greedy on a model that repeats itself: most drafts are kept, and
      // fewer steps than tokens are needed.
      if (!sampled) {
        EXPECT_GT(st.meanAcceptedLength(), 1.5);
      }
      EXPECT_GT(st.numAcceptedTokens, 0u);
    }
  }
}

TEST(Speculative, VerifyStepsCarryDraftRows) {
  Harness h(specConfig(4));
  h.model->window = kWindow;
  const std::vector<int32_t> prompt = {3, 9, 3, 9};
  auto want = referenceTokens(prompt, 30, greedy(30), 0, 64, kWindow);
  RequestId id = h.submit(prompt, greedy(30));
  h.runToIdle();
  EXPECT_EQ(h.results[id].tokens, want);
  // Fewer steps than tokens, and some steps with more rows than sequences.
  EXPECT_LT(h.model->steps.size(), 30u);
  bool verified = false;
  for (const auto &s : h.model->steps) {
    EXPECT_LE(s.numRows, s.numSeqs * 5);
    verified |= s.numRows > s.numSeqs;
  }
  EXPECT_TRUE(verified);
}

TEST(Speculative, DraftsFitTheTokenBudgetRowsAndBlocks) {
  // A tight token budget, few spare rows and few blocks: drafts are cut to
  // fit, never preempt, and outputs stay exact.
  EngineConfig cfg = specConfig(7);
  cfg.maxNumBatchedTokens = 12;
  cfg.maxNumSeqs = 6;
  cfg.maxLogitsRows = 9;
  cfg.numKvBlocks = 40;
  Harness h(cfg);
  Submitted r = submitMany(h, 16, 7, false, 30, 40);
  h.runToIdle();
  expectOutputs(h, r);
  for (const auto &s : h.model->steps) {
    EXPECT_LE(s.numTokens, cfg.maxNumBatchedTokens);
    EXPECT_LE(s.numRows, cfg.maxLogitsRows);
    EXPECT_LE(s.numSeqs, cfg.maxNumSeqs);
  }
  EXPECT_GT(h.engine->stats().specDecode.numAcceptedTokens, 0u);
}

TEST(Speculative, PreemptionAndPrefixCachingKeepOutputsExact) {
  for (bool sampled : {false, true}) {
    EngineConfig cfg = specConfig(5);
    cfg.numKvBlocks = 30; // forces preemption
    cfg.enablePrefixCaching = true;
    Harness h(cfg);
    Submitted r = submitMany(h, 10, sampled ? 91 : 90, sampled, 24, 48);
    h.runToIdle();
    expectOutputs(h, r);
    EXPECT_GT(h.engine->stats().numPreemptions, 0u);
  }
}

// A recurrent model (the fake's state is a hash of the sequence's tokens,
// checked against its KV history every step): a verify step copies the
// state after each draft-carrying token, and a rejected draft leaves none
// of its update behind, under batching, chunked prefill and preemption.
TEST(Speculative, RecurrentStateIsRolledBackToTheLastKeptDraft) {
  for (int32_t k : {1, 3, 7}) {
    for (bool sampled : {false, true}) {
      SCOPED_TRACE("k=" + std::to_string(k) + (sampled ? " seeded" : " greedy"));
      EngineConfig cfg = specConfig(k);
      cfg.numStateSlots = cfg.maxNumSeqs * (1 + k);
      cfg.maxNumBatchedTokens = 24; // chunked prefills
      cfg.numKvBlocks = 40;         // preemption
      Harness h(cfg);
      Submitted r = submitMany(h, 14, uint32_t(70 + k), sampled, 30, 40);
      h.runToIdle();
      expectOutputs(h, r);
      const SpecDecodeStats st = h.engine->stats().specDecode;
      EXPECT_GT(st.numAcceptedTokens, 0u);
      // Some drafts were rejected, so some states came from their copies.
      EXPECT_LT(st.numAcceptedTokens, st.numDraftTokens);
      EXPECT_GT(h.model->numSnapshots, 0);
      EXPECT_GT(h.engine->stats().numPreemptions, 0u);
    }
  }
}

TEST(Speculative, StopTokensAndStringsInsideAnAcceptedRun) {
  EngineConfig cfg = specConfig(7);
  Harness h(cfg);
  // An order-2 Markov model: longer cycles than order 1.
  constexpr int32_t window = 2;
  h.model->window = window;
  // A prompt that already holds the model's cycle: drafts from the first
  // decode step on, so the stops below fall inside accepted runs.
  // The start is picked so that the first 6 outputs differ.
  std::vector<int32_t> prompt, ref;
  bool found = false;
  for (int32_t start = 0; start < cfg.vocabSize * cfg.vocabSize && !found; ++start) {
    prompt = {start / cfg.vocabSize, start % cfg.vocabSize};
    auto warm = referenceTokens(prompt, 80, greedy(80), 0, cfg.vocabSize, window);
    prompt.insert(prompt.end(), warm.begin(), warm.end());
    ref = referenceTokens(prompt, 40, greedy(40), 0, cfg.vocabSize, window);
    std::vector<int32_t> head(ref.begin(), ref.begin() + 6);
    std::sort(head.begin(), head.end());
    found = std::unique(head.begin(), head.end()) == head.end();
  }
  ASSERT_TRUE(found);
  const int32_t stop = ref[5];
  const size_t at = 5;
  SamplingParams p = greedy(40);
  p.stopTokenIds = {stop};
  RequestId byId = h.submit(prompt, p);
  // A stop string: token t's text is "<t>".
  std::vector<std::string> pieces;
  for (int32_t t = 0; t < cfg.vocabSize; ++t)
    pieces.push_back("<" + std::to_string(t) + ">");
  SamplingParams q = greedy(40);
  q.stop = {"<" + std::to_string(ref[3]) + ">"};
  const size_t strAt = 3;
  RequestId byStr = h.submit(prompt, q, std::make_unique<PieceDetokenizer>(pieces));
  // max_tokens ends a run too.
  RequestId byLen = h.submit(prompt, greedy(4));
  h.runToIdle();

  const auto &a = h.results[byId];
  EXPECT_EQ(a.tokens, std::vector<int32_t>(ref.begin(), ref.begin() + ptrdiff_t(at) + 1));
  EXPECT_EQ(a.last.finishReason, FinishReason::Stop);
  EXPECT_EQ(a.last.stopTokenId, stop);
  const auto &b = h.results[byStr];
  EXPECT_EQ(b.tokens, std::vector<int32_t>(ref.begin(), ref.begin() + ptrdiff_t(strAt) + 1));
  EXPECT_EQ(b.last.finishReason, FinishReason::Stop);
  std::string text;
  for (size_t i = 0; i < strAt; ++i)
    text += pieces[size_t(ref[i])];
  EXPECT_EQ(b.text, text);
  const auto &c = h.results[byLen];
  EXPECT_EQ(c.tokens, std::vector<int32_t>(ref.begin(), ref.begin() + 4));
  EXPECT_EQ(c.last.finishReason, FinishReason::Length);
  EXPECT_GT(h.engine->stats().specDecode.numAcceptedTokens, 0u);
}

TEST(Speculative, CandidateBackendsVerifyThroughRows) {
  // A backend with sampling candidates: decode steps without drafts use
  // them, verify steps the rows, and outputs are the same either way.
  for (bool sampled : {false, true}) {
    Harness h(specConfig(3));
    h.model->candidateK = 8;
    Submitted r = submitMany(h, 8, sampled ? 13 : 12, sampled);
    h.runToIdle();
    expectOutputs(h, r);
    EXPECT_GT(h.engine->stats().specDecode.numDrafts, 0u);
    // Greedy rows are decided by the candidates; the seeded requests'
    // repetition penalty edits logits, so their rows are fetched.
    EXPECT_GT(sampled ? h.engine->stats().rowsFetched : h.engine->stats().sampledFromCandidates,
              0u);
  }
}

TEST(Speculative, AFailedVerifyStepAbortsItsSequences) {
  Harness h(specConfig(3));
  h.model->window = kWindow;
  h.model->beforeStep = [](const StepBatch &b) -> Status {
    return b.numRows() > b.numSeqs ? Error("device lost") : Status::success();
  };
  RequestId id = h.submit({2, 8, 2, 8, 2}, greedy(30));
  EXPECT_FALSE(h.engine->runUntilIdle().ok());
  h.expectIdleAndClean();
  const auto &c = h.results[id];
  EXPECT_TRUE(c.finished);
  EXPECT_EQ(c.last.finishReason, FinishReason::Abort);
  EXPECT_NE(c.last.error.find("device lost"), std::string::npos);
}

EngineConfig mtpConfig(int32_t k) {
  EngineConfig c = specConfig(k);
  c.draftSource = DraftSource::Mtp;
  return c;
}

// MTP drafts (the fake's draft program checks every hidden row and every
// pair in its KV store against the sequence's tokens): outputs are exact,
// greedy and seeded, at k = 1, 3, 7, with batches that mix lengths,
// chunked prefills, preemption and recurrent state; drafts after the
// first are chained, and a wrong draft is rolled back.
TEST(Speculative, MtpDraftsKeepOutputsExact) {
  for (int32_t k : {1, 3, 7}) {
    uint64_t preemptions = 0;
    for (bool sampled : {false, true}) {
      for (bool recurrent : {false, true}) {
        SCOPED_TRACE("k=" + std::to_string(k) + (sampled ? " seeded" : " greedy") +
                     (recurrent ? " recurrent" : ""));
        EngineConfig cfg = mtpConfig(k);
        if (recurrent)
          cfg.numStateSlots = cfg.maxNumSeqs * (1 + k);
        cfg.maxNumBatchedTokens = 24; // chunked prefills
        cfg.numKvBlocks = 30;         // preemption
        Harness h(cfg);
        Submitted r = submitMany(h, 14, uint32_t(170 + k), sampled, 30, 40);
        h.runToIdle();
        expectOutputs(h, r);
        const SpecDecodeStats st = h.engine->stats().specDecode;
        EXPECT_GT(st.numAcceptedTokens, 0u);
        EXPECT_LT(st.numAcceptedTokens, st.numDraftTokens);
        EXPECT_EQ(st.numDraftSteps, uint64_t(h.model->numDraftSteps));
        preemptions += h.engine->stats().numPreemptions;
        if (!sampled) // the fake head is right 3 times in 4
          EXPECT_GT(st.meanAcceptedLength(), 1.4);
        if (k > 1) { // chained drafts: more draft steps than catch-ups
          uint64_t steps = h.model->steps.size();
          EXPECT_GT(uint64_t(h.model->numDraftSteps), steps);
        }
        h.expectIdleAndClean();
      }
    }
    EXPECT_GT(preemptions, 0u) << "k=" << k;
  }
}

TEST(Speculative, MtpDraftsWithPrefixCaching) {
  EngineConfig cfg = mtpConfig(3);
  cfg.enablePrefixCaching = true;
  cfg.numKvBlocks = 30;
  Harness h(cfg);
  // Shared prefixes: later requests hit blocks whose draft KV an earlier
  // request's catch-up filled.
  h.model->window = kWindow;
  std::vector<RequestId> ids;
  std::vector<std::vector<int32_t>> want;
  for (int i = 0; i < 8; ++i) {
    std::vector<int32_t> prompt = {4, 9, 4, 9, 4, 9, 4, 9, 4, 9, 4, 9, 4, 9, 4, 9, 4,
                                   9, 4, 9, int32_t(10 + i)};
    want.push_back(referenceTokens(prompt, 20, greedy(20), 0, 64, kWindow));
    ids.push_back(h.submit(prompt, greedy(20)));
    h.runToIdle();
  }
  for (size_t i = 0; i < ids.size(); ++i)
    EXPECT_EQ(h.results[ids[i]].tokens, want[i]) << "request " << i;
  EXPECT_GT(h.engine->stats().prefixCacheHits, 0u);
  EXPECT_GT(h.engine->stats().specDecode.numAcceptedTokens, 0u);
}

TEST(Speculative, AFailedDraftStepAbortsItsSequences) {
  for (bool chained : {false, true}) {
    Harness h(mtpConfig(3));
    h.model->window = kWindow;
    // The catch-up step (more tokens than sequences, or a prefill), or a
    // chained step (one token per sequence after the first decode).
    int calls = 0;
    h.model->beforeDraftStep = [&](const StepBatch &) -> Status {
      return ++calls == (chained ? 3 : 1) ? Error("device lost") : Status::success();
    };
    RequestId id = h.submit({2, 8, 2, 8, 2}, greedy(30));
    EXPECT_FALSE(h.engine->runUntilIdle().ok());
    h.expectIdleAndClean();
    const auto &c = h.results[id];
    EXPECT_TRUE(c.finished);
    EXPECT_EQ(c.last.finishReason, FinishReason::Abort);
    EXPECT_NE(c.last.error.find("device lost"), std::string::npos);
  }
}

TEST(Speculative, MtpNeedsABackendWithADraftProgram) {
  testing::FakeModel model(64, 256, 4);
  auto e = Engine::create(mtpConfig(2), model);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.message().find("speculative method mtp: the backend has no draft program"),
            std::string::npos);
}

TEST(Speculative, SampledOutputsFollowTheTargetDistribution) {
  // The prompt holds every token, so after the first output o0 prompt
  // lookup drafts one token d (max_tokens 3 leaves room for one): o1 is
  // sampled from the row after o0, and o2 is the bonus from the row after
  // d when d == o1, or comes from the next step when not. The empirical
  // distribution of o2 over many seeds must be the target's exact
  // marginal, sum over o0, o1 of p(o0) p(o1 | o0) p(o2 | o1), computed here
  // from plain softmaxes (temperature 1, no filters). The same with the
  // draft from an MTP head (the fake's: the target's greedy token, or its
  // least likely one on a quarter of the contexts).
  for (DraftSource source : {DraftSource::Ngram, DraftSource::Mtp}) {
    SCOPED_TRACE(source == DraftSource::Mtp ? "mtp" : "ngram");
    EngineConfig cfg = specConfig(3);
    cfg.draftSource = source;
    cfg.maxNumBatchedTokens = 512;
    cfg.numKvBlocks = 1024;
    Harness h(cfg);
    h.model->window = kWindow;
    const int32_t vocab = cfg.vocabSize;
    std::vector<int32_t> prompt(static_cast<size_t>(vocab));
    for (int32_t t = 0; t < vocab; ++t)
      prompt[size_t(t)] = (t * 7 + 3) % vocab;
    auto softmax = [&](std::vector<int32_t> context) {
      std::vector<float> logits(static_cast<size_t>(vocab));
      testing::fakeLogits(context, logits, kWindow);
      std::vector<double> p(static_cast<size_t>(vocab));
      double sum = 0, top = *std::max_element(logits.begin(), logits.end());
      for (int32_t v = 0; v < vocab; ++v)
        sum += p[size_t(v)] = std::exp(double(logits[size_t(v)]) - top);
      for (double &x : p)
        x /= sum;
      return p;
    };
    const std::vector<double> first = softmax(prompt);
    auto advance = [&](const std::vector<double> &p) {
      std::vector<double> q(static_cast<size_t>(vocab), 0.0);
      for (int32_t t1 = 0; t1 < vocab; ++t1) {
        const std::vector<double> next = softmax({t1});
        for (int32_t t2 = 0; t2 < vocab; ++t2)
          q[size_t(t2)] += p[size_t(t1)] * next[size_t(t2)];
      }
      return q;
    };
    const std::vector<double> third = advance(advance(first));
    constexpr int kDraws = 16000;
    std::vector<RequestId> ids;
    for (int i = 0; i < kDraws; ++i) {
      SamplingParams p;
      p.temperature = 1.0f;
      p.seed = uint64_t(i) * 7919 + 1;
      p.maxTokens = 3;
      p.ignoreEos = true;
      ids.push_back(h.submit(prompt, p));
    }
    h.runToIdle();
    std::vector<double> seen(static_cast<size_t>(vocab), 0.0);
    for (RequestId id : ids) {
      ASSERT_EQ(h.results[id].tokens.size(), 3u);
      seen[size_t(h.results[id].tokens[2])] += 1.0 / kDraws;
    }
    double tv = 0;
    for (int32_t v = 0; v < vocab; ++v)
      tv += 0.5 * std::abs(seen[size_t(v)] - third[size_t(v)]);
    // Sampling noise at 16,000 draws is about 0.03 here; taking the
    // bonus row after a rejected draft (sampling o2 after d, not after o1)
    // gives 0.15 (measured by breaking the acceptance test in Engine.cpp).
    EXPECT_LT(tv, 0.06) << "total variation distance";
    const SpecDecodeStats st = h.engine->stats().specDecode;
    EXPECT_GE(st.numDrafts, uint64_t(kDraws) / 2);
    EXPECT_GT(st.numAcceptedTokens, 0u);
    EXPECT_LT(st.numAcceptedTokens, st.numDraftTokens);
  }
}

TEST(Speculative, ConfigErrorsNameTheKey) {
  auto fails = [](EngineConfig c, const std::string &key) {
    Status s = validateConfig(c);
    ASSERT_FALSE(s.ok()) << key;
    EXPECT_NE(s.message().find(key), std::string::npos) << s.message();
  };
  EngineConfig c = specConfig(8);
  fails(c, "num_speculative_tokens");
  c = specConfig(-1);
  fails(c, "num_speculative_tokens");
  c = specConfig(3);
  c.promptLookupMin = 0;
  fails(c, "prompt_lookup_min");
  c = specConfig(3);
  c.promptLookupMax = 0;
  fails(c, "prompt_lookup_max");
  c = specConfig(3);
  c.enablePrefixCaching = false;
  c.numStateSlots = c.maxNumSeqs * 4 - 1; // a slot per sequence and per draft token
  fails(c, "num_state_slots");
  c.numStateSlots = c.maxNumSeqs * 4;
  EXPECT_TRUE(validateConfig(c).ok());
  c = specConfig(3);
  c.maxLogitsRows = c.maxNumSeqs - 1;
  fails(c, "max_logits_rows");
  c = specConfig(3);
  ASSERT_TRUE(validateConfig(c).ok());
  EXPECT_EQ(c.maxLogitsRows, c.maxNumSeqs * 4);
}

} // namespace
} // namespace volt::engine
