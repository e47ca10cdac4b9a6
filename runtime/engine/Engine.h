//===- Engine.h - the serving engine: requests in, tokens out --*- C++ -*-===//
//
// The engine owns the requests, the scheduler (with the KV-cache block
// manager) and the sampler, and drives a StepBackend one step at a time.
//
// Threads: submit(), cancel(), stats() and stop() may be called from any
// thread (HTTP handlers); step() and the run loops run on one engine
// thread, which is also where output callbacks are called. The backend and
// the sampler run without the engine's lock held, so submit() and cancel()
// never wait for a step's computation. With sampler_threads > 1, a step's
// sequences are sampled (and their detokenizers stepped) on a small pool;
// one request's detokenizer is never called from two threads at once.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/BlockManager.h"
#include "runtime/engine/EngineConfig.h"
#include "runtime/engine/Request.h"
#include "runtime/engine/Sampler.h"
#include "runtime/engine/Scheduler.h"
#include "runtime/engine/StepBackend.h"
#include "runtime/engine/WorkerPool.h"
#include "runtime/support/Status.h"

#include <array>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace volt::engine {

/// What one step did.
struct StepStats {
  int32_t numTokens = 0;
  int32_t numSeqs = 0;
  int32_t numDecodeTokens = 0;
  int32_t numPreempted = 0;
  int32_t numFinished = 0;
  /// Speculative decoding: draft tokens verified, and how many were kept.
  int32_t numDraftTokens = 0;
  int32_t numAcceptedTokens = 0;
};

/// Speculative decoding counters (vLLM's spec_decode_* metrics).
struct SpecDecodeStats {
  uint64_t numDrafts = 0;         ///< spec_decode_num_drafts: verify rounds
  uint64_t numDraftTokens = 0;    ///< spec_decode_num_draft_tokens
  uint64_t numAcceptedTokens = 0; ///< spec_decode_num_accepted_tokens
  /// spec_decode_num_accepted_tokens_per_pos: acceptedPerPosition[j]
  /// counts the rounds whose draft j was kept.
  std::array<uint64_t, kMaxSpeculativeTokens> acceptedPerPosition{};
  /// Steps of the MTP draft program (chained drafts and catch-ups).
  uint64_t numDraftSteps = 0;

  /// Tokens emitted per verify round: 1 + accepted / rounds (vLLM's mean
  /// acceptance length); 0 before the first round.
  double meanAcceptedLength() const {
    return numDrafts == 0 ? 0.0 : 1.0 + double(numAcceptedTokens) / double(numDrafts);
  }
};

/// A snapshot for metrics (vLLM's gauge and counter names in comments).
struct EngineStats {
  int32_t numRunning = 0; ///< num_requests_running
  int32_t numWaiting = 0; ///< num_requests_waiting
  BlockStats kvCache;     ///< kv_cache_usage_perc = kvCache.usage
  uint64_t numPreemptions = 0;
  uint64_t prefixCacheQueries = 0; ///< tokens
  uint64_t prefixCacheHits = 0;    ///< tokens
  uint64_t promptTokens = 0;       ///< prompt tokens of admitted requests
  uint64_t generationTokens = 0;
  uint64_t numSteps = 0;
  uint64_t numFinished = 0;
  /// With a backend that gives sampling candidates: tokens they decided,
  /// and tokens whose logits row had to be fetched.
  uint64_t sampledFromCandidates = 0;
  uint64_t rowsFetched = 0;
  SpecDecodeStats specDecode;
  /// The last backend failure, if any.
  std::string lastError;
};

class Engine {
public:
  /// Validates `config` and makes an engine driving `backend`, which must
  /// outlive it.
  static Result<std::unique_ptr<Engine>> create(EngineConfig config, StepBackend &backend);
  ~Engine();
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  /// Queues a request. Fails, with a message naming the limit, when the
  /// request is malformed or could never run: empty prompt, token ids
  /// outside the vocabulary, invalid sampling options, a prompt plus
  /// max_tokens beyond max_model_len, more KV blocks than the whole cache,
  /// stop strings without a detokenizer. Thread-safe.
  Result<RequestId> submit(Request request);

  /// Ends a request with finish reason "abort": its blocks are freed at
  /// once (or, if it is in the step being executed, as soon as that step
  /// returns); its final output is delivered on the engine thread. Returns
  /// false for an unknown or finished request. Thread-safe.
  bool cancel(RequestId id);

