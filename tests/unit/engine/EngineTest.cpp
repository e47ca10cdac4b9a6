//===- EngineTest.cpp - batching invariance, stop conditions, streaming,
// cancellation, failures and threads, on the fake model -----------------===//
#include "tests/unit/engine/EngineHarness.h"
#include "tests/unit/engine/PieceDetokenizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace volt::engine {
namespace {

using testing::Collected;
using testing::fakeLogits;
using testing::Harness;
using testing::PieceDetokenizer;
using testing::randomPrompt;
using testing::referenceTokens;
using testing::smallConfig;

SamplingParams greedy(int32_t maxTokens) {
  SamplingParams p;
  p.temperature = 0;
  p.maxTokens = maxTokens;
  return p;
}

// The tokens greedy decoding of `prompt` gives, and a prompt whose first
// `distinct` outputs differ from each other (so EOS tests are unambiguous).
std::vector<int32_t> promptWithDistinctOutputs(std::mt19937 &rng, int32_t vocab,
                                               std::vector<int32_t> &outputs, int distinct) {
  for (;;) {
    auto prompt = randomPrompt(rng, 6, vocab);
    outputs = referenceTokens(prompt, 8, greedy(8), 0, vocab);
    std::vector<int32_t> head(outputs.begin(), outputs.begin() + distinct);
    std::sort(head.begin(), head.end());
    if (std::unique(head.begin(), head.end()) == head.end())
      return prompt;
  }
}

TEST(Engine, BatchingDoesNotChangeARequestsTokens) {
  for (bool sampled : {false, true}) {
    EngineConfig cfg = smallConfig();
    cfg.maxNumBatchedTokens = 24; // the crowd forces chunking and mixing
    std::mt19937 rng(sampled ? 21 : 20);
    auto prompt = randomPrompt(rng, 30, cfg.vocabSize);
    SamplingParams p = greedy(20);
    if (sampled) {
      p.temperature = 0.9f;
      p.topK = 20;
      p.seed = 77;
      p.repetitionPenalty = 1.2f;
      p.frequencyPenalty = 0.3f;
    }
    Harness alone(cfg);
    RequestId a = alone.submit(prompt, p);
    alone.runToIdle();

    Harness crowd(cfg);
    std::vector<RequestId> others;
    for (int i = 0; i < 8; ++i) {
      SamplingParams q = greedy(1 + int32_t(rng() % 30));
      q.temperature = float(i % 3) * 0.5f;
      q.seed = rng();
      others.push_back(crowd.submit(randomPrompt(rng, 1 + int32_t(rng() % 50), cfg.vocabSize), q));
    }
    RequestId b = crowd.submit(prompt, p);
    for (int i = 0; i < 8; ++i)
      others.push_back(
          crowd.submit(randomPrompt(rng, 1 + int32_t(rng() % 50), cfg.vocabSize), greedy(5)));
    crowd.runToIdle();
    EXPECT_EQ(crowd.results[b].tokens, alone.results[a].tokens);
    EXPECT_EQ(alone.results[a].tokens,
              referenceTokens(prompt, 20, p, p.seed.value_or(0), cfg.vocabSize));
    for (RequestId id : others)
      EXPECT_TRUE(crowd.results[id].finished);
    // The crowd really was batched with the request.
    int32_t maxSeqs = 0;
    for (const auto &s : crowd.model->steps)
      maxSeqs = std::max(maxSeqs, s.numSeqs);
    EXPECT_GT(maxSeqs, 8);
  }
}

TEST(Engine, SamplerThreadsDoNotChangeOutputs) {
  // The same workload, sampled on 1 and on 4 threads: same tokens, same text.
  std::map<RequestId, Collected> results[2];
  for (int run = 0; run < 2; ++run) {
    EngineConfig cfg = smallConfig();
    cfg.samplerThreads = run == 0 ? 1 : 4;
    cfg.maxNumBatchedTokens = 40;
    cfg.eosTokenIds = {0};
    Harness h(cfg);
    std::mt19937 rng(29);
    std::vector<std::string> pieces;
    pieces.reserve(cfg.vocabSize);
    for (int i = 0; i < cfg.vocabSize; ++i)
      pieces.push_back(std::string(1, char('a' + i % 26)));
    for (int i = 0; i < 24; ++i) {
      SamplingParams p;
      p.temperature = float(i % 4) * 0.4f;
      p.topP = 0.9f;
      p.seed = uint64_t(i);
      p.maxTokens = 1 + int32_t(rng() % 24);
      p.stop = {"xy", "q"};
      p.logprobs = 2;
      h.submit(randomPrompt(rng, 1 + int32_t(rng() % 30), cfg.vocabSize), p,
               std::make_unique<PieceDetokenizer>(pieces));
    }
    h.runToIdle();
    results[run] = h.results;
  }
  ASSERT_EQ(results[0].size(), results[1].size());
  for (const auto &[id, c] : results[0]) {
    const Collected &d = results[1][id];
    EXPECT_EQ(c.tokens, d.tokens) << id;
    EXPECT_EQ(c.text, d.text) << id;
    EXPECT_EQ(c.last.finishReason, d.last.finishReason) << id;
    ASSERT_EQ(c.outputs.size(), d.outputs.size());
    for (size_t i = 0; i < c.outputs.size(); ++i)
      if (c.outputs[i].logprobs) {
        ASSERT_TRUE(d.outputs[i].logprobs);
        EXPECT_EQ(c.outputs[i].logprobs->logprob, d.outputs[i].logprobs->logprob);
      }
  }
}

TEST(Engine, CandidatePathSamplesWhatTheRowsWould) {
  // A backend that returns each sequence's 8 largest logits: greedy and
  // penalized requests get exactly the rows' tokens (the latter from
  // fetched rows), filtered requests are decided by the candidates, and
  // every run of the same workload gives the same tokens.
  std::map<RequestId, Collected> results[2];
  EngineStats stats[2];
  for (int run = 0; run < 2; ++run) {
    EngineConfig cfg = smallConfig();
    cfg.samplerThreads = run == 0 ? 1 : 3;
    cfg.maxNumBatchedTokens = 40;
    Harness h(cfg);
    h.model->candidateK = 8;
    std::mt19937 rng(41);
    for (int i = 0; i < 18; ++i) {
      SamplingParams p = greedy(4 + int32_t(rng() % 12));
      p.seed = uint64_t(100 + i);
      switch (i % 6) {
      case 0: // greedy
        break;
      case 1: // penalties: the row is fetched
        p.temperature = 0.8f;
        p.repetitionPenalty = 1.3f;
        p.presencePenalty = 0.4f;
        break;
      case 2: // top_k inside the candidates
        p.temperature = 1.1f;
        p.topK = 5;
        break;
      case 3: // nucleus: inside or past the candidates
        p.temperature = 0.9f;
        p.topP = 0.7f;
        break;
      case 4: // plain temperature: the draw decides
        p.temperature = 1.0f;
        break;
      case 5: // more logprobs than candidates: the row
        p.temperature = 0;
        p.logprobs = 12;
        break;
      }
      h.submit(randomPrompt(rng, 1 + int32_t(rng() % 20), cfg.vocabSize), p);
    }
    h.runToIdle();
    results[run] = h.results;
    stats[run] = h.engine->stats();
    EXPECT_GT(h.model->rowsFetched, 0);
    EXPECT_EQ(stats[run].rowsFetched, uint64_t(h.model->rowsFetched));
    EXPECT_GT(stats[run].sampledFromCandidates, 0u);
    EXPECT_EQ(stats[run].sampledFromCandidates + stats[run].rowsFetched,
              stats[run].generationTokens);
  }
  ASSERT_EQ(results[0].size(), results[1].size());
  for (const auto &[id, c] : results[0]) {
    EXPECT_TRUE(c.finished) << id;
    EXPECT_EQ(c.tokens, results[1][id].tokens) << id;
  }
}

TEST(Engine, CandidatePathGreedyAndPenalizedTokensAreTheReferences) {
  EngineConfig cfg = smallConfig();
  Harness h(cfg);
  h.model->candidateK = 4;
  std::mt19937 rng(43);
  std::vector<std::tuple<RequestId, std::vector<int32_t>, SamplingParams>> requests;
  for (int i = 0; i < 10; ++i) {
    SamplingParams p = greedy(10);
    p.seed = uint64_t(7 + i);
    if (i % 2) {
      p.temperature = 0.7f;
      p.frequencyPenalty = 0.5f;
    }
    auto prompt = randomPrompt(rng, 5 + i, cfg.vocabSize);
    requests.push_back({h.submit(prompt, p), prompt, p});
  }
  h.runToIdle();
  for (const auto &[id, prompt, p] : requests)
    EXPECT_EQ(h.results[id].tokens, referenceTokens(prompt, 10, p, *p.seed, cfg.vocabSize)) << id;
  // Greedy sequences were sent temperature 0, sampled ones their own.
  for (float t : h.model->lastTemperatures)
    EXPECT_TRUE(t == 0.0f || t == 0.7f) << t;
}

TEST(Engine, ACandidateStepWhoseRowFetchFailsGivesNoTokens) {
  // A row the candidates cannot decide (penalties) fails to arrive: the
  // step fails as a failed run does, and no request gets a token from it,
  // not even those the candidates decided.
  EngineConfig cfg = smallConfig();
  Harness h(cfg);
  h.model->candidateK = 8;
  h.model->failFetch = true;
  SamplingParams plain = greedy(4), penalized = greedy(4);
  penalized.temperature = 0.8f;
  penalized.repetitionPenalty = 1.5f;
  std::mt19937 rng(47);
  RequestId a = h.submit(randomPrompt(rng, 5, cfg.vocabSize), plain);
  RequestId b = h.submit(randomPrompt(rng, 6, cfg.vocabSize), penalized);
  auto st = h.engine->step();
  EXPECT_FALSE(st.ok());
  for (RequestId id : {a, b}) {
    EXPECT_TRUE(h.results[id].tokens.empty()) << id;
    EXPECT_EQ(h.results[id].last.finishReason, FinishReason::Abort) << id;
  }
  const EngineStats stats = h.engine->stats();
  EXPECT_EQ(stats.generationTokens, 0u);
  EXPECT_EQ(stats.rowsFetched, 0u);
}

TEST(Engine, UnseededRequestsFollowTheEngineSeed) {
  EngineConfig cfg = smallConfig();
  cfg.seed = 5;
  std::mt19937 rng(22);
  auto prompt = randomPrompt(rng, 10, cfg.vocabSize);
  SamplingParams p;
  p.maxTokens = 30;
  std::vector<int32_t> runs[3];
  for (int i = 0; i < 3; ++i) {
    if (i == 2)
      cfg.seed = 6;
    Harness h(cfg);
    RequestId id = h.submit(prompt, p);
    h.runToIdle();
    runs[i] = h.results[id].tokens;
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_NE(runs[0], runs[2]);
}

TEST(Engine, EosStopsUnlessIgnored) {
  EngineConfig cfg = smallConfig();
  std::mt19937 rng(23);
  std::vector<int32_t> ref;
  auto prompt = promptWithDistinctOutputs(rng, cfg.vocabSize, ref, 4);
  cfg.eosTokenIds = {ref[2]};
  Harness h(cfg);
  RequestId stop = h.submit(prompt, greedy(8));
  SamplingParams ignore = greedy(8);
  ignore.ignoreEos = true;
  RequestId ignored = h.submit(prompt, ignore);
  SamplingParams capped = greedy(3); // length is checked before EOS, as in vLLM
  RequestId length = h.submit(prompt, capped);
  h.runToIdle();
  EXPECT_EQ(h.results[stop].tokens, std::vector<int32_t>(ref.begin(), ref.begin() + 3));
  EXPECT_EQ(h.results[stop].last.finishReason, FinishReason::Stop);
  EXPECT_FALSE(h.results[stop].last.stopTokenId);
  EXPECT_EQ(h.results[ignored].tokens, ref);
  EXPECT_EQ(h.results[ignored].last.finishReason, FinishReason::Length);
  EXPECT_EQ(h.results[length].last.finishReason, FinishReason::Length);
  EXPECT_EQ(h.results[length].tokens.size(), 3u);
}

TEST(Engine, StopTokenIdsAndMinTokens) {
  EngineConfig cfg = smallConfig();
  std::mt19937 rng(24);
  std::vector<int32_t> ref;
  auto prompt = promptWithDistinctOutputs(rng, cfg.vocabSize, ref, 4);
  cfg.eosTokenIds = {ref[0]};
  Harness h(cfg);
  SamplingParams p = greedy(8);
  p.ignoreEos = true;
  p.stopTokenIds = {ref[1]};
  RequestId byId = h.submit(prompt, p);
  // min_tokens masks EOS and stop ids for the first outputs.
  SamplingParams m = greedy(8);
  m.minTokens = 3;
  m.stopTokenIds = {ref[1]};
  RequestId min = h.submit(prompt, m);
  h.runToIdle();
  const Collected &c = h.results[byId];
  EXPECT_EQ(c.tokens, std::vector<int32_t>(ref.begin(), ref.begin() + 2));
  EXPECT_EQ(c.last.finishReason, FinishReason::Stop);
  EXPECT_EQ(c.last.stopTokenId, ref[1]);
  const Collected &d = h.results[min];
  ASSERT_GE(d.tokens.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(d.tokens[i], ref[0]);
    EXPECT_NE(d.tokens[i], ref[1]);
  }
}

TEST(Engine, StopStringsEndTheTextAcrossTokens) {
  EngineConfig cfg = smallConfig();
  std::mt19937 rng(25);
  std::vector<int32_t> ref;
  auto prompt = promptWithDistinctOutputs(rng, cfg.vocabSize, ref, 6);
  // Token ref[i] reads "<i>|" for the first outputs; "2|3" spans two tokens.
  std::vector<std::string> pieces(cfg.vocabSize, "?");
  for (int i = 0; i < 6; ++i)
    pieces[ref[i]] = std::to_string(i) + "|";
  SamplingParams p = greedy(8);
  p.stop = {"2|3"};
  Harness h(cfg);
  RequestId id = h.submit(prompt, p, std::make_unique<PieceDetokenizer>(pieces));
  h.runToIdle();
  const Collected &c = h.results[id];
  EXPECT_EQ(c.last.finishReason, FinishReason::Stop);
  EXPECT_EQ(c.last.stopString, "2|3");
  EXPECT_EQ(c.text, "0|1|");
  EXPECT_EQ(c.tokens, std::vector<int32_t>(ref.begin(), ref.begin() + 4));
  // Held back: nothing of "2|" was streamed before the match.
  std::string before;
  for (size_t i = 0; i + 1 < c.outputs.size(); ++i)
    before += c.outputs[i].text;
  EXPECT_EQ(before.find('2'), std::string::npos);
  EXPECT_EQ(c.last.usage.completionTokens, 4);

  // The text of an EOS token is not part of the output.
  cfg.eosTokenIds = {ref[2]};
  Harness e(cfg);
  std::vector<int32_t> seen;
  RequestId eos =
      e.submit(prompt, greedy(8), std::make_unique<PieceDetokenizer>(pieces, "", &seen));
  e.runToIdle();
  EXPECT_EQ(e.results[eos].text, "0|1|");
  EXPECT_EQ(seen, std::vector<int32_t>(ref.begin(), ref.begin() + 2));
}

TEST(Engine, LogprobsMatchTheModel) {
  EngineConfig cfg = smallConfig();
  Harness h(cfg);
  std::mt19937 rng(26);
  auto prompt = randomPrompt(rng, 7, cfg.vocabSize);
  SamplingParams p = greedy(4);
  p.logprobs = 3;
  RequestId id = h.submit(prompt, p);
  h.runToIdle();
  std::vector<int32_t> context = prompt;
  std::vector<float> logits(cfg.vocabSize);
  for (const RequestOutput &o : h.results[id].outputs) {
    ASSERT_TRUE(o.token && o.logprobs);
    fakeLogits(context, logits);
    double m = *std::max_element(logits.begin(), logits.end()), sum = 0;
    for (float l : logits)
      sum += std::exp(l - m);
    EXPECT_NEAR(o.logprobs->logprob, logits[*o.token] - m - std::log(sum), 1e-5);
    EXPECT_EQ(o.logprobs->rank, 1); // greedy
    ASSERT_EQ(o.logprobs->top.size(), 3u);
    EXPECT_EQ(o.logprobs->top[0].token, *o.token);
    EXPECT_GE(o.logprobs->top[1].logprob, o.logprobs->top[2].logprob);
    context.push_back(*o.token);
  }
}

TEST(Engine, UsageAndTimesAreReported) {
  Harness h;
  std::mt19937 rng(27);
  RequestId id = h.submit(randomPrompt(rng, 9, 64), greedy(5));
  h.runToIdle();
  const Collected &c = h.results[id];
  ASSERT_EQ(c.outputs.size(), 5u);
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    EXPECT_EQ(c.outputs[i].usage.promptTokens, 9);
    EXPECT_EQ(c.outputs[i].usage.completionTokens, int32_t(i + 1));
    EXPECT_EQ(c.outputs[i].finished, i + 1 == c.outputs.size());
    if (i > 0) {
      EXPECT_GE(c.outputs[i].times.lastToken, c.outputs[i - 1].times.lastToken);
    }
  }
  const RequestTimes &t = c.last.times;
  EXPECT_LE(t.arrival, t.firstScheduled);
  EXPECT_LE(t.firstScheduled, t.firstToken);
  EXPECT_LE(t.firstToken, t.finished);
  EXPECT_GE(t.timeToFirstTokenSeconds(), t.queueSeconds());
  EXPECT_STREQ(finishReasonName(c.last.finishReason), "length");
  EngineStats st = h.engine->stats();
  EXPECT_EQ(st.promptTokens, 9u);
  EXPECT_EQ(st.generationTokens, 5u);
  EXPECT_EQ(st.numFinished, 1u);
}

TEST(Engine, CancelFreesBlocksAtOnce) {
  Harness h;
  std::mt19937 rng(28);
  RequestId a = h.submit(randomPrompt(rng, 20, 64), greedy(50));
  RequestId b = h.submit(randomPrompt(rng, 8, 64), greedy(50));
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(h.engine->step().ok());
  EXPECT_EQ(h.engine->stats().kvCache.usedBlocks, 6 + 3); // 22 and 10 tokens
  EXPECT_TRUE(h.engine->cancel(a));
  EXPECT_EQ(h.engine->stats().kvCache.usedBlocks, 3);
  EXPECT_TRUE(h.engine->checkConsistency().ok());
  EXPECT_FALSE(h.engine->cancel(a));
  EXPECT_FALSE(h.engine->cancel(12345));
  // The final output arrives on the engine thread, at the next step.
  EXPECT_FALSE(h.results[a].finished);
  ASSERT_TRUE(h.engine->step().ok());
  EXPECT_TRUE(h.results[a].finished);
  EXPECT_EQ(h.results[a].last.finishReason, FinishReason::Abort);
  EXPECT_FALSE(h.results[a].last.token);
  EXPECT_TRUE(h.results[a].last.error.empty());
  EXPECT_EQ(h.results[a].last.usage.completionTokens, 3);
  EXPECT_TRUE(h.engine->cancel(b));
  h.runToIdle();
  EXPECT_EQ(h.results[b].last.finishReason, FinishReason::Abort);
}

TEST(Engine, CancelAWaitingRequest) {
  EngineConfig cfg = smallConfig();
  cfg.maxNumSeqs = 1;
  Harness h(cfg);
  RequestId a = h.submit({1, 2, 3}, greedy(5));
  RequestId b = h.submit({4, 5, 6}, greedy(5));
  ASSERT_TRUE(h.engine->step().ok());
  EXPECT_EQ(h.engine->stats().numWaiting, 1);
  EXPECT_TRUE(h.engine->cancel(b));
  EXPECT_EQ(h.engine->stats().numWaiting, 0);
  h.runToIdle();
  EXPECT_EQ(h.results[b].last.finishReason, FinishReason::Abort);
  EXPECT_EQ(h.results[b].last.usage.completionTokens, 0);
  EXPECT_EQ(h.results[a].tokens.size(), 5u);
}

TEST(Engine, CancelDuringAStepTakesEffectWhenItReturns) {
  Harness h;
  RequestId a = h.submit({1, 2, 3}, greedy(20));
  RequestId b = h.submit({4, 5, 6}, greedy(20));
  int steps = 0;
  h.model->beforeStep = [&](const StepBatch &) {
    if (++steps == 3) {
      EXPECT_TRUE(h.engine->cancel(a)); // in flight: only flagged
    }
    return Status::success();
  };
  h.runToIdle();
  EXPECT_EQ(h.results[a].last.finishReason, FinishReason::Abort);
  EXPECT_EQ(h.results[a].tokens.size(), 3u); // the third step's token is delivered with it
  EXPECT_EQ(h.results[b].tokens.size(), 20u);
}

TEST(Engine, BackendFailureAbortsTheStepsRequests) {
  Harness h;
  RequestId a = h.submit({1, 2, 3}, greedy(20));
  int steps = 0;
  h.model->beforeStep = [&](const StepBatch &) -> Status {
    if (++steps == 3)
      return Error("device lost");
    return Status::success();
  };
  ASSERT_TRUE(h.engine->step().ok());
  ASSERT_TRUE(h.engine->step().ok());
  auto r = h.engine->step();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "device lost");
  EXPECT_EQ(h.results[a].last.finishReason, FinishReason::Abort);
  EXPECT_EQ(h.results[a].last.error, "step failed: device lost");
  EXPECT_EQ(h.engine->stats().lastError, "device lost");
  h.expectIdleAndClean();
  // The engine goes on with new requests.
  RequestId b = h.submit({1, 2, 3}, greedy(4));
  h.runToIdle();
  EXPECT_EQ(h.results[b].tokens.size(), 4u);
}

