//===- Sampler.h - next-token choice from one row of logits ----*- C++ -*-===//
//
// vLLM's sampling pipeline, per request, on the host:
//
//   logit_bias, min_tokens masking  ->  repetition / frequency / presence
//   penalties  ->  greedy argmax, or: temperature -> min_p -> top_k ->
//   top_p -> a draw from what is left
//
// Log-probabilities are those of the raw logits (vLLM's default
// "raw_logprobs"), before any of the steps above.
//
// Randomness comes from a counter-based stream: the i-th token of a request
// uses draw i of its seed, so a request's tokens depend only on its seed and
// its own logits, never on the batch it ran in or on preemption.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/SamplingParams.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace volt::engine {

/// The tokens a request's penalties look at: the distinct prompt tokens and
/// how often each token occurs in the output so far.
class TokenHistory {
public:
  void setPrompt(std::span<const int32_t> prompt);
  void addOutput(int32_t token) { ++outputCounts_[token]; }

  /// Sorted, distinct.
  const std::vector<int32_t> &promptTokens() const { return prompt_; }
  const std::unordered_map<int32_t, int32_t> &outputCounts() const { return outputCounts_; }
  bool inPrompt(int32_t token) const;

private:
  std::vector<int32_t> prompt_;
  std::unordered_map<int32_t, int32_t> outputCounts_;
};

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;
};

/// Log-probabilities reported with a sampled token.
struct SampleLogprobs {
  /// Of the chosen token.
  float logprob = 0;
  /// 1 + how many tokens have a larger raw logit.
  int32_t rank = 0;
  /// The most likely tokens, most likely first (ties: lower id first).
  std::vector<TokenLogprob> top;
};

struct SampledToken {
  int32_t token = 0;
  std::optional<SampleLogprobs> logprobs;
};

/// A uniform number in [0, 1): draw `index` of the stream `seed`.
double uniformDraw(uint64_t seed, uint64_t index);

/// One sequence's sampling candidates (StepCandidates, StepBackend.h): the
/// k largest logits, larger first, equal logits by lower id (id -1 past
/// the row's non-NaN logits), the row's largest logit, sum e^(x - M) and
/// sum e^((x - M) / T) at the request's temperature.
struct CandidateRow {
  std::span<const int32_t> ids;
  std::span<const float> values;
  float max = 0, sum1 = 0, sumT = 0;
};

/// Samples rows of logits. Holds vocabulary-sized scratch buffers, so one
/// sampler serves many requests, one row at a time (not thread-safe).
class Sampler {
public:
  explicit Sampler(int32_t vocabSize);

  /// Chooses the next token from `logits` (vocab f32). `masked` are tokens
  /// that may not be chosen (stop tokens before min_tokens); `uniform` is
  /// the request's draw for this token (unused when greedy). Fails when the
  /// logits leave nothing finite to choose from.
  Result<SampledToken> sample(std::span<const float> logits, const SamplingParams &params,
                              const TokenHistory &history, std::span<const int32_t> masked,
                              double uniform);

  /// The token `sample` would choose, from the candidates alone, when they
  /// decide it: greedy; top_k within the candidates; a min_p or top_p set
  /// inside them; plain temperature when the draw lands on a candidate;
  /// logprobs of at most k alternatives. Empty when the request needs its
  /// row (logit bias, masked tokens, penalties, or filters reaching past
  /// the candidates): then sampleRow, with the same arguments and the row.
  /// Draws walk the candidates most likely first, so for plain temperature
  /// the row's draw continues the same walk (sampleRow).
  Result<std::optional<SampledToken>>
  sampleCandidates(const CandidateRow &row, const SamplingParams &params,
                   const TokenHistory &history, std::span<const int32_t> masked, double uniform);
  /// The draw for a request sampleCandidates left undecided, from its row:
  /// sample(), except for plain temperature, whose draw walks the
  /// candidates first (most likely first) and then the other tokens by id,
  /// so that it continues the walk the candidates began.
  Result<SampledToken> sampleRow(std::span<const float> logits, const CandidateRow &row,
                                 const SamplingParams &params, const TokenHistory &history,
                                 std::span<const int32_t> masked, double uniform);

  /// The distribution `sample` draws from (one probability per token; for
  /// greedy, 1 at the argmax). For tests and tools.
  Result<std::vector<float>> probabilities(std::span<const float> logits,
                                           const SamplingParams &params,
                                           const TokenHistory &history,
                                           std::span<const int32_t> masked);

private:
  // The processed distribution: candidate ids, their unnormalised weights
  // and the weights' sum, in the order a draw walks them.
  Status prepare(std::span<const float> logits, const SamplingParams &params,
                 const TokenHistory &history, std::span<const int32_t> masked);
  /// The rest of prepare, from scratch_ (temperature applied) and its
  /// largest value.
  Status prepareWeights(const SamplingParams &params, float maxLogit);
  void keepTopP(float topP, double total);
  int32_t drawCandidates(double uniform) const;
  int32_t drawDense(double uniform) const;
  SampleLogprobs computeLogprobs(std::span<const float> logits, int32_t token, int32_t topN);

  int32_t vocabSize_;
  std::vector<float> scratch_;    // processed logits
  std::vector<float> weights_;    // exp(logit - max), vocab-sized
  std::vector<float> kthScratch_; // top_k selection
  std::vector<int32_t> cand_;     // candidate ids
  std::vector<float> candW_;      // their weights
  double candTotal_ = 0;
  bool dense_ = false; // the candidates are all of weights_, in id order
};

} // namespace volt::engine
