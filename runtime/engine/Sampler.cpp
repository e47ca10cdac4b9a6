//===- Sampler.cpp - next-token choice from one row of logits -------------===//
#include "runtime/engine/Sampler.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <string>

namespace volt::engine {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// Larger weight first; equal weights: lower id first, so that the order
// (and with it the token a draw selects) never depends on the sort.
void sortDescending(std::vector<int32_t> &ids, std::vector<float> &weights) {
  std::vector<std::pair<float, int32_t>> items(ids.size());
  for (size_t i = 0; i < ids.size(); ++i)
    items[i] = {weights[i], ids[i]};
  std::sort(items.begin(), items.end(), [](const auto &a, const auto &b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (size_t i = 0; i < items.size(); ++i) {
    weights[i] = items[i].first;
    ids[i] = items[i].second;
  }
}

// The k-th largest value (NaN counts as -inf), or -inf when fewer than k
// values are finite-or-infinite.
float kthLargest(std::span<const float> x, int32_t k, std::vector<float> &scratch) {
  scratch.clear();
  if (k <= 256) {
    auto greater = std::greater<float>();
    for (float v : x) {
      if (v != v)
        continue;
      if (int32_t(scratch.size()) < k) {
        scratch.push_back(v);
        std::push_heap(scratch.begin(), scratch.end(), greater);
      } else if (v > scratch.front()) {
        std::pop_heap(scratch.begin(), scratch.end(), greater);
        scratch.back() = v;
        std::push_heap(scratch.begin(), scratch.end(), greater);
      }
    }
    return int32_t(scratch.size()) < k ? kNegInf : scratch.front();
  }
  for (float v : x)
    if (v == v)
      scratch.push_back(v);
  if (int32_t(scratch.size()) < k)
    return kNegInf;
  std::nth_element(scratch.begin(), scratch.begin() + (k - 1), scratch.end(),
                   std::greater<float>());
  return scratch[k - 1];
}

} // namespace

void TokenHistory::setPrompt(std::span<const int32_t> prompt) {
  prompt_.assign(prompt.begin(), prompt.end());
  std::sort(prompt_.begin(), prompt_.end());
  prompt_.erase(std::unique(prompt_.begin(), prompt_.end()), prompt_.end());
}

bool TokenHistory::inPrompt(int32_t token) const {
  return std::binary_search(prompt_.begin(), prompt_.end(), token);
}

double uniformDraw(uint64_t seed, uint64_t index) {
  uint64_t x = mix64(mix64(seed ^ 0x243f6a8885a308d3ULL) + index * 0x9e3779b97f4a7c15ULL);
  return double(x >> 11) * 0x1.0p-53;
}

Sampler::Sampler(int32_t vocabSize)
    : vocabSize_(vocabSize), scratch_(vocabSize), weights_(vocabSize) {}

Status Sampler::prepare(std::span<const float> logits, const SamplingParams &params,
                        const TokenHistory &history, std::span<const int32_t> masked) {
  assert(int32_t(logits.size()) == vocabSize_);
  std::copy(logits.begin(), logits.end(), scratch_.begin());
  for (const auto &[id, bias] : params.logitBias)
    scratch_[id] += bias;
  for (int32_t id : masked)
    scratch_[id] = kNegInf;

  if (params.repetitionPenalty != 1.0f) {
    float rep = params.repetitionPenalty;
    auto penalize = [&](int32_t t) {
      float &x = scratch_[t];
      x = x > 0 ? x / rep : x * rep;
    };
    for (int32_t t : history.promptTokens())
      penalize(t);
    for (const auto &[t, count] : history.outputCounts())
      if (!history.inPrompt(t))
        penalize(t);
  }
  if (params.frequencyPenalty != 0.0f || params.presencePenalty != 0.0f) {
    for (const auto &[t, count] : history.outputCounts()) {
      scratch_[t] -= params.frequencyPenalty * float(count);
      scratch_[t] -= params.presencePenalty;
    }
  }

  cand_.clear();
  candW_.clear();
  if (params.greedy()) {
    int32_t best = -1;
    float bestValue = kNegInf;
    for (int32_t i = 0; i < vocabSize_; ++i)
      if (scratch_[i] > bestValue) {
        bestValue = scratch_[i];
        best = i;
      }
    if (best < 0)
      return Error("logits: no token has a finite logit (all NaN or -inf)");
    cand_.push_back(best);
    candW_.push_back(1.0f);
    candTotal_ = 1.0;
    return Status::success();
  }

  float maxLogit = kNegInf;
  for (float &x : scratch_) {
    x /= params.temperature;
    if (x > maxLogit)
      maxLogit = x;
  }
  if (!(maxLogit > kNegInf) || std::isinf(maxLogit))
    return Error("logits: no finite maximum to sample from (NaN or infinite logits)");

  // min_p compares each probability with min_p times the largest; in
  // weights relative to the largest (which is 1) that is `w >= min_p`.
  float minP = params.minP;
  bool topKOn = params.topK > 0 && params.topK < vocabSize_;
  double total = 0;
  if (topKOn) {
    // top_k and min_p commute (both keep a top set by logit), so only the
    // top k need weights.
    float kth = kthLargest(scratch_, params.topK, kthScratch_);
    for (int32_t i = 0; i < vocabSize_; ++i) {
      if (!(scratch_[i] >= kth))
        continue;
      float w = std::exp(scratch_[i] - maxLogit);
      if (w > 0 && w >= minP) {
        cand_.push_back(i);
        candW_.push_back(w);
        total += w;
      }
    }
    if (params.topP < 1.0f) {
      sortDescending(cand_, candW_);
      keepTopP(params.topP, total);
    }
  } else {
    for (int32_t i = 0; i < vocabSize_; ++i) {
      float x = scratch_[i];
      float w = x > kNegInf ? std::exp(x - maxLogit) : 0.0f;
      if (w < minP)
        w = 0;
      weights_[i] = w;
      total += w;
    }
    if (params.topP < 1.0f) {
      // The nucleus is a most-likely-first prefix; gather the tokens above
      // a threshold until they hold at least top_p of the mass, so that
      // only those are sorted.
      float theta = 1e-3f;
      for (;;) {
        cand_.clear();
        candW_.clear();
        double mass = 0;
        for (int32_t i = 0; i < vocabSize_; ++i)
          if (weights_[i] > 0 && weights_[i] >= theta) {
            cand_.push_back(i);
            candW_.push_back(weights_[i]);
            mass += weights_[i];
          }
        if (mass >= double(params.topP) * total || theta == 0)
          break;
        theta = theta > 1e-30f ? theta * 1e-4f : 0.0f;
      }
      sortDescending(cand_, candW_);
      keepTopP(params.topP, total);
    } else {
      for (int32_t i = 0; i < vocabSize_; ++i)
        if (weights_[i] > 0) {
          cand_.push_back(i);
          candW_.push_back(weights_[i]);
        }
    }
  }
  candTotal_ = 0;
  for (float w : candW_)
    candTotal_ += w;
  if (cand_.empty() || !(candTotal_ > 0))
    return Error("logits: nothing left to sample from");
  return Status::success();
}

void Sampler::keepTopP(float topP, double total) {
  // Keep tokens while the mass before them is below top_p: the smallest
  // most-likely-first set holding top_p (vLLM drops, from the least likely
  // up, tokens whose cumulative mass is at most 1 - top_p; the same set).
  double bound = double(topP) * total;
  double before = 0;
  size_t keep = 0;
  while (keep < cand_.size() && before < bound)
    before += candW_[keep++];
  cand_.resize(std::max<size_t>(keep, 1));
  candW_.resize(cand_.size());
}

SampleLogprobs Sampler::computeLogprobs(std::span<const float> logits, int32_t token,
                                        int32_t topN) {
  float maxLogit = kNegInf;
  for (float x : logits)
    if (x > maxLogit)
      maxLogit = x;
  double sum = 0;
  for (float x : logits)
    if (x > kNegInf)
      sum += std::exp(double(x) - double(maxLogit));
  double lse = double(maxLogit) + std::log(sum);

  SampleLogprobs out;
  float chosen = logits[token];
  out.logprob = float(double(chosen) - lse);
  out.rank = 1;
  for (float x : logits)
    out.rank += x > chosen;

  // Top N by (logit desc, id asc), with a min-heap of the best so far.
  auto better = [&](int32_t a, int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  };
  std::vector<int32_t> heap;
  for (int32_t i = 0; i < int32_t(logits.size()) && topN > 0; ++i) {
    if (logits[i] != logits[i])
      continue;
    if (int32_t(heap.size()) < topN) {
      heap.push_back(i);
      std::push_heap(heap.begin(), heap.end(), better);
    } else if (better(i, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = i;
      std::push_heap(heap.begin(), heap.end(), better);
    }
  }
  std::sort(heap.begin(), heap.end(), better);
  for (int32_t id : heap)
    out.top.push_back({id, float(double(logits[id]) - lse)});
  return out;
}

Result<SampledToken> Sampler::sample(std::span<const float> logits, const SamplingParams &params,
                                     const TokenHistory &history, std::span<const int32_t> masked,
                                     double uniform) {
  VOLT_RETURN_IF_ERROR(prepare(logits, params, history, masked));
  SampledToken out;
  out.token = cand_.back();
  double target = uniform * candTotal_;
  double cum = 0;
  for (size_t j = 0; j < cand_.size(); ++j) {
    cum += candW_[j];
    if (target < cum && candW_[j] > 0) {
      out.token = cand_[j];
      break;
    }
  }
  if (params.logprobs)
    out.logprobs = computeLogprobs(logits, out.token, *params.logprobs);
  return out;
}

Result<std::vector<float>> Sampler::probabilities(std::span<const float> logits,
                                                  const SamplingParams &params,
                                                  const TokenHistory &history,
                                                  std::span<const int32_t> masked) {
  VOLT_RETURN_IF_ERROR(prepare(logits, params, history, masked));
  std::vector<float> probs(vocabSize_, 0.0f);
  for (size_t j = 0; j < cand_.size(); ++j)
    probs[cand_[j]] = float(candW_[j] / candTotal_);
  return probs;
}

} // namespace volt::engine
