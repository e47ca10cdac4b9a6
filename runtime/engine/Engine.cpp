//===- Engine.cpp - the serving engine: requests in, tokens out -----------===//
#include "runtime/engine/Engine.h"

#include "runtime/engine/VocabMath.h"

#include <algorithm>
#include <string>

namespace volt::engine {

namespace {

uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

double secondsBetween(Clock::time_point from, Clock::time_point to) {
  if (from == Clock::time_point{} || to == Clock::time_point{})
    return 0;
  return std::chrono::duration<double>(to - from).count();
}

bool contains(const std::vector<int32_t> &ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

} // namespace

const char *finishReasonName(FinishReason reason) {
  switch (reason) {
  case FinishReason::None:
    return "";
  case FinishReason::Stop:
    return "stop";
  case FinishReason::Length:
    return "length";
  case FinishReason::Abort:
    return "abort";
  }
  return "";
}

double RequestTimes::queueSeconds() const { return secondsBetween(arrival, firstScheduled); }
double RequestTimes::timeToFirstTokenSeconds() const { return secondsBetween(arrival, firstToken); }

Result<std::unique_ptr<Engine>> Engine::create(EngineConfig config, StepBackend &backend) {
  VOLT_RETURN_IF_ERROR(validateConfig(config));
  if (config.numSpeculativeTokens > 0 && config.draftSource == DraftSource::Mtp &&
      !backend.hasDraftProgram())
    return Error("speculative method mtp: the backend has no draft program (a plan compiled "
                 "with speculative method mtp has one)");
  return std::unique_ptr<Engine>(new Engine(std::move(config), backend));
}

Engine::Engine(EngineConfig config, StepBackend &backend)
    : config_(std::move(config)), backend_(backend), scheduler_(config_),
      pool_(config_.samplerThreads) {
  for (int i = 0; i < pool_.threads(); ++i)
    samplers_.push_back(std::make_unique<Sampler>(config_.vocabSize));
}

Engine::~Engine() = default;

Result<RequestId> Engine::submit(Request request) {
  Clock::time_point arrival = Clock::now();
  const SamplingParams &p = request.sampling;
  const int32_t vocab = config_.vocabSize;
  const int64_t promptLen = int64_t(request.promptTokens.size());
  if (promptLen == 0)
    return Error("prompt: expected at least one token, found none");
  for (size_t i = 0; i < request.promptTokens.size(); ++i) {
    int32_t id = request.promptTokens[i];
    if (id < 0 || id >= vocab)
      return Error("prompt: token " + std::to_string(id) + " at index " + std::to_string(i) +
                   " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  }
  VOLT_RETURN_IF_ERROR(validateSamplingParams(p, vocab, config_.maxLogprobs));
  const int64_t maxLen = config_.maxModelLen;
  if (promptLen >= maxLen)
    return Error("prompt: " + std::to_string(promptLen) +
                 " tokens leave no room for output within max_model_len " + std::to_string(maxLen));
  int64_t maxTokens = p.maxTokens ? *p.maxTokens : maxLen - promptLen;
  if (promptLen + maxTokens > maxLen)
    return Error("max_tokens: " + std::to_string(promptLen) + " prompt tokens plus max_tokens " +
                 std::to_string(maxTokens) + " is " + std::to_string(promptLen + maxTokens) +
                 ", beyond max_model_len " + std::to_string(maxLen));
  // The last output token's KV is never computed.
  int64_t cachedTokens = promptLen + maxTokens - 1;
  int64_t blocksNeeded = (cachedTokens + config_.blockSize - 1) / config_.blockSize;
  if (blocksNeeded > config_.numKvBlocks)
    return Error("request needs " + std::to_string(blocksNeeded) + " KV-cache blocks (" +
                 std::to_string(cachedTokens) + " tokens at block_size " +
                 std::to_string(config_.blockSize) + "), but the cache holds only " +
                 std::to_string(config_.numKvBlocks));
  if (!p.stop.empty() && !request.detokenizer)
    return Error("stop: stop strings need a detokenizer, and the request has none");

  auto seq = std::make_unique<Sequence>();
  seq->tokens = std::move(request.promptTokens);
  seq->promptLen = int32_t(promptLen);
  seq->maxTokens = int32_t(maxTokens);
  seq->params = p;
  if (p.minTokens > 0) {
    seq->minTokensMask = p.stopTokenIds;
    if (!p.ignoreEos)
      seq->minTokensMask.insert(seq->minTokensMask.end(), config_.eosTokenIds.begin(),
                                config_.eosTokenIds.end());
  }
  if (p.repetitionPenalty != 1.0f)
    seq->history.setPrompt(seq->tokens);
  seq->text = OutputText(std::move(request.detokenizer), p.stop, p.includeStopStrInOutput);
  seq->callback = std::make_shared<const OutputCallback>(std::move(request.onOutput));
  seq->times.arrival = arrival;

  std::lock_guard<std::mutex> lock(mu_);
  RequestId id = nextId_++;
  seq->id = id;
  seq->seed = p.seed ? *p.seed : mix64(config_.seed ^ mix64(id));
  scheduler_.addWaiting(seq.get());
  seqs_.emplace(id, std::move(seq));
  wake_.notify_all();
  return id;
}

RequestOutput Engine::makeOutput(const Sequence &seq) const {
  RequestOutput o;
  o.id = seq.id;
  o.usage.promptTokens = seq.promptLen;
  o.usage.completionTokens = seq.numOutput();
  o.usage.cachedPromptTokens = std::max(seq.cachedPromptTokens, 0);
  o.times = seq.times;
  return o;
}

void Engine::finishLocked(Sequence *seq, RequestOutput output, std::vector<Delivery> &out) {
  output.finished = true;
  output.times.finished = Clock::now();
  scheduler_.remove(seq);
  out.push_back({seq->callback, std::move(output)});
  ++totals_.numFinished;
  seqs_.erase(seq->id);
}

bool Engine::cancel(RequestId id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = seqs_.find(id);
  if (it == seqs_.end())
    return false;
  Sequence *seq = it->second.get();
  if (seq->inFlight) {
    seq->cancelRequested = true;
    return true;
  }
  RequestOutput o = makeOutput(*seq);
  o.finishReason = FinishReason::Abort;
  finishLocked(seq, std::move(o), pending_);
  wake_.notify_all();
  return true;
}

namespace {

/// Tokens `seq` may not choose now (its stop tokens before min_tokens).
std::span<const int32_t> maskedFor(const Sequence &seq) {
  if (seq.numOutput() < seq.params.minTokens)
    return seq.minTokensMask;
  return {};
}

/// The uniform draw of `seq`'s next token.
double drawFor(const Sequence &seq) { return uniformDraw(seq.seed, uint64_t(seq.numOutput())); }

/// A greedy draft: the row's largest logit, ties to the lower id (a row
/// of NaN gives token 0).
int32_t argmaxOf(std::span<const float> row) { return std::max(argmax(row), 0); }

/// Empties `b` for a step of the plan's block-table width.
void resetBuffers(StepBuffers &b, int32_t width) {
  for (auto *v : {&b.tokens, &b.positions, &b.slotMapping, &b.seqStarts, &b.contextLens,
                  &b.blockTables, &b.logitsRows, &b.stateSlots, &b.stateSnapshots, &b.hiddenRows})
    v->clear();
  b.maxBlocksPerSeq = width;
}

/// Appends one token of `seq` at `pos` to a draft step.
void addDraftToken(StepBuffers &b, const Sequence &seq, int32_t token, int32_t pos,
                   int32_t hiddenRow, int32_t blockSize) {
  b.tokens.push_back(token);
  b.positions.push_back(pos);
  b.slotMapping.push_back(seq.blocks[size_t(pos / blockSize)] * blockSize + pos % blockSize);
  b.hiddenRows.push_back(hiddenRow);
}

/// Closes the sequence just added to a draft step: its context, logits
/// row (its last token) and block table.
void endDraftSeq(StepBuffers &b, const Sequence &seq, int32_t contextLen) {
  b.contextLens.push_back(contextLen);
  b.logitsRows.push_back(int32_t(b.tokens.size()) - 1);
  const size_t at = b.blockTables.size();
  b.blockTables.resize(at + size_t(b.maxBlocksPerSeq), 0);
  std::copy(seq.blocks.begin(), seq.blocks.end(), b.blockTables.begin() + std::ptrdiff_t(at));
}

} // namespace

Engine::Outcome Engine::processSample(Sampler &sampler, const ScheduledSeq &s,
                                      std::span<const float> logits, Clock::time_point now) {
  const Sequence &seq = *s.seq;
  return applySample(
      s, sampler.sample(logits, seq.params, seq.history, maskedFor(seq), drawFor(seq)), now);
}

Engine::Outcome Engine::applySample(const ScheduledSeq &s, Result<SampledToken> sampled,
                                    Clock::time_point now) {
  Sequence &seq = *s.seq;
  const SamplingParams &p = seq.params;
  Outcome o;
  o.seq = &seq;
  if (!sampled.ok()) {
    o.finish = FinishReason::Abort;
    o.error = "sampling failed: " + sampled.message();
    return o;
  }
  int32_t token = sampled->token;
  seq.tokens.push_back(token);
  seq.history.addOutput(token);
  if (seq.times.firstToken == Clock::time_point{})
    seq.times.firstToken = now;
  seq.times.lastToken = now;

  // vLLM's order: length first, then (past min_tokens) EOS, stop tokens.
  int32_t numOut = seq.numOutput();
  if (int32_t(seq.tokens.size()) >= config_.maxModelLen || numOut >= seq.maxTokens) {
    o.finish = FinishReason::Length;
  } else if (numOut >= p.minTokens) {
    if (!p.ignoreEos && contains(config_.eosTokenIds, token)) {
      o.finish = FinishReason::Stop;
    } else if (contains(p.stopTokenIds, token)) {
      o.finish = FinishReason::Stop;
      o.stopTokenId = token;
    }
  }

  if (seq.text.hasDetokenizer()) {
    bool checkStop = numOut > p.minTokens;
    // A stop token's own text is left out unless include_stop_str_in_output.
    if (o.finish != FinishReason::Stop || p.includeStopStrInOutput) {
      auto match = seq.text.addToken(token, checkStop);
      if (!match.ok()) {
        o.finish = FinishReason::Abort;
        o.error = "detokenization failed: " + match.message();
      } else if (*match) {
        o.finish = FinishReason::Stop;
        o.stopTokenId.reset();
        o.stopString = **match;
      }
    }
    if (o.finish == FinishReason::Stop || o.finish == FinishReason::Length) {
      if (!o.stopString) {
        auto match = seq.text.finish(checkStop);
        if (!match.ok()) {
          o.finish = FinishReason::Abort;
          o.error = "detokenization failed: " + match.message();
        } else if (*match) {
          o.finish = FinishReason::Stop;
          o.stopTokenId.reset();
          o.stopString = **match;
        }
      }
    }
    o.text = seq.text.takeDelta(o.finish != FinishReason::None);
  }
  o.sampled = std::move(*sampled);
  return o;
}

Result<StepStats> Engine::step() {
  std::vector<Delivery> deliveries;
  SchedulerOutput sched;
  const bool mtp = config_.numSpeculativeTokens > 0 && config_.draftSource == DraftSource::Mtp;
  {
    std::lock_guard<std::mutex> lock(mu_);
    deliveries.swap(pending_);
    sched = scheduler_.schedule();
    Clock::time_point now = Clock::now();
    for (const ScheduledSeq &s : sched.seqs) {
      s.seq->inFlight = true;
      if (s.seq->times.firstScheduled == Clock::time_point{}) {
        s.seq->times.firstScheduled = now;
        totals_.promptTokens += s.seq->promptLen;
      }
    }
    // With MTP the drafts after the first are chained by the draft
    // program first (below).
    if (!sched.seqs.empty() && !mtp)
      scheduler_.buildBatch(sched, buffers_);
  }
  StepStats stats;
  stats.numTokens = sched.numTokens;
  stats.numSeqs = int32_t(sched.seqs.size());
  stats.numDecodeTokens = sched.numDecodeTokens;
  stats.numPreempted = sched.numPreempted;
  stats.numDraftTokens = sched.numDraftTokens;
  if (sched.seqs.empty()) {
    deliver(deliveries);
    return stats;
  }

  // Sequence i's outcomes are outcomes[rowStart[i], rowStart[i] +
  // emitted[i]): one per token it emits this step (several when drafts
  // are accepted).
  const size_t numSeqs = sched.seqs.size();
  rowStart_.resize(numSeqs);
  emitted_.assign(numSeqs, 0);
  size_t rows = 0;
  for (size_t i = 0; i < numSeqs; ++i) {
    rowStart_[i] = rows;
    rows += size_t(sched.seqs[i].numDrafts) + 1;
  }
  std::vector<Outcome> outcomes(rows);
  std::vector<size_t> sampling;
  for (size_t i = 0; i < numSeqs; ++i)
    if (sched.seqs[i].samples)
      sampling.push_back(i);
  Status status = Status::success();
  if (mtp) {
    // The step's sequences are in flight: only this thread touches them.
    if (sched.numDraftTokens > 0)
      status = runDraftChain(sched);
    scheduler_.buildBatch(sched, buffers_);
  }
  // Verify steps need every draft row's logits: candidates cover one row
  // per sequence only.
  if (status.ok())
    status = backend_.candidatesPerSeq() > 0 && sched.numDraftTokens == 0
                 ? runWithCandidates(sched, sampling, outcomes)
                 : runWithRows(sched, sampling, outcomes);
  if (mtp && status.ok()) {
    ++hiddenEpoch_; // the target step wrote the hidden rows
    status = runDraftCatchUp(sched);
  }

  {
    std::lock_guard<std::mutex> lock(mu_);
    totals_.sampledFromCandidates += stepFromCandidates_;
    totals_.rowsFetched += stepRowsFetched_;
    totals_.specDecode.numDraftSteps += stepDraftSteps_;
    stepFromCandidates_ = stepRowsFetched_ = stepDraftSteps_ = 0;
    if (mtp)
      scheduler_.setHiddenEpoch(hiddenEpoch_);
    if (status.ok()) {
      if (sched.numDraftTokens > 0) {
        accepted_.assign(numSeqs, 0);
        for (size_t i = 0; i < numSeqs; ++i) {
          const int32_t drafts = sched.seqs[i].numDrafts;
          if (drafts == 0)
            continue;
          // Every emitted token but the last was a draft the target agreed with.
          const int32_t kept = std::max(emitted_[i] - 1, 0);
          accepted_[i] = kept;
          ++totals_.specDecode.numDrafts;
          totals_.specDecode.numDraftTokens += uint64_t(drafts);
          totals_.specDecode.numAcceptedTokens += uint64_t(kept);
          for (int32_t j = 0; j < kept; ++j)
            ++totals_.specDecode.acceptedPerPosition[size_t(j)];
          stats.numAcceptedTokens += kept;
        }
        scheduler_.finishStep(sched, accepted_);
      } else {
        scheduler_.finishStep(sched);
      }
    } else {
      totals_.lastError = status.message();
    }
    ++totals_.numSteps;
    for (size_t i = 0; i < numSeqs; ++i) {
      Sequence *seq = sched.seqs[i].seq;
      seq->inFlight = false;
      if (!status.ok()) {
        RequestOutput o = makeOutput(*seq);
        o.finishReason = FinishReason::Abort;
        o.error = "step failed: " + status.message();
        ++stats.numFinished;
        finishLocked(seq, std::move(o), deliveries);
        continue;
      }
      const int32_t n = emitted_[i];
      bool finished = false;
      for (int32_t j = 0; j < n && !finished; ++j) {
        Outcome &oc = outcomes[rowStart_[i] + size_t(j)];
        RequestOutput o = makeOutput(*seq);
        // Each token is its own output, counted as of its emission.
        o.usage.completionTokens = seq->numOutput() - (n - 1 - j);
        if (oc.sampled) {
          o.token = oc.sampled->token;
          o.logprobs = std::move(oc.sampled->logprobs);
          ++totals_.generationTokens;
        }
        o.text = std::move(oc.text);
        o.finishReason = oc.finish;
        o.stopTokenId = oc.stopTokenId;
        o.stopString = std::move(oc.stopString);
        o.error = std::move(oc.error);
        if (o.finishReason == FinishReason::None && j == n - 1 && seq->cancelRequested)
          o.finishReason = FinishReason::Abort;
        if (o.finishReason != FinishReason::None) {
          ++stats.numFinished;
          finished = true;
          finishLocked(seq, std::move(o), deliveries);
        } else if (oc.sampled) {
          deliveries.push_back({seq->callback, std::move(o)});
        }
      }
      if (!finished && n == 0 && seq->cancelRequested) {
        RequestOutput o = makeOutput(*seq);
        o.finishReason = FinishReason::Abort;
        ++stats.numFinished;
        finishLocked(seq, std::move(o), deliveries);
      }
    }
  }
  deliver(deliveries);
  if (!status.ok())
    return status.error();
  return stats;
}

Status Engine::runDraftChain(const SchedulerOutput &sched) {
  int32_t longest = 0;
  for (const ScheduledSeq &s : sched.seqs)
    longest = std::max(longest, s.numDrafts);
  const size_t vocab = size_t(config_.vocabSize);
  // A draft step at position p pairs the hidden state there with the
  // token after it. A sequence of N computed tokens verifies its last
  // token x (at N) and drafts d1.. at N + 1..; step j (1-based) pairs the
  // hidden row the previous draft step left for it (standing in for the
  // target's, not computed yet) with d_j at position N + j - 1 and
  // proposes d_(j+1). The scheduler allocated the KV slots of every
  // position the verify step covers, these among them.
  for (int32_t j = 1; j < longest; ++j) {
    StepBuffers &b = draftBuffers_;
    resetBuffers(b, config_.maxBlocksPerSeq);
    std::vector<Sequence *> chain;
    for (const ScheduledSeq &s : sched.seqs) {
      if (s.numDrafts <= j)
        continue;
      Sequence &seq = *s.seq;
      const int32_t pos = seq.numComputed + j - 1;
      b.seqStarts.push_back(int32_t(b.tokens.size()));
      addDraftToken(b, seq, seq.drafts[size_t(j - 1)], pos, seq.mtpHiddenRow, config_.blockSize);
      endDraftSeq(b, seq, pos + 1);
      chain.push_back(&seq);
    }
    b.seqStarts.push_back(int32_t(b.tokens.size()));
    draftLogits_.resize(chain.size() * vocab);
    VOLT_RETURN_IF_ERROR(backend_.runDraftStep(b.view(), draftLogits_));
    ++stepDraftSteps_;
    for (size_t r = 0; r < chain.size(); ++r) {
      chain[r]->drafts[size_t(j)] = argmaxOf(std::span(draftLogits_).subspan(r * vocab, vocab));
      chain[r]->mtpHiddenRow = int32_t(r);
    }
  }
  return Status::success();
}

Status Engine::runDraftCatchUp(const SchedulerOutput &sched) {
  // Every position the target step kept, as (its hidden state, the token
  // after it): the draft layer's KV of those positions, and from each
  // sequence's last one the first draft of its next step.
  StepBuffers &b = draftBuffers_;
  resetBuffers(b, config_.maxBlocksPerSeq);
  std::vector<size_t> who;
  for (size_t i = 0; i < sched.seqs.size(); ++i) {
    const ScheduledSeq &s = sched.seqs[i];
    Sequence &seq = *s.seq;
    seq.mtpDraft = seq.mtpHiddenRow = -1;
    const int32_t kept = s.numDrafts > 0 ? std::max(emitted_[i] - 1, 0) : 0;
    const int32_t first = seq.numComputed;
    // A position whose next token was not sampled (a failed sample) has
    // nothing to pair with.
    const int32_t count = std::min(s.numNewTokens - s.numDrafts + kept,
                                   int32_t(seq.tokens.size()) - 1 - first);
    if (count <= 0)
      continue;
    b.seqStarts.push_back(int32_t(b.tokens.size()));
    for (int32_t k = 0; k < count; ++k)
      addDraftToken(b, seq, seq.tokens[size_t(first + k + 1)], first + k,
                    buffers_.seqStarts[i] + k, config_.blockSize);
    endDraftSeq(b, seq, first + count);
    who.push_back(i);
  }
  if (who.empty())
    return Status::success();
  b.seqStarts.push_back(int32_t(b.tokens.size()));
  const size_t vocab = size_t(config_.vocabSize);
  draftLogits_.resize(who.size() * vocab);
  VOLT_RETURN_IF_ERROR(backend_.runDraftStep(b.view(), draftLogits_));
  ++stepDraftSteps_;
  ++hiddenEpoch_;
  for (size_t r = 0; r < who.size(); ++r) {
    const ScheduledSeq &s = sched.seqs[who[r]];
    // Only a sequence that sampled its next token decodes next.
    if (!s.samples)
      continue;
    s.seq->mtpDraft = argmaxOf(std::span(draftLogits_).subspan(r * vocab, vocab));
    s.seq->mtpHiddenRow = b.logitsRows[r];
    s.seq->mtpHiddenEpoch = hiddenEpoch_;
  }
  return Status::success();
}

Status Engine::runWithRows(const SchedulerOutput &sched, const std::vector<size_t> &sampling,
                           std::vector<Outcome> &outcomes) {
  const size_t vocab = size_t(config_.vocabSize);
  logits_.resize(size_t(sched.numRows) * vocab);
  VOLT_RETURN_IF_ERROR(backend_.runStep(buffers_.view(), logits_));
  Clock::time_point now = Clock::now();
  pool_.run(sampling.size(), [&](int worker, size_t j) {
    const size_t i = sampling[j];
    const ScheduledSeq &s = sched.seqs[i];
    const Sequence &seq = *s.seq;
    // Row r is the target's distribution after the last accepted token
    // and r drafts. Each row is sampled as the next output token would be
    // without drafts (its own draw, history and masks); the draft is kept
    // when the sampled token equals it, which for one-hot drafts is the
    // rejection-sampling rule (docs/design/speculative.md). The first
    // mismatch is the correction, the token after the last draft the bonus.
    for (int32_t r = 0; r <= s.numDrafts; ++r) {
      const size_t row = rowStart_[i] + size_t(r);
      Outcome &o = outcomes[row] =
          processSample(*samplers_[worker], s, std::span(logits_).subspan(row * vocab, vocab), now);
      ++emitted_[i];
      if (o.finish != FinishReason::None || !o.sampled || r == s.numDrafts ||
          o.sampled->token != seq.drafts[size_t(r)])
        break;
    }
  });
  return Status::success();
}

Status Engine::runWithCandidates(const SchedulerOutput &sched, const std::vector<size_t> &sampling,
                                 std::vector<Outcome> &outcomes) {
  // The backend returns each sequence's k largest logits and normalisers;
  // a request whose filters reach past them gets its row fetched.
  const size_t seqs = sched.seqs.size(), vocab = size_t(config_.vocabSize);
  const size_t k = size_t(backend_.candidatesPerSeq());
  temperatures_.assign(seqs, 0.0f);
  for (size_t i : sampling) {
    const SamplingParams &p = sched.seqs[i].seq->params;
    temperatures_[i] = p.greedy() ? 0.0f : p.temperature;
  }
  candidateIds_.resize(seqs * k);
  candidateValues_.resize(seqs * k);
  candidateStats_.resize(seqs * 3);
  StepCandidates out{int32_t(k), candidateIds_, candidateValues_, candidateStats_};
  VOLT_RETURN_IF_ERROR(backend_.runStepCandidates(buffers_.view(), temperatures_, out));
  Clock::time_point now = Clock::now();
  auto rowOf = [&](size_t i) {
    CandidateRow row;
    row.ids = std::span<const int32_t>(candidateIds_).subspan(i * k, k);
    row.values = std::span<const float>(candidateValues_).subspan(i * k, k);
    row.max = candidateStats_[i * 3];
    row.sum1 = candidateStats_[i * 3 + 1];
    row.sumT = candidateStats_[i * 3 + 2];
    return row;
  };
  // Decide what the candidates can; nothing is applied before the rows the
  // others need have arrived, so a failed fetch fails the step as a
  // failed run would.
  std::vector<std::optional<Result<SampledToken>>> decided(sampling.size());
  pool_.run(sampling.size(), [&](int worker, size_t j) {
    const Sequence &seq = *sched.seqs[sampling[j]].seq;
    auto d = samplers_[worker]->sampleCandidates(rowOf(sampling[j]), seq.params, seq.history,
                                                 maskedFor(seq), drawFor(seq));
    if (!d.ok())
      decided[j].emplace(d.error());
    else if (d->has_value())
      decided[j].emplace(std::move(**d));
  });
  std::vector<int32_t> rowSeqs;
  std::vector<size_t> rowJobs;
  for (size_t j = 0; j < sampling.size(); ++j)
    if (!decided[j]) {
      rowSeqs.push_back(int32_t(sampling[j]));
      rowJobs.push_back(j);
    }
  if (!rowSeqs.empty()) {
    logits_.resize(rowSeqs.size() * vocab);
    VOLT_RETURN_IF_ERROR(backend_.fetchRows(rowSeqs, logits_));
    pool_.run(rowJobs.size(), [&](int worker, size_t r) {
      const size_t j = rowJobs[r], i = sampling[j];
      const Sequence &seq = *sched.seqs[i].seq;
      decided[j].emplace(samplers_[worker]->sampleRow(
          std::span<const float>(logits_).subspan(r * vocab, vocab), rowOf(i), seq.params,
          seq.history, maskedFor(seq), drawFor(seq)));
    });
  }
  stepRowsFetched_ = rowSeqs.size();
  stepFromCandidates_ = sampling.size() - rowSeqs.size();
  pool_.run(sampling.size(), [&](int, size_t j) {
    const size_t i = sampling[j];
    outcomes[rowStart_[i]] = applySample(sched.seqs[i], std::move(*decided[j]), now);
    emitted_[i] = 1;
  });
  return Status::success();
}

void Engine::deliver(std::vector<Delivery> &deliveries) {
  for (Delivery &d : deliveries)
    if (d.callback && *d.callback)
      (*d.callback)(d.output);
  deliveries.clear();
}

bool Engine::hasWorkLocked() const {
  return !pending_.empty() || scheduler_.numWaiting() > 0 || scheduler_.numRunning() > 0;
}

bool Engine::hasWork() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hasWorkLocked();
}

Status Engine::runUntilIdle() {
  while (hasWork()) {
    auto r = step();
    if (!r.ok())
      return r.status();
  }
  return Status::success();
}

void Engine::run() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stopRequested_ || hasWorkLocked(); });
      if (stopRequested_) {
        stopRequested_ = false;
        return;
      }
    }
    // A failure has aborted the step's requests and is in stats().
    auto r = step();
    (void)r;
  }
}

