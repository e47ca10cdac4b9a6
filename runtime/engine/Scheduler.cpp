//===- Scheduler.cpp - continuous batching over a token budget ------------===//
#include "runtime/engine/Scheduler.h"

#include "runtime/engine/NgramProposer.h"

#include <algorithm>
#include <cassert>

namespace volt::engine {

StepBatch StepBuffers::view() const {
  StepBatch b;
  b.numTokens = int32_t(tokens.size());
  b.numSeqs = int32_t(contextLens.size());
  b.maxBlocksPerSeq = maxBlocksPerSeq;
  b.tokens = tokens;
  b.positions = positions;
  b.slotMapping = slotMapping;
  b.seqStarts = seqStarts;
  b.contextLens = contextLens;
  b.blockTables = blockTables;
  b.logitsRows = logitsRows;
  b.stateSlots = stateSlots;
  b.stateSnapshots = stateSnapshots;
  b.hiddenRows = hiddenRows;
  return b;
}

Scheduler::Scheduler(const EngineConfig &config)
    : config_(config), blocks_(config.numKvBlocks, config.blockSize, config.enablePrefixCaching) {
  // Handed out lowest first.
  for (int32_t s = config.numStateSlots; s-- > 0;)
    freeStateSlots_.push_back(s);
}

void Scheduler::releaseStateSlot(Sequence *seq) {
  if (seq->stateSlot >= 0)
    freeStateSlots_.push_back(seq->stateSlot);
  seq->stateSlot = -1;
  freeStateSlots_.insert(freeStateSlots_.end(), seq->spareStateSlots.begin(),
                         seq->spareStateSlots.end());
  seq->spareStateSlots.clear();
}

void Scheduler::addWaiting(Sequence *seq) { waiting_.push_back(seq); }

void Scheduler::remove(Sequence *seq) {
  if (seq->running)
    running_.erase(std::find(running_.begin(), running_.end(), seq));
  else if (auto it = std::find(waiting_.begin(), waiting_.end(), seq); it != waiting_.end())
    waiting_.erase(it);
  blocks_.release(seq->blocks);
  seq->blocks.clear();
  seq->numCachedBlocks = 0;
  seq->running = false;
  releaseStateSlot(seq);
}

void Scheduler::computeHashes(Sequence *seq, int32_t numFullBlocks) {
  const int32_t bs = config_.blockSize;
  for (int32_t b = int32_t(seq->blockHashes.size()); b < numFullBlocks; ++b) {
    BlockHash parent = b == 0 ? kRootBlockHash : seq->blockHashes[b - 1];
    seq->blockHashes.push_back(
        hashBlock(parent, std::span(seq->tokens).subspan(size_t(b) * bs, bs)));
  }
}

bool Scheduler::allocateSlots(Sequence *seq, int32_t numNewTokens,
                              const std::vector<BlockId> &hits) {
  const int32_t bs = config_.blockSize;
  int32_t computed = seq->numComputed + int32_t(hits.size()) * bs;
  int32_t blocksAfter = (computed + numNewTokens + bs - 1) / bs;
  int32_t have = int32_t(seq->blocks.size() + hits.size());
  int32_t needed = std::max(0, blocksAfter - have);
  // Hits nobody holds sit in the free queue: taking them uses free blocks.
  if (needed > blocks_.numFreeBlocks() - blocks_.countUnreferenced(hits))
    return false;
  blocks_.acquire(hits);
  seq->blocks.insert(seq->blocks.end(), hits.begin(), hits.end());
  blocks_.allocate(needed, seq->blocks);
  return true;
}

void Scheduler::preempt(Sequence *seq) {
  blocks_.release(seq->blocks);
  seq->blocks.clear();
  seq->numCachedBlocks = 0;
  seq->numComputed = 0;
  seq->drafts.clear();
  seq->mtpDraft = seq->mtpHiddenRow = -1;
  seq->running = false;
  // Its state is recomputed with its tokens.
  releaseStateSlot(seq);
  ++seq->times.numPreemptions;
  ++counters_.numPreemptions;
  waiting_.push_front(seq);
}

int32_t Scheduler::proposeDrafts(Sequence *seq, int32_t limit) {
  // Every accepted draft is an output token: never draft past max_tokens
  // or max_model_len (the step adds up to drafts + 1 tokens).
  limit = std::min({limit, config_.numSpeculativeTokens, seq->maxTokens - seq->numOutput() - 1,
                    config_.maxModelLen - int32_t(seq->tokens.size()) - 1});
  seq->drafts.clear();
  if (limit <= 0)
    return 0;
  if (config_.draftSource == DraftSource::Mtp) {
    // The first draft is the draft program's proposal; the engine chains
    // the draft program for the others once their KV slots are allocated
    // (only from a hidden row still held).
    if (seq->mtpDraft < 0)
      return 0;
    const bool chains = seq->mtpHiddenRow >= 0 && seq->mtpHiddenEpoch == hiddenEpoch_;
    const int32_t n = chains ? limit : 1;
    seq->drafts.assign(size_t(n), seq->mtpDraft);
    return n;
  }
  seq->drafts.resize(size_t(limit));
  int32_t n = proposeNgram(seq->tokens, config_.promptLookupMin, config_.promptLookupMax,
                           seq->drafts);
  seq->drafts.resize(size_t(n));
  return n;
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  int32_t budget = config_.maxNumBatchedTokens;
  // Rows beyond one per sequence, for drafts.
  int32_t spareRows = config_.maxLogitsRows - config_.maxNumSeqs;
  auto add = [&](Sequence *seq, int32_t n, int32_t drafts) {
    bool samples = seq->numComputed + n - drafts == int32_t(seq->tokens.size());
    out.seqs.push_back({seq, n, samples, drafts});
    out.numTokens += n;
    out.numRows += 1 + drafts;
    out.numDraftTokens += drafts;
    spareRows -= drafts;
    if (n - drafts == 1 && samples && seq->numComputed >= seq->promptLen)
      ++out.numDecodeTokens;
    budget -= n;
  };

  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Sequence *seq = running_[i];
    const int32_t remaining = int32_t(seq->tokens.size()) - seq->numComputed;
    int32_t n = std::min<int32_t>(remaining, budget);
    assert(n > 0 && "a running sequence always has a token to compute");
    // A decoding sequence may verify drafts with its token, if their
    // blocks are free: drafts never preempt anyone.
    int32_t drafts = 0;
    if (config_.numSpeculativeTokens > 0 && remaining == 1 && seq->numOutput() > 0) {
      drafts = proposeDrafts(seq, std::min(budget - 1, spareRows));
      if (drafts > 0 && !allocateSlots(seq, 1 + drafts, {})) {
        drafts = 0;
        seq->drafts.clear();
      }
      if (drafts > 0)
        n = 1 + drafts;
    }
    bool scheduled = true;
    while (drafts == 0 && !allocateSlots(seq, n, {})) {
      // Out of blocks: the newest running sequence gives its blocks back.
      // Sequences before index i are already in this step and are never
      // the newest, since the victims are taken from the back.
      Sequence *victim = running_.back();
      running_.pop_back();
      preempt(victim);
      ++out.numPreempted;
      if (victim == seq) {
        scheduled = false;
        break;
      }
    }
    if (!scheduled)
      break;
    add(seq, n, drafts);
    ++i;
  }

