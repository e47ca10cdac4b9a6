//===- CandidateSampler.cpp - next-token choice from a row's candidates ---===//
//
// Sampler::sampleCandidates decides a token from the k largest logits of a
// row and its normalisers (StepCandidates) whenever they determine the
// answer: the weights are those sample() computes, e^(x/T - M/T), from the
// same floats, and the kept set is walked in sample()'s order (top_p: by
// weight, then id; top_k, min_p: by id), so that the same draw gives
// sample()'s token (up to the rounding of the backend's normaliser where
// the candidates do not hold the whole kept set). Whether a request needs
// its row never depends on its draw, except for plain temperature, whose
// draw may land past the candidates: sampleRow then continues the same
// walk (most likely first, then by id) over the row, so that every token
// keeps its probability; that walk is not sample()'s, so for plain
// temperature a seed gives other tokens than on a backend without
// candidates (from the same distribution).
//
//===----------------------------------------------------------------------===//
#include "runtime/engine/Sampler.h"
#include "runtime/engine/VocabMath.h"

#include <algorithm>
#include <cmath>

namespace volt::engine {

namespace {

bool editsLogits(const SamplingParams &p, std::span<const int32_t> masked) {
  return !p.logitBias.empty() || !masked.empty() || p.repetitionPenalty != 1.0f ||
         p.frequencyPenalty != 0.0f || p.presencePenalty != 0.0f;
}

/// Temperature alone: no top_k, top_p or min_p.
bool plainTemperature(const SamplingParams &p, int32_t vocab) {
  return !(p.topK > 0 && p.topK < vocab) && p.topP >= 1.0f && p.minP <= 0.0f;
}

/// The candidates that exist (ids before the first -1).
size_t validCount(const CandidateRow &row) {
  size_t n = 0;
  while (n < row.ids.size() && row.ids[n] >= 0)
    ++n;
  return n;
}

/// Logprobs of candidate `chosen`, from the row's normaliser: the top N are
/// the first N candidates (their order is computeLogprobs'), and every
/// logit above a candidate's is a candidate.
SampleLogprobs candidateLogprobs(const CandidateRow &row, size_t chosen, int32_t topN) {
  const double lse = double(row.max) + std::log(double(row.sum1));
  SampleLogprobs out;
  out.logprob = float(double(row.values[chosen]) - lse);
  out.rank = 1;
  for (size_t j = 0; j < chosen; ++j)
    out.rank += row.values[j] > row.values[chosen];
  for (int32_t j = 0; j < topN; ++j)
    out.top.push_back({row.ids[size_t(j)], float(double(row.values[size_t(j)]) - lse)});
  return out;
}

/// Reorders the kept candidates (ids, weights and their candidate
/// positions together) by `before`.
template <typename Before>
void orderKept(std::vector<int32_t> &ids, std::vector<float> &weights, std::vector<size_t> &at,
               Before before) {
  struct Kept {
    int32_t id;
    float weight;
    size_t at;
  };
  std::vector<Kept> kept(ids.size());
  for (size_t j = 0; j < ids.size(); ++j)
    kept[j] = {ids[j], weights[j], at[j]};
  std::sort(kept.begin(), kept.end(), before);
  for (size_t j = 0; j < kept.size(); ++j) {
    ids[j] = kept[j].id;
    weights[j] = kept[j].weight;
    at[j] = kept[j].at;
  }
}

} // namespace

Result<std::optional<SampledToken>> Sampler::sampleCandidates(const CandidateRow &row,
                                                              const SamplingParams &params,
                                                              const TokenHistory &history,
                                                              std::span<const int32_t> masked,
                                                              double uniform) {
  const size_t k = row.ids.size(), n = validCount(row);
  if (editsLogits(params, masked) || n == 0 || (params.logprobs && size_t(*params.logprobs) > n) ||
      !(row.values[0] > -INFINITY))
    return std::optional<SampledToken>(); // sample() decides, or reports the row's error
  for (size_t j = 0; j < n; ++j)
    if (row.ids[j] >= vocabSize_)
      return Error("sampling candidates: id " + std::to_string(row.ids[j]) +
                   " is not in the vocabulary");
  // Every non-NaN logit of the row is a candidate.
  const bool whole = n < k;
  size_t chosen = 0;
  if (!params.greedy()) {
    const float t = params.temperature;
    const float maxLogit = row.values[0] / t;
    if (!std::isfinite(maxLogit))
      return std::optional<SampledToken>(); // sample() reports it from the row
    std::vector<float> scaled(n);
    for (size_t j = 0; j < n; ++j)
      scaled[j] = row.values[j] / t;
    // top_k keeps every token at least the k-th largest, ties included.
    size_t keep = n;
    const bool topKOn = params.topK > 0 && params.topK < vocabSize_;
    if (topKOn && size_t(params.topK) <= n) {
      const float kth = scaled[size_t(params.topK) - 1];
      keep = size_t(params.topK);
      while (keep < n && scaled[keep] >= kth)
        ++keep;
      if (keep == n && !whole)
        return std::optional<SampledToken>(); // ties may go on past the candidates
    } else if (topKOn && !whole) {
      return std::optional<SampledToken>();
    }
    cand_.clear();
    candW_.clear();
    std::vector<size_t> at;
    for (size_t j = 0; j < keep; ++j) {
      const float w = expNonPositive(scaled[j] - maxLogit);
      if (w > 0 && w >= params.minP) {
        cand_.push_back(row.ids[j]);
        candW_.push_back(w);
        at.push_back(j);
      }
    }
    // min_p alone decides here when the last candidate falls below it (so
    // does every other token, being smaller).
    const bool minPCuts = params.minP > 0 && expNonPositive(scaled[n - 1] - maxLogit) < params.minP;
    const bool closed = whole || (topKOn && size_t(params.topK) <= n) || minPCuts;
    if (params.minP > 0 && !closed)
      return std::optional<SampledToken>();
    if (cand_.empty())
      return std::optional<SampledToken>();
    double kept = 0;
    for (float w : candW_)
      kept += w;
    if (params.topP < 1.0f) {
      // The nucleus, in sample()'s order: larger weight first, equal
      // weights by lower id (distinct logits may round to one weight),
      // against the mass of what top_k and min_p kept (the whole row's,
      // from the backend, when they kept all).
      orderKept(cand_, candW_, at, [](const auto &a, const auto &b) {
        return a.weight != b.weight ? a.weight > b.weight : a.id < b.id;
      });
      const double total = closed ? kept : double(row.sumT);
      const double bound = double(params.topP) * total;
      double before = 0;
      size_t nucleus = 0;
      while (nucleus < cand_.size() && before < bound)
        before += candW_[nucleus++];
      if (before < bound && !closed)
        return std::optional<SampledToken>(); // the nucleus reaches past the candidates
      // A token past the candidates weighs at most the last candidate's
      // weight; at that weight it may come first (a lower id).
      if (!closed &&
          candW_[std::max<size_t>(nucleus, 1) - 1] <= expNonPositive(scaled[n - 1] - maxLogit))
        return std::optional<SampledToken>();
      cand_.resize(std::max<size_t>(nucleus, 1));
      candW_.resize(cand_.size());
      at.resize(cand_.size());
      candTotal_ = 0;
      for (float w : candW_)
        candTotal_ += w;
    } else if (closed) {
      // sample() draws top_k's and min_p's sets in id order: so do these.
      orderKept(cand_, candW_, at, [](const auto &a, const auto &b) { return a.id < b.id; });
      candTotal_ = 0;
      for (float w : candW_)
        candTotal_ += w;
    } else {
      // Plain temperature over the whole row: the draw walks the candidates
      // first; past them, it needs the row (sampleRow continues the walk).
      const double target = uniform * double(row.sumT);
      double cum = 0;
      for (size_t j = 0; j < cand_.size(); ++j) {
        cum += candW_[j];
        if (target < cum) {
          SampledToken out;
          out.token = cand_[j];
          if (params.logprobs)
            out.logprobs = candidateLogprobs(row, at[j], *params.logprobs);
          return std::optional<SampledToken>(std::move(out));
        }
      }
      return std::optional<SampledToken>();
    }
    const int32_t token = drawCandidates(uniform);
    for (size_t j = 0; j < cand_.size(); ++j)
      if (cand_[j] == token)
        chosen = at[j];
  }
  SampledToken out;
  out.token = row.ids[chosen];
  if (params.logprobs)
    out.logprobs = candidateLogprobs(row, chosen, *params.logprobs);
  (void)history;
  return std::optional<SampledToken>(std::move(out));
}

Result<SampledToken> Sampler::sampleRow(std::span<const float> logits, const CandidateRow &row,
                                        const SamplingParams &params, const TokenHistory &history,
                                        std::span<const int32_t> masked, double uniform) {
  if (params.greedy() || editsLogits(params, masked) || !plainTemperature(params, vocabSize_))
    return sample(logits, params, history, masked, uniform);
  // Plain temperature: the candidates' walk (most likely first), then the
  // other tokens by id, over this row's own weights.
  const float maxLogit = divideCopyMax(logits, params.temperature, scratch_);
  if (!(maxLogit > -INFINITY) || std::isinf(maxLogit))
    return Error("logits: no finite maximum to sample from (NaN or infinite logits)");
  const double total = expWeights(scratch_, maxLogit, 0.0f, weights_);
  if (!(total > 0))
    return Error("logits: nothing left to sample from");
  const double target = uniform * total;
  double cum = 0;
  int32_t token = -1, last = -1;
  const size_t n = validCount(row);
  for (size_t j = 0; j < n && token < 0; ++j) {
    const int32_t id = row.ids[j];
    if (id >= vocabSize_)
      return Error("sampling candidates: id " + std::to_string(id) + " is not in the vocabulary");
    const float w = weights_[size_t(id)];
    weights_[size_t(id)] = 0; // walked; the rest of the walk skips it
    if (w > 0) {
      cum += w;
      last = id;
      if (target < cum)
        token = id;
    }
  }
  for (int32_t i = 0; i < vocabSize_ && token < 0; ++i) {
    const float w = weights_[size_t(i)];
    if (w > 0) {
      cum += w;
      last = i;
      if (target < cum)
        token = i;
    }
  }
  SampledToken out;
  out.token = token >= 0 ? token : last; // rounding left the target past the end
  if (params.logprobs)
    out.logprobs = computeLogprobs(logits, out.token, *params.logprobs);
  return out;
}

} // namespace volt::engine
