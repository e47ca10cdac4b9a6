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

/// One step's inputs. T = numTokens, S = numSeqs. Sequence s owns tokens
/// [seqStarts[s], seqStarts[s + 1]) of the step, which sit at consecutive
/// positions ending at contextLens[s] - 1; the tokens before them in the
/// sequence are already in the KV cache.
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
  /// i32[S]: the token row whose logits each sequence needs, its last token
  /// of the step (StepInput.LogitsRows).
  std::span<const int32_t> logitsRows;
};

/// A model that runs steps. Implementations: the cpu and cuda backends
/// executing a plan; fakes in tests.
class StepBackend {
public:
  virtual ~StepBackend() = default;

  /// Runs one step: writes the key and value of every token of `batch` to
  /// its slot, then computes for each sequence s the next-token logits at
  /// token row logitsRows[s] into logits[s * vocab, (s + 1) * vocab) (f32,
  /// StepOutput.Logits). `logits` holds exactly S * vocab floats.
  ///
  /// Blocks named in a block table and not written this step hold keys and
  /// values written by earlier steps (possibly of another sequence, when a
  /// prefix-cached block is shared); the backend must not rely on any other
  /// state kept between steps. Called from one thread at a time.
  virtual Status runStep(const StepBatch &batch, std::span<float> logits) = 0;
};

} // namespace volt::engine