  if (out.numPreempted > 0)
    return out;
  while (!waiting_.empty() && budget > 0 && int32_t(running_.size()) < config_.maxNumSeqs) {
    Sequence *seq = waiting_.front();
    assert(seq->numComputed == 0 && seq->blocks.empty());
    std::vector<BlockId> hits;
    if (blocks_.prefixCachingEnabled()) {
      // At least the last token is computed, for its logits.
      int32_t full = (int32_t(seq->tokens.size()) - 1) / config_.blockSize;
      computeHashes(seq, full);
      hits = blocks_.findCachedPrefix(std::span(seq->blockHashes).first(full), seq->tokens);
      // An MTP draft layer's KV at position p pairs the target's state
      // there with token p + 1, which the block's hash does not cover: at
      // the end of the last hit block it may be another sequence's token.
      // Its KV is recomputed with the block (every earlier block's last
      // pair is right: the next block matched too), as vLLM does for its
      // EAGLE and MTP drafters.
      if (config_.draftSource == DraftSource::Mtp && config_.numSpeculativeTokens > 0 &&
          !hits.empty())
        hits.pop_back();
    }
    int32_t cached = int32_t(hits.size()) * config_.blockSize;
    int32_t n = std::min<int32_t>(int32_t(seq->tokens.size()) - cached, budget);
    if (!allocateSlots(seq, n, hits))
      break;
    waiting_.pop_front();
    if (config_.numStateSlots > 0) {
      // Fewer than max_num_seqs sequences run, and num_state_slots >=
      // max_num_seqs x (1 + num_speculative_tokens): 1 + k slots are free.
      assert(seq->stateSlot < 0 && seq->spareStateSlots.empty());
      assert(freeStateSlots_.size() >= size_t(1 + config_.numSpeculativeTokens));
      seq->stateSlot = freeStateSlots_.back();
      freeStateSlots_.pop_back();
      for (int32_t j = 0; j < config_.numSpeculativeTokens; ++j) {
        seq->spareStateSlots.push_back(freeStateSlots_.back());
        freeStateSlots_.pop_back();
      }
    }
    seq->numComputed = cached;
    seq->numCachedBlocks = int32_t(hits.size());
    seq->running = true;
    if (seq->cachedPromptTokens < 0) {
      seq->cachedPromptTokens = std::min(cached, seq->promptLen);
      counters_.prefixCacheQueries += seq->promptLen;
      counters_.prefixCacheHits += seq->cachedPromptTokens;
    }
    running_.push_back(seq);
    add(seq, n, 0);
  }
  return out;
}