  /// Runs one step: schedules, runs the backend, samples, checks stop
  /// conditions, delivers outputs. With speculative decoding a sequence
  /// may emit several tokens in a step (its accepted drafts and one more),
  /// each as its own output, in order. A backend failure aborts the
  /// requests of the step (their final output carries the error) and is
  /// returned. Engine thread only.
  Result<StepStats> step();

  /// Steps until no request is left; returns the first step failure.
  Status runUntilIdle();
  /// Steps while there is work and sleeps while there is none, until
  /// stop() is called (requests still queued then stay queued). Step
  /// failures abort their requests and are kept in stats().lastError.
  void run();
  /// Makes run() return after the current step. Thread-safe.
  void stop();

  /// Forgets every cached prefix block (vLLM's /reset_prefix_cache).
  /// Fails while any request holds blocks. Thread-safe.
  Status resetPrefixCache();

  /// Whether a step would do something. Thread-safe.
  bool hasWork() const;
  EngineStats stats() const;
  const EngineConfig &config() const { return config_; }

  /// Checks the block manager's invariants and that the blocks in use are
  /// exactly those the live sequences hold; for tests.
  Status checkConsistency() const;

private:
  Engine(EngineConfig config, StepBackend &backend);

  struct Delivery {
    std::shared_ptr<const OutputCallback> callback;
    RequestOutput output;
  };
  // Step results computed without the lock, applied with it.
  struct Outcome {
    Sequence *seq = nullptr;
    std::optional<SampledToken> sampled;
    FinishReason finish = FinishReason::None;
    std::optional<int32_t> stopTokenId;
    std::optional<std::string> stopString;
    std::string text;
    std::string error;
  };

  bool hasWorkLocked() const;
  Outcome processSample(Sampler &sampler, const ScheduledSeq &s, std::span<const float> logits,
                        Clock::time_point now);
  // The token (or the sampling error) applied to the sequence: stop checks,
  // detokenization, finish reasons.
  Outcome applySample(const ScheduledSeq &s, Result<SampledToken> sampled, Clock::time_point now);
  // Runs the step and samples `sampling` (indices into sched.seqs) from
  // whole rows, or from the backend's candidates (fetching the rows of
  // requests they do not decide).
  Status runWithRows(const SchedulerOutput &sched, const std::vector<size_t> &sampling,
                     std::vector<Outcome> &outcomes);
  Status runWithCandidates(const SchedulerOutput &sched, const std::vector<size_t> &sampling,
                           std::vector<Outcome> &outcomes);
  // MTP drafting (EngineConfig::DraftSource::Mtp; docs/design/
  // speculative.md): the draft program's chained steps that give each
  // scheduled sequence its drafts after the first, and the catch-up step
  // after the target's, over every position the target step kept, which
  // fills the draft layer's KV and proposes each sequence's next first
  // draft.
  Status runDraftChain(const SchedulerOutput &sched);
  Status runDraftCatchUp(const SchedulerOutput &sched);
  RequestOutput makeOutput(const Sequence &seq) const;
  // Removes a sequence (blocks freed) and queues its final output.
  void finishLocked(Sequence *seq, RequestOutput output, std::vector<Delivery> &out);
  void deliver(std::vector<Delivery> &deliveries);

  EngineConfig config_;
  StepBackend &backend_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  Scheduler scheduler_;
  std::unordered_map<RequestId, std::unique_ptr<Sequence>> seqs_;
  std::vector<Delivery> pending_; // finals of cancelled requests
  RequestId nextId_ = 1;
  bool stopRequested_ = false;
  EngineStats totals_;

  // Engine thread (and, inside a step, the sampler pool) only.
  WorkerPool pool_;
  std::vector<std::unique_ptr<Sampler>> samplers_; // one per pool thread
  StepBuffers buffers_;
  std::vector<float> logits_;
  std::vector<float> temperatures_, candidateValues_, candidateStats_;
  std::vector<int32_t> candidateIds_;
  // Per scheduled sequence: its first row (outcome), the tokens it emitted
  // this step, and the drafts it kept.
  std::vector<size_t> rowStart_;
  std::vector<int32_t> emitted_, accepted_;
  // Draft steps (MTP): their inputs and logits, and the epoch of the
  // backend's hidden rows (one more with every step that writes them).
  StepBuffers draftBuffers_;
  std::vector<float> draftLogits_;
  uint64_t hiddenEpoch_ = 0;
  uint64_t stepDraftSteps_ = 0;
  // This step's candidate-path counts, added to totals_ under the lock.
  uint64_t stepFromCandidates_ = 0, stepRowsFetched_ = 0;
};

} // namespace volt::engine