TEST(Engine, InvalidConfigIsRejected) {
  testing::FakeModel model(8, 8, 4);
  auto check = [&](auto edit, const std::string &message) {
    EngineConfig c = smallConfig();
    edit(c);
    auto e = Engine::create(c, model);
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.message(), message);
  };
  check([](EngineConfig &c) { c.vocabSize = 0; }, "vocab_size: expected at least 1, found 0");
  check([](EngineConfig &c) { c.maxNumSeqs = 0; }, "max_num_seqs: expected at least 1, found 0");
  check([](EngineConfig &c) { c.maxBlocksPerSeq = 10; },
        "max_blocks_per_seq: expected at least ceil(max_model_len / block_size) = 64, found 10");
  check([](EngineConfig &c) { c.samplerThreads = 0; },
        "sampler_threads: expected at least 1, found 0");
  check([](EngineConfig &c) { c.eosTokenIds = {64}; },
        "eos_token_ids: token 64 is outside the vocabulary [0, 64)");
}

TEST(Engine, RunLoopServesRequestsFromOtherThreads) {
  EngineConfig cfg = smallConfig();
  cfg.maxNumBatchedTokens = 32;
  testing::FakeModel model(cfg.vocabSize, cfg.numKvBlocks, cfg.blockSize);
  auto engine = std::move(*Engine::create(cfg, model));
  std::thread loop([&] { engine->run(); });

  std::mutex mu;
  std::condition_variable done;
  std::map<RequestId, std::vector<int32_t>> tokens;
  std::map<RequestId, FinishReason> reasons;
  std::map<RequestId, std::vector<int32_t>> want;
  const int threads = 4, perThread = 8;
  std::vector<std::thread> clients;
  clients.reserve(threads);
  for (int t = 0; t < threads; ++t)
    clients.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      for (int i = 0; i < perThread; ++i) {
        Request r;
        r.promptTokens = randomPrompt(rng, 1 + int32_t(rng() % 40), cfg.vocabSize);
        r.sampling = greedy(1 + int32_t(rng() % 16));
        r.sampling.ignoreEos = true;
        auto expected =
            referenceTokens(r.promptTokens, *r.sampling.maxTokens, r.sampling, 0, cfg.vocabSize);
        r.onOutput = [&](const RequestOutput &o) {
          std::lock_guard<std::mutex> lock(mu);
          if (o.token)
            tokens[o.id].push_back(*o.token);
          if (o.finished) {
            reasons[o.id] = o.finishReason;
            done.notify_all();
          }
        };
        std::lock_guard<std::mutex> lock(mu); // the id is known before any output lands
        auto id = engine->submit(std::move(r));
        ASSERT_TRUE(id.ok());
        want[*id] = expected;
      }
    });
  for (auto &c : clients)
    c.join();
  {
    std::unique_lock<std::mutex> lock(mu);
    done.wait(lock, [&] { return int(reasons.size()) == threads * perThread; });
  }
  engine->stop();
  loop.join();
  for (const auto &[id, w] : want) {
    EXPECT_EQ(tokens[id], w) << "request " << id;
    EXPECT_EQ(reasons[id], FinishReason::Length);
  }
  EXPECT_EQ(engine->stats().kvCache.usedBlocks, 0);
  EXPECT_FALSE(engine->hasWork());
}

} // namespace
} // namespace volt::engine