void Engine::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopRequested_ = true;
  wake_.notify_all();
}

Status Engine::resetPrefixCache() {
  std::lock_guard<std::mutex> lock(mu_);
  return scheduler_.blockManager().resetPrefixCache();
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  EngineStats s = totals_;
  s.numRunning = int32_t(scheduler_.numRunning());
  s.numWaiting = int32_t(scheduler_.numWaiting());
  s.kvCache = scheduler_.blockManager().stats();
  s.numPreemptions = scheduler_.counters().numPreemptions;
  s.prefixCacheQueries = scheduler_.counters().prefixCacheQueries;
  s.prefixCacheHits = scheduler_.counters().prefixCacheHits;
  return s;
}

Status Engine::checkConsistency() const {
  std::lock_guard<std::mutex> lock(mu_);
  const BlockManager &bm = scheduler_.blockManager();
  VOLT_RETURN_IF_ERROR(bm.checkInvariants());
  std::vector<int32_t> holders(bm.numBlocks(), 0);
  for (const auto &[id, seq] : seqs_)
    for (BlockId b : seq->blocks)
      ++holders[b];
  for (BlockId b = 0; b < bm.numBlocks(); ++b)
    if (holders[b] != bm.refCount(b))
      return Error("block " + std::to_string(b) + ": reference count " +
                   std::to_string(bm.refCount(b)) + ", held by " + std::to_string(holders[b]) +
                   " sequences");
  return Status::success();
}

} // namespace volt::engine
