//===- GreedyRequests.h - greedy requests through an engine, for tests -*- C++ -*-===//
//
// Submits one greedy request per prompt (exactly maxTokens tokens, EOS
// ignored) to an engine, runs it until idle, and returns each request's
// tokens; a failed submit or step fails the test.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/Engine.h"

#include <gtest/gtest.h>

#include <vector>

namespace volt::testing {

inline std::vector<std::vector<int32_t>>
runGreedyRequests(engine::Engine &engine, const std::vector<std::vector<int32_t>> &prompts,
                  int32_t maxTokens) {
  std::vector<std::vector<int32_t>> tokens(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    engine::Request r;
    r.promptTokens = prompts[i];
    r.sampling.temperature = 0;
    r.sampling.maxTokens = maxTokens;
    r.sampling.ignoreEos = true;
    r.onOutput = [&tokens, i](const engine::RequestOutput &o) {
      if (o.token)
        tokens[i].push_back(*o.token);
    };
    auto id = engine.submit(std::move(r));
    EXPECT_TRUE(id.ok()) << id.message();
  }
  Status done = engine.runUntilIdle();
  EXPECT_TRUE(done.ok()) << done.message();
  return tokens;
}

} // namespace volt::testing
