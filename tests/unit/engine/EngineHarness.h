//===- EngineHarness.h - an engine on the fake model, for tests -*- C++ -*-===//
#pragma once

#include "runtime/engine/Engine.h"
#include "tests/unit/engine/FakeModel.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>

namespace volt::engine::testing {

/// Everything one request streamed.
struct Collected {
  std::vector<int32_t> tokens;
  std::string text;
  std::vector<RequestOutput> outputs;
  bool finished = false;
  RequestOutput last;
};

inline EngineConfig smallConfig() {
  EngineConfig c;
  c.vocabSize = 64;
  c.blockSize = 4;
  c.numKvBlocks = 256;
  c.maxNumSeqs = 32;
  c.maxNumBatchedTokens = 64;
  c.maxModelLen = 256;
  return c;
}

/// Greedy decoding of exactly `maxTokens` tokens (EOS ignored).
inline SamplingParams greedyToLength(int32_t maxTokens) {
  SamplingParams p;
  p.temperature = 0;
  p.maxTokens = maxTokens;
  p.ignoreEos = true;
  return p;
}

inline std::vector<int32_t> randomPrompt(std::mt19937 &rng, int32_t len, int32_t vocab) {
  std::vector<int32_t> p(len);
  for (int32_t &t : p)
    t = int32_t(rng() % uint32_t(vocab));
  return p;
}

class Harness {
public:
  explicit Harness(const EngineConfig &config = smallConfig()) {
    model = std::make_unique<FakeModel>(config.vocabSize, config.numKvBlocks, config.blockSize);
    model->enableState(config.numStateSlots);
    if (config.draftSource == DraftSource::Mtp)
      model->enableDraft();
    auto e = Engine::create(config, *model);
    EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.message());
    engine = std::move(*e);
  }

  /// Submits and collects outputs into results[id]; fails the test when
  /// submit fails.
  RequestId submit(std::vector<int32_t> prompt, SamplingParams params,
                   std::unique_ptr<Detokenizer> detok = nullptr) {
    Request r;
    r.promptTokens = std::move(prompt);
    r.sampling = std::move(params);
    r.detokenizer = std::move(detok);
    auto sink = std::make_shared<RequestId>(0);
    r.onOutput = [this, sink](const RequestOutput &o) {
      Collected &c = results[o.id];
      EXPECT_FALSE(c.finished) << "output after the final one";
      if (o.token)
        c.tokens.push_back(*o.token);
      c.text += o.text;
      c.outputs.push_back(o);
      c.finished = o.finished;
      c.last = o;
    };
    auto id = engine->submit(std::move(r));
    EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.message());
    return id.ok() ? *id : 0;
  }

  /// Runs to idle and checks that every block came back.
  void runToIdle() {
    Status s = engine->runUntilIdle();
    ASSERT_TRUE(s.ok()) << s.message();
    expectIdleAndClean();
  }

  void expectIdleAndClean() {
    EngineStats st = engine->stats();
    EXPECT_EQ(st.numRunning, 0);
    EXPECT_EQ(st.numWaiting, 0);
    EXPECT_EQ(st.kvCache.usedBlocks, 0);
    EXPECT_EQ(st.kvCache.usage, 0.0);
    Status c = engine->checkConsistency();
    EXPECT_TRUE(c.ok()) << c.message();
  }

  std::unique_ptr<FakeModel> model;
  std::unique_ptr<Engine> engine;
  std::map<RequestId, Collected> results;
};

} // namespace volt::engine::testing
