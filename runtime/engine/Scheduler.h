//===- Scheduler.h - continuous batching over a token budget ---*- C++ -*-===//
//
// Each step, the scheduler picks which tokens run, vLLM v1-style:
//
//  1. Running sequences first, in admission order: each gets its remaining
//     tokens (1 for a decoding sequence, the rest of its prompt, in chunks,
//     for one being prefilled) up to what is left of max_num_batched_tokens.
//     When the KV cache has no block for one, the newest running sequence
//     is preempted (blocks freed, back to the front of the waiting queue,
//     to recompute its prompt and output later) until it fits, or until it
//     is itself the newest.
//  2. Then, if nothing was preempted this step, waiting sequences in FCFS
//     order, while fewer than max_num_seqs run and tokens and blocks are
//     left: each reuses what the prefix cache holds of it and gets a chunk
//     of the rest. The first one that does not fit stops admission (no
//     overtaking), so a long prompt is not starved by short ones.
//
// A sequence whose last scheduled token is its last token gets logits
// sampled; a partial prefill chunk's logits are discarded.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/BlockManager.h"
#include "runtime/engine/EngineConfig.h"
#include "runtime/engine/Sequence.h"
#include "runtime/engine/StepBackend.h"

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

namespace volt::engine {

struct ScheduledSeq {
  Sequence *seq = nullptr;
  int32_t numNewTokens = 0;
  /// The step computes the sequence's last token: its logits are sampled.
  bool samples = false;
  /// Of numNewTokens, the draft tokens (seq->drafts) after its last token:
  /// the step has numDrafts + 1 logits rows for the sequence.
  int32_t numDrafts = 0;
};

struct SchedulerOutput {
  std::vector<ScheduledSeq> seqs;
  int32_t numTokens = 0;
  /// Tokens of decoding sequences (one each); the rest are prefill or
  /// recompute tokens.
  int32_t numDecodeTokens = 0;
  int32_t numPreempted = 0;
  /// Logits rows: one per sequence plus one per draft token.
  int32_t numRows = 0;
  int32_t numDraftTokens = 0;
};

/// The step input arrays, owned so they are reused across steps.
struct StepBuffers {
  std::vector<int32_t> tokens, positions, slotMapping, seqStarts, contextLens, blockTables,
      logitsRows, stateSlots, stateSnapshots, hiddenRows;
  int32_t maxBlocksPerSeq = 0;
  StepBatch view() const;
};

/// Counters over the scheduler's life.
struct SchedulerCounters {
  uint64_t numPreemptions = 0;
  /// Prompt tokens looked up in the prefix cache at first admission, and
  /// how many were found.
  uint64_t prefixCacheQueries = 0;
  uint64_t prefixCacheHits = 0;
};

class Scheduler {
public:
  explicit Scheduler(const EngineConfig &config);

  /// Queues a new sequence at the back of the waiting queue.
  void addWaiting(Sequence *seq);
  /// Takes a sequence out of the queues and frees its blocks at once.
  void remove(Sequence *seq);

  /// Decides the next step (allocating the blocks it needs).
  SchedulerOutput schedule();
  /// Fills the step inputs of `out`.
  void buildBatch(const SchedulerOutput &out, StepBuffers &buffers) const;
  /// Records that `out` ran: advances each sequence's computed tokens and
  /// registers its newly full blocks in the prefix cache. `accepted[i]`
  /// (when given) is how many of out.seqs[i]'s drafts were kept: the KV of
  /// the rest is discarded, blocks that hold only rejected positions go
  /// back to the pool, and a recurrent state is rolled back to the copy
  /// kept after the last accepted token.
  void finishStep(const SchedulerOutput &out, std::span<const int32_t> accepted = {});

  size_t numWaiting() const { return waiting_.size(); }
  size_t numRunning() const { return running_.size(); }
  const BlockManager &blockManager() const { return blocks_; }
  BlockManager &blockManager() { return blocks_; }
  const SchedulerCounters &counters() const { return counters_; }
  /// MTP drafting: the backend's hidden rows are those of epoch `epoch`
  /// (Sequence::mtpHiddenEpoch); a sequence chains drafts only from a row
  /// of the current epoch.
  void setHiddenEpoch(uint64_t epoch) { hiddenEpoch_ = epoch; }

private:
  bool allocateSlots(Sequence *seq, int32_t numNewTokens, const std::vector<BlockId> &hits);
  void preempt(Sequence *seq);
  /// Gives `seq`'s state slots back (when it holds them).
  void releaseStateSlot(Sequence *seq);
  void computeHashes(Sequence *seq, int32_t numFullBlocks);
  /// Drafts `seq` (decoding) may propose this step, at most `limit`.
  int32_t proposeDrafts(Sequence *seq, int32_t limit);
  uint64_t hiddenEpoch_ = 0;

  EngineConfig config_;
  BlockManager blocks_;
  std::deque<Sequence *> waiting_;
  std::vector<Sequence *> running_; // admission order
  SchedulerCounters counters_;
  /// State slots no running sequence holds (EngineConfig::numStateSlots).
  std::vector<int32_t> freeStateSlots_;
};

} // namespace volt::engine
