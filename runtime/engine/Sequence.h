//===- Sequence.h - the engine's state of one request ----------*- C++ -*-===//
//
// Private to the engine: the scheduler moves sequences between the waiting
// queue and the running list, the engine appends sampled tokens.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/BlockManager.h"
#include "runtime/engine/OutputText.h"
#include "runtime/engine/Request.h"
#include "runtime/engine/Sampler.h"
#include "runtime/engine/SamplingParams.h"

#include <memory>
#include <vector>

namespace volt::engine {

struct Sequence {
  RequestId id = 0;
  /// Prompt then output tokens.
  std::vector<int32_t> tokens;
  int32_t promptLen = 0;
  /// max_tokens, resolved against max_model_len.
  int32_t maxTokens = 0;
  SamplingParams params;
  /// The seed of the request's random stream (its own, or derived).
  uint64_t seed = 0;
  /// Tokens masked until min_tokens outputs exist (stop ids, EOS).
  std::vector<int32_t> minTokensMask;
  TokenHistory history;
  OutputText text;
  std::shared_ptr<const OutputCallback> callback;

  /// Tokens whose KV is in the cache (after this sequence's last step).
  int32_t numComputed = 0;
  std::vector<BlockId> blocks;
  /// Chained hashes of the full blocks of `tokens`, computed as needed.
  std::vector<BlockHash> blockHashes;
  /// Leading blocks already registered in the prefix cache.
  int32_t numCachedBlocks = 0;
  /// -1 until first admitted.
  int32_t cachedPromptTokens = -1;
  /// The state slot held while running (-1: none, or the plan has no
  /// recurrent state).
  int32_t stateSlot = -1;
  /// With speculative decoding, num_speculative_tokens more slots held
  /// while running: a verify step copies the state after its j-th
  /// draft-carrying token to the j-th, and when drafts j + 1.. are
  /// rejected that slot becomes stateSlot (the two trade places).
  std::vector<int32_t> spareStateSlots;

  /// Draft tokens of the step being scheduled or executed (speculative
  /// decoding): they follow `tokens` at the next positions and are not
  /// part of the sequence until the target's sampling accepts them.
  std::vector<int32_t> drafts;
  /// MTP drafting: the draft program's greedy proposal for the token after
  /// `tokens` (-1: none yet, or dropped with a preemption), and the row of
  /// the backend's hidden rows its chain continues from, valid while the
  /// engine's hidden epoch is still mtpHiddenEpoch (no backend step has
  /// run since; otherwise the sequence proposes this one draft only).
  int32_t mtpDraft = -1;
  int32_t mtpHiddenRow = -1;
  uint64_t mtpHiddenEpoch = 0;

  bool running = false;
  /// In the step being executed: only the engine thread touches it.
  bool inFlight = false;
  bool cancelRequested = false;
  RequestTimes times;

  int32_t numOutput() const { return int32_t(tokens.size()) - promptLen; }
};

} // namespace volt::engine
