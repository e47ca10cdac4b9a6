//===- Generation.h - one HTTP request's sequences in the engine -*- C++ -*-===//
//
// A completion request becomes one engine request per choice (prompts x n).
// The engine calls back on its own thread with each token; a GenerationRun
// queues those outputs for the HTTP thread that owns the request, which
// takes them, formats them and writes them out. The HTTP thread never
// drives the engine: it submits, waits, and cancels.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/Engine.h"
#include "runtime/server/ApiError.h"
#include "runtime/server/Metrics.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace volt::server {

/// One sequence to generate.
struct ChoiceSpec {
  std::vector<int32_t> promptTokens;
  engine::SamplingParams sampling;
  std::unique_ptr<engine::Detokenizer> detokenizer;
};

/// An output of one choice, in engine order.
struct ChoiceEvent {
  int32_t choice = 0;
  engine::RequestOutput output;
};

class GenerationRun {
public:
  /// Submits every choice to `engine`. If one is refused, those already
  /// submitted are cancelled and the refusal (naming the limit) returned.
  static ApiResult<std::unique_ptr<GenerationRun>>
  start(engine::Engine &engine, std::vector<ChoiceSpec> choices, Metrics &metrics);
  /// Cancels what is still running.
  ~GenerationRun();
  GenerationRun(const GenerationRun &) = delete;
  GenerationRun &operator=(const GenerationRun &) = delete;

  /// Moves out the outputs that have arrived, waiting up to `wait` for the
  /// first one.
  std::vector<ChoiceEvent> take(std::chrono::milliseconds wait);
  /// Whether every choice's final output has been taken.
  bool done() const;
  /// Cancels every choice not yet finished (their final outputs, with
  /// finish reason abort, still arrive). Thread-safe.
  void cancel();
  int32_t numChoices() const { return int32_t(ids_.size()); }

private:
  struct Shared;
  GenerationRun(engine::Engine &engine, std::shared_ptr<Shared> shared);

  engine::Engine &engine_;
  std::shared_ptr<Shared> shared_;
  std::vector<engine::RequestId> ids_;
  int32_t finalsTaken_ = 0;
};

} // namespace volt::server
