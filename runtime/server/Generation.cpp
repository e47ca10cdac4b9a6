//===- Generation.cpp -----------------------------------------------------===//
#include "runtime/server/Generation.h"

namespace volt::server {

/// What the engine thread and the HTTP thread share; the engine's
/// callbacks keep it alive until their last output.
struct GenerationRun::Shared {
  Metrics *metrics = nullptr;
  std::mutex mu;
  std::condition_variable ready;
  std::deque<ChoiceEvent> events;
  std::vector<engine::Clock::time_point> lastToken; // per choice
  std::vector<bool> finished;                       // per choice
};

GenerationRun::GenerationRun(engine::Engine &engine, std::shared_ptr<Shared> shared)
    : engine_(engine), shared_(std::move(shared)) {}

ApiResult<std::unique_ptr<GenerationRun>>
GenerationRun::start(engine::Engine &engine, std::vector<ChoiceSpec> choices, Metrics &metrics) {
  auto shared = std::make_shared<Shared>();
  shared->metrics = &metrics;
  shared->lastToken.resize(choices.size());
  shared->finished.resize(choices.size(), false);
  std::unique_ptr<GenerationRun> run(new GenerationRun(engine, shared));
  for (size_t i = 0; i < choices.size(); ++i) {
    engine::Request request;
    request.promptTokens = std::move(choices[i].promptTokens);
    request.sampling = std::move(choices[i].sampling);
    request.detokenizer = std::move(choices[i].detokenizer);
    int32_t choice = int32_t(i);
    request.onOutput = [shared, choice](const engine::RequestOutput &out) {
      // Metrics first, outside the run's lock: they have their own.
      if (out.token) {
        bool first = shared->lastToken[choice] == engine::Clock::time_point{};
        engine::Clock::time_point previous = first ? out.times.arrival : shared->lastToken[choice];
        shared->lastToken[choice] = out.times.lastToken;
        shared->metrics->observeToken(
            first, std::chrono::duration<double>(out.times.lastToken - previous).count());
      }
      if (out.finished)
        shared->metrics->observeFinished(out.finishReason, out.times, out.usage.promptTokens,
                                         out.usage.completionTokens);
      std::lock_guard<std::mutex> lock(shared->mu);
      if (out.finished)
        shared->finished[choice] = true;
      shared->events.push_back({choice, out});
      shared->ready.notify_all();
    };
    auto id = engine.submit(std::move(request));
    if (!id) {
      run->cancel();
      return badRequestFromMessage(id.message());
    }
    run->ids_.push_back(*id);
  }
  return run;
}

GenerationRun::~GenerationRun() {
  if (!done())
    cancel();
}

std::vector<ChoiceEvent> GenerationRun::take(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(shared_->mu);
  shared_->ready.wait_for(lock, wait, [&] { return !shared_->events.empty(); });
  std::vector<ChoiceEvent> out(std::make_move_iterator(shared_->events.begin()),
                               std::make_move_iterator(shared_->events.end()));
  shared_->events.clear();
  for (const ChoiceEvent &e : out)
    if (e.output.finished)
      ++finalsTaken_;
  return out;
}

bool GenerationRun::done() const { return finalsTaken_ == int32_t(ids_.size()); }

void GenerationRun::cancel() {
  std::vector<engine::RequestId> unfinished;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    for (size_t i = 0; i < ids_.size(); ++i)
      if (!shared_->finished[i])
        unfinished.push_back(ids_[i]);
  }
  for (engine::RequestId id : unfinished)
    engine_.cancel(id);
}

} // namespace volt::server
