//===- StepBackend.h - what the engine needs from a backend ----*- C++ -*-===//
//
// The engine decides which tokens run in a step; a backend runs them. The
// arrays of a `StepBatch` are exactly the plan's `StepInput` values
// (runtime/schema/plan.fbs), so that a plan-executing backend copies them to
// its input buffers unchanged. This header does not depend on the plan: the
// engine is tested with fake backends.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <cstdint>
#include <span>

namespace volt::engine {

/// One step's inputs. T = numTokens, S = numSeqs, R = logitsRows.size()
/// (numRows()). Sequence s owns tokens [seqStarts[s], seqStarts[s + 1]) of
/// the step, which sit at consecutive positions ending at contextLens[s] -
/// 1; the tokens before them in the sequence are already in the KV cache.
/// Usually R = S, one row per sequence (its last token); a speculative
/// verify step asks for the logits of several rows of a sequence (its last
/// accepted token and each draft token), so R may exceed S.
struct StepBatch {
  int32_t numTokens = 0;
  int32_t numSeqs = 0;
  /// Row width of `blockTables`.
  int32_t maxBlocksPerSeq = 0;
  /// i32[T]: token ids (StepInput.Tokens).
  std::span<const int32_t> tokens;
  /// i32[T]: position of each token in its sequence (StepInput.Positions).
  std::span<const int32_t> positions;
  /// i32[T]: KV slot (block * block_size + offset) each token's key and
  /// value are written to (StepInput.SlotMapping).
  std::span<const int32_t> slotMapping;
  /// i32[S + 1]: first token of each sequence; the last entry is T
  /// (StepInput.SeqStarts).
  std::span<const int32_t> seqStarts;
  /// i32[S]: tokens of context after this step (StepInput.ContextLens).
  std::span<const int32_t> contextLens;
  /// i32[S * maxBlocksPerSeq]: block tables, row s for sequence s; entries
  /// past ceil(contextLens[s] / block_size) are 0 and never read
  /// (StepInput.BlockTables).
  std::span<const int32_t> blockTables;
  /// i32[R]: the token rows whose logits are wanted, ascending: each
  /// sequence's last token of the step, and in a speculative verify step
  /// also the tokens before it that carry drafts (StepInput.LogitsRows).
  std::span<const int32_t> logitsRows;
  /// i32[S]: each sequence's state slot for the plan's recurrent layers, or
  /// -1 for none (StepInput.StateSlots); may be empty for a plan without
  /// recurrent state.
  std::span<const int32_t> stateSlots;
  /// i32[T] or empty: for each token, a state slot that receives a copy of
  /// its sequence's recurrent state right after that token, or -1
  /// (StepInput.StateSnapshots). A speculative verify step keeps the state
  /// after each draft-carrying token so, and a rejected draft is rolled
  /// back by taking the kept copy's slot as the sequence's own. Slots here
  /// are no sequence's own slot and distinct.
  std::span<const int32_t> stateSnapshots;
  /// i32[T], draft steps only (runDraftStep): for each token, the row of
  /// the hidden rows the backend's last step left (the target's: one per
  /// token of that step; a draft step's likewise) that it starts from
  /// (StepInput.HiddenRows). Empty in target steps.
  std::span<const int32_t> hiddenRows;

  int32_t numRows() const { return int32_t(logitsRows.size()); }
};

/// A step's sampling candidates (templates/top_candidates.cu; the
/// reference is runtime/cpu/TopCandidates.h): for each sequence s, the k
/// largest logits of its row, larger first, equal logits by lower id (id
/// -1 and NaN past the row's non-NaN logits), and stats[s] = (M, sum
/// e^(x - M), sum e^((x - M) / T_s)) over the row's non-NaN logits, M their
/// largest, the last 1 when T_s <= 0. From them the engine samples exactly
/// whenever a request keeps only candidates; otherwise it fetches the row.
struct StepCandidates {
  int32_t k = 0;
  /// i32[S * k], f32[S * k], f32[S * 3].
  std::span<int32_t> ids;
  std::span<float> values;
  std::span<float> stats;
};

/// A model that runs steps. Implementations: the cpu and cuda backends
/// executing a plan; fakes in tests.
class StepBackend {
public:
  virtual ~StepBackend() = default;

  /// Candidates per sequence that runStepCandidates gives; 0 when the
  /// backend has no candidate path (the engine then calls runStep).
  virtual int32_t candidatesPerSeq() const { return 0; }

  /// Runs one step as runStep does, but returns each sequence's candidates
  /// (out.k = candidatesPerSeq(); spans of S * k, S * k and S * 3) instead
  /// of its row; temperatures[s] is sequence s's temperature (<= 0:
  /// greedy). The rows stay with the backend until the next step, for
  /// fetchRows. Only for steps of one row per sequence (R = S): the engine
  /// runs speculative verify steps through runStep.
  virtual Status runStepCandidates(const StepBatch &batch, std::span<const float> temperatures,
                                   StepCandidates &out) {
    return Error("this backend has no sampling candidates");
  }

  /// The rows of sequences `seqs` (indices into the last step's sequences,
  /// ascending) of the last runStepCandidates step, vocab floats each, in
  /// order, into `rows`.
  virtual Status fetchRows(std::span<const int32_t> seqs, std::span<float> rows) {
    return Error("this backend has no sampling candidates");
  }

  /// Runs one step: writes the key and value of every token of `batch` to
  /// its slot, then computes for each row r the next-token logits at token
  /// row logitsRows[r] into logits[r * vocab, (r + 1) * vocab) (f32,
  /// StepOutput.Logits). `logits` holds exactly R * vocab floats.
  ///
  /// Blocks named in a block table and not written this step hold keys and
  /// values written by earlier steps (possibly of another sequence, when a
  /// prefix-cached block is shared). A sequence's state slot holds its
  /// recurrent state after its last step, unless this step starts it at
  /// position 0 (then it starts from zeros); the engine keeps a slot for
  /// one sequence from its first step to its last (or hands it a slot that
  /// received the copy of its state through stateSnapshots). The backend must not
  /// rely on any other state kept between steps. Called from one thread at
  /// a time.
  virtual Status runStep(const StepBatch &batch, std::span<float> logits) = 0;

  /// Whether the backend runs a draft program (speculative method mtp).
  virtual bool hasDraftProgram() const { return false; }

  /// Runs one step of the draft program (docs/design/speculative.md,
  /// "MTP"): token t of `batch` is the token after position
  /// positions[t], paired with the hidden row batch.hiddenRows[t] of those
  /// the last step (runStep or runDraftStep) left; writes the draft
  /// layer's key and value of each token to its slot, the logits of each
  /// logits row into `logits` as runStep does, and its own hidden rows in
  /// place of the ones it read (one per token). stateSlots may be empty;
  /// stateSnapshots must be.
  virtual Status runDraftStep(const StepBatch &batch, std::span<float> logits) {
    return Error("this backend has no draft program");
  }
};

} // namespace volt::engine