void Scheduler::buildBatch(const SchedulerOutput &out, StepBuffers &buf) const {
  const int32_t bs = config_.blockSize;
  const int32_t width = config_.maxBlocksPerSeq;
  const size_t numSeqs = out.seqs.size();
  buf.maxBlocksPerSeq = width;
  buf.tokens.resize(out.numTokens);
  buf.positions.resize(out.numTokens);
  buf.slotMapping.resize(out.numTokens);
  buf.seqStarts.resize(numSeqs + 1);
  buf.contextLens.resize(numSeqs);
  buf.logitsRows.resize(size_t(out.numRows));
  buf.stateSlots.resize(config_.numStateSlots > 0 ? numSeqs : 0);
  // A recurrent state is copied after each draft-carrying token of a
  // verify step (the sequence's last token and its drafts but the last).
  buf.stateSnapshots.assign(config_.numStateSlots > 0 && out.numDraftTokens > 0
                                ? size_t(out.numTokens)
                                : 0,
                            -1);
  buf.blockTables.assign(numSeqs * width, 0);
  int32_t t = 0, row = 0;
  for (size_t s = 0; s < numSeqs; ++s) {
    const Sequence &seq = *out.seqs[s].seq;
    const int32_t known = int32_t(seq.tokens.size());
    buf.seqStarts[s] = t;
    for (int32_t j = 0; j < out.seqs[s].numNewTokens; ++j, ++t) {
      int32_t pos = seq.numComputed + j;
      buf.tokens[t] = pos < known ? seq.tokens[pos] : seq.drafts[size_t(pos - known)];
      buf.positions[t] = pos;
      buf.slotMapping[t] = seq.blocks[pos / bs] * bs + pos % bs;
    }
    buf.contextLens[s] = seq.numComputed + out.seqs[s].numNewTokens;
    // The last token's row, and before it one row per draft: row j gives
    // the target's distribution for the token after position known-1+j.
    for (int32_t j = out.seqs[s].numDrafts; j >= 0; --j)
      buf.logitsRows[size_t(row++)] = t - 1 - j;
    if (!buf.stateSlots.empty())
      buf.stateSlots[s] = seq.stateSlot;
    if (!buf.stateSnapshots.empty())
      for (int32_t j = 0; j < out.seqs[s].numDrafts; ++j)
        buf.stateSnapshots[size_t(t - 1 - out.seqs[s].numDrafts + j)] =
            seq.spareStateSlots[size_t(j)];
    std::copy(seq.blocks.begin(), seq.blocks.end(), buf.blockTables.begin() + s * width);
  }
  buf.seqStarts[numSeqs] = t;
}

void Scheduler::finishStep(const SchedulerOutput &out, std::span<const int32_t> accepted) {
  const int32_t bs = config_.blockSize;
  for (size_t i = 0; i < out.seqs.size(); ++i) {
    const ScheduledSeq &s = out.seqs[i];
    Sequence *seq = s.seq;
    if (s.numDrafts == 0) {
      seq->numComputed += s.numNewTokens;
    } else {
      // The KV of the last token and the kept drafts stays; the positions
      // of rejected drafts are rewritten by later steps, and blocks that
      // hold nothing else go back to the pool (last first).
      const int32_t kept = accepted.empty() ? 0 : std::clamp(accepted[i], 0, s.numDrafts);
      seq->numComputed += s.numNewTokens - s.numDrafts + kept;
      // The state after the last kept token: the final one, or the copy
      // made after it.
      if (kept < s.numDrafts && seq->stateSlot >= 0)
        std::swap(seq->stateSlot, seq->spareStateSlots[size_t(kept)]);
      const size_t blocksKept = size_t((seq->numComputed + bs - 1) / bs);
      if (seq->blocks.size() > blocksKept) {
        blocks_.release(std::span(seq->blocks).subspan(blocksKept));
        seq->blocks.resize(blocksKept);
      }
      seq->drafts.clear();
    }
    if (!blocks_.prefixCachingEnabled())
      continue;
    // Blocks are registered only once their KV is written, so that a hit
    // never reads a block a concurrent sequence of the same step fills.
    int32_t full = seq->numComputed / bs;
    computeHashes(seq, full);
    for (int32_t b = seq->numCachedBlocks; b < full; ++b)
      blocks_.cacheBlock(seq->blocks[b], seq->blockHashes[b],
                         b == 0 ? kRootBlockHash : seq->blockHashes[b - 1],
                         std::span(seq->tokens).subspan(size_t(b) * bs, bs));
    seq->numCachedBlocks = std::max(seq->numCachedBlocks, full);
  }
}

} // namespace volt::engine
