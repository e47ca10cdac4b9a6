//===- SamplingParams.h - per-request sampling and stop options -*- C++ -*-===//
//
// The options of one request, with vLLM's names, defaults and ranges, so
// that the OpenAI-compatible server maps request fields one to one. `n > 1`
// (several completions of one prompt) is not an option here: the caller
// submits n requests, each with its own seed (seed + i when a seed is given).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace volt::engine {

/// Temperatures below this sample greedily (vLLM's _SAMPLING_EPS).
inline constexpr float kGreedyTemperature = 1e-5f;

struct SamplingParams {
  /// Divides the logits; 0 (below 1e-5) means greedy, argmax.
  float temperature = 1.0f;
  /// Keep the most likely tokens whose probability mass reaches top_p;
  /// in (0, 1], 1 disables.
  float topP = 1.0f;
  /// Keep the top_k most likely tokens (ties at the k-th value kept too);
  /// 0 or -1 disables, as does a value >= the vocabulary size.
  int32_t topK = 0;
  /// Drop tokens less likely than min_p times the most likely one; [0, 1].
  float minP = 0.0f;
  /// Over prompt and output tokens: positive logits divided by it,
  /// negative ones multiplied; > 0, 1 disables.
  float repetitionPenalty = 1.0f;
  /// Subtracted from the logit of every token already in the output;
  /// [-2, 2].
  float presencePenalty = 0.0f;
  /// Subtracted once per occurrence in the output; [-2, 2].
  float frequencyPenalty = 0.0f;
  /// Added to the logits of the named tokens before everything else.
  std::vector<std::pair<int32_t, float>> logitBias;
  /// Makes the request's random choices reproducible: the same seed and
  /// the same logits give the same tokens, whatever else runs in the batch.
  std::optional<uint64_t> seed;

  /// Most output tokens; unset means up to max_model_len.
  std::optional<int32_t> maxTokens;
  /// Output tokens before EOS, stop_token_ids and stop strings may end
  /// generation (stop tokens are masked until then).
  int32_t minTokens = 0;
  /// Token ids that end generation (kept in the output ids, their text is not).
  std::vector<int32_t> stopTokenIds;
  /// Strings that end generation; the match is cut from the text unless
  /// include_stop_str_in_output. Needs a detokenizer.
  std::vector<std::string> stop;
  bool includeStopStrInOutput = false;
  /// Do not stop at the model's EOS tokens.
  bool ignoreEos = false;

  /// Report the chosen token's log-probability and this many most likely
  /// alternatives (0: the chosen token only); unset: no logprobs.
  std::optional<int32_t> logprobs;

  bool greedy() const { return temperature < kGreedyTemperature; }
};

/// Checks `params` with vLLM's ranges; messages name the field
/// ("top_p: expected a value in (0, 1], found 1.5").
Status validateSamplingParams(const SamplingParams &params, int32_t vocabSize, int32_t maxLogprobs);

} // namespace volt::engine
