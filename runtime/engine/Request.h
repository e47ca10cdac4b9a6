//===- Request.h - what callers submit and what they get back --*- C++ -*-===//
//
// A request is a prompt (token ids), sampling options, an optional
// detokenizer (for text and stop strings) and a callback. The callback
// receives one `RequestOutput` per generated token, the last one marked
// finished with the reason and usage; a request that ends without a token
// (cancelled, or failed) gets a final output without one. Callbacks run on
// the engine's thread, in order, never two at once for one request.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/Detokenizer.h"
#include "runtime/engine/Sampler.h"
#include "runtime/engine/SamplingParams.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace volt::engine {

using RequestId = uint64_t;
using Clock = std::chrono::steady_clock;

/// Why a request ended (OpenAI's finish_reason).
enum class FinishReason {
  None,   ///< not finished
  Stop,   ///< EOS, a stop token or a stop string
  Length, ///< max_tokens or max_model_len reached
  Abort,  ///< cancelled, or failed (see RequestOutput::error)
};

/// "stop", "length", "abort" (and "" for None).
const char *finishReasonName(FinishReason reason);

/// Token counts for billing and metrics (OpenAI's usage).
struct Usage {
  int32_t promptTokens = 0;
  int32_t completionTokens = 0;
  /// Prompt tokens whose KV came from the prefix cache at admission.
  int32_t cachedPromptTokens = 0;
};

/// When things happened to a request, for latency metrics. Unset points
/// are Clock::time_point{}.
struct RequestTimes {
  Clock::time_point arrival;        ///< submit()
  Clock::time_point firstScheduled; ///< first admitted to a step
  Clock::time_point firstToken;
  Clock::time_point lastToken; ///< the token of this output
  Clock::time_point finished;
  int32_t numPreemptions = 0;

  /// Seconds from arrival to first scheduling (queue time).
  double queueSeconds() const;
  /// Seconds from arrival to the first token (TTFT).
  double timeToFirstTokenSeconds() const;
};

/// One streamed update of a request.
struct RequestOutput {
  RequestId id = 0;
  /// The new token; absent in a final output that carries none.
  std::optional<int32_t> token;
  /// Log-probabilities of the new token, when the request asked for them.
  std::optional<SampleLogprobs> logprobs;
  /// New text (empty without a detokenizer, or while text is held back).
  std::string text;
  bool finished = false;
  FinishReason finishReason = FinishReason::None;
  /// What stopped it: a stop token id or a stop string (neither for EOS).
  std::optional<int32_t> stopTokenId;
  std::optional<std::string> stopString;
  /// Why an Abort was not a cancellation (backend or sampling failure).
  std::string error;
  Usage usage;
  RequestTimes times;
};

/// Receives a request's outputs, on the engine thread. It may call
/// Engine::submit and Engine::cancel, not Engine::step, and must not throw.
using OutputCallback = std::function<void(const RequestOutput &)>;

struct Request {
  /// Prompt token ids (not empty; each in [0, vocab_size)).
  std::vector<int32_t> promptTokens;
  SamplingParams sampling;
  /// Text of the output; needed for stop strings, optional otherwise.
  std::unique_ptr<Detokenizer> detokenizer;
  OutputCallback onOutput;
};

} // namespace volt::engine
