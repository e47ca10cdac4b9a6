//===- Generate.h - one prompt through a session, to completion --*- C++ -*-===//
#pragma once

#include "runtime/serving/Session.h"

#include <functional>
#include <string>
#include <vector>

namespace volt::serving {

struct Generation {
  std::vector<int32_t> promptTokens;
  std::vector<int32_t> tokens;
  std::string text;
  std::string finishReason;
  double timeToFirstTokenSeconds = 0;
  double totalSeconds = 0;
  /// Decode speed after the first token (tokens / s).
  double decodeTokensPerSecond = 0;
};

/// Runs `promptTokens` with `sampling` to completion, calling `onText` with
/// each piece of streamed text. Drives the engine on the calling thread.
Result<Generation> generate(Session &session, std::vector<int32_t> promptTokens,
                            const engine::SamplingParams &sampling,
                            const std::function<void(const std::string &)> &onText = {});

} // namespace volt::serving
