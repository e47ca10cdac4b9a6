//===- EngineConfig.h - limits the serving engine runs under ---*- C++ -*-===//
//
// The numbers the engine schedules against. They come from the plan
// (ModelInfo, Limits, the cache groups) so that the engine never asks the
// backend for more tokens, sequences, blocks or state slots than the
// compiled step program was sized for. Field names are vLLM's words (`max_num_seqs`, `block_size`,
// ...).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <cstdint>
#include <vector>

namespace volt::engine {

/// Most draft tokens a sequence proposes per step (vLLM's range for MTP).
inline constexpr int32_t kMaxSpeculativeTokens = 7;

/// Where draft tokens come from (EngineConfig::draftSource).
enum class DraftSource : uint8_t {
  /// N-gram prompt lookup over the sequence's own tokens.
  Ngram,
  /// The backend's draft program: the checkpoint's MTP head, run greedily
  /// on the target's hidden states (StepBackend::runDraftStep).
  Mtp,
};

/// The engine's limits and defaults. `validate` checks them together.
struct EngineConfig {
  /// Rows of the logits the backend writes per sequence.
  int32_t vocabSize = 0;
  /// Tokens per KV-cache block.
  int32_t blockSize = 16;
  /// Blocks in the KV cache (per layer; every layer has the same table).
  int32_t numKvBlocks = 0;
  /// Most sequences in one step, and most sequences admitted at once.
  int32_t maxNumSeqs = 256;
  /// Most tokens (decode tokens plus prefill chunks) in one step.
  int32_t maxNumBatchedTokens = 2048;
  /// Most tokens (prompt plus output) of one sequence.
  int32_t maxModelLen = 0;
  /// Width of a block-table row in the step inputs; 0 means
  /// ceil(max_model_len / block_size).
  int32_t maxBlocksPerSeq = 0;
  /// Reuse the KV of full blocks whose token prefix was computed before.
  bool enablePrefixCaching = false;
  /// Per-sequence state slots of the plan's recurrent layers (0: it has
  /// none). Each running sequence holds one from its admission until it
  /// finishes or is preempted (a preempted sequence is recomputed from its
  /// first token), and with speculative decoding numSpeculativeTokens more
  /// (the copies a verify step keeps to roll back to). At least
  /// max_num_seqs x (1 + numSpeculativeTokens) when set; prefix caching must be
  /// off, since a cached KV prefix does not bring the recurrent state at
  /// its end.
  int32_t numStateSlots = 0;
  /// Speculative decoding (vLLM's `speculative_config`): each decoding
  /// sequence proposes up to `numSpeculativeTokens` draft tokens, one step
  /// verifies them with its last token, and the longest prefix the target's
  /// own sampling agrees with is kept, plus one more token (docs/design/
  /// speculative.md). 0: off. The draft source is n-gram prompt lookup
  /// (`method: ngram`: the tokens that followed the most recent earlier
  /// occurrence of the sequence's longest suffix of promptLookupMin..
  /// promptLookupMax tokens) or the backend's MTP draft program (`method:
  /// mtp`: the backend must have one).
  int32_t numSpeculativeTokens = 0;
  DraftSource draftSource = DraftSource::Ngram;
  int32_t promptLookupMin = 5;
  int32_t promptLookupMax = 5;
  /// Most logits rows (StepBatch::numRows) the backend serves in one step;
  /// 0 means maxNumSeqs * (1 + numSpeculativeTokens), room for every
  /// sequence's drafts. The engine never asks for more (drafts are cut to
  /// fit); at maxNumSeqs no sequence drafts.
  int32_t maxLogitsRows = 0;
  /// Tokens that end generation unless a request sets `ignore_eos`.
  std::vector<int32_t> eosTokenIds;
  /// Largest `logprobs` (top-N alternatives) a request may ask for.
  int32_t maxLogprobs = 20;
  /// Seeds the random streams of requests that give no seed of their own.
  uint64_t seed = 0;
  /// Threads that sample a step's sequences (the engine thread included).
  /// Tokens do not depend on it.
  int32_t samplerThreads = 1;
};

/// Checks `config` and fills `maxBlocksPerSeq` when it is 0. Messages name
/// the field with its vLLM spelling ("max_num_seqs: expected at least 1,
/// found 0").
Status validateConfig(EngineConfig &config);

} // namespace volt::engine
