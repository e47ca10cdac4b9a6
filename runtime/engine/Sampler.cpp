//===- Sampler.cpp - next-token choice from one row of logits -------------===//
#include "runtime/engine/Sampler.h"
#include "runtime/engine/VocabMath.h"

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

// The k-th largest value (NaN ignored), or -inf when fewer than k values
// are not NaN. For small k, a min-heap of the k largest so far; its
// smallest value is kept in a register, so that the scan is one compare
// per value once the heap is full.
float kthLargest(std::span<const float> x, int32_t k, std::vector<float> &scratch) {
  scratch.clear();
  if (k <= 1024) {
    auto greater = std::greater<float>();
    float threshold = kNegInf;
    size_t i = 0;
    for (; i < x.size() && int32_t(scratch.size()) < k; ++i)
      if (x[i] == x[i])
        scratch.push_back(x[i]);
    if (int32_t(scratch.size()) < k)
      return kNegInf;
    std::make_heap(scratch.begin(), scratch.end(), greater);
    threshold = scratch.front();
    // Runs of 64 with nothing above the threshold (most, once the heap
    // holds likely tokens) are skipped by one vector test.
    constexpr size_t kRun = 64;
    for (; i < x.size();) {
      const size_t end = std::min(x.size(), i + kRun);
      if (!anyGreater(x.subspan(i, end - i), threshold)) {
        i = end;
        continue;
      }
      for (; i < end; ++i) {
        if (!(x[i] > threshold))
          continue;
        std::pop_heap(scratch.begin(), scratch.end(), greater);
        scratch.back() = x[i];
        std::push_heap(scratch.begin(), scratch.end(), greater);
        threshold = scratch.front();
      }
    }
    return threshold;
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
  bool penalties = params.repetitionPenalty != 1.0f || params.frequencyPenalty != 0.0f ||
                   params.presencePenalty != 0.0f;
  cand_.clear();
  candW_.clear();
  dense_ = false;
  if (params.greedy() && params.logitBias.empty() && masked.empty() && !penalties) {
    // Nothing changes the logits: no copy.
    int32_t best = argmax(logits);
    if (best < 0)
      return Error("logits: no token has a finite logit (all NaN or -inf)");
    cand_.push_back(best);
    candW_.push_back(1.0f);
    candTotal_ = 1.0;
    return Status::success();
  }

  const bool edits = !params.logitBias.empty() || !masked.empty() || penalties;
  float maxLogit = kNegInf;
  if (!params.greedy() && !edits) {
    // Nothing edits the logits: copy, temperature and maximum in one pass.
    maxLogit = divideCopyMax(logits, params.temperature, scratch_);
    return prepareWeights(params, maxLogit);
  }
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

  if (params.greedy()) {
    int32_t best = argmax(scratch_);
    if (best < 0)
      return Error("logits: no token has a finite logit (all NaN or -inf)");
    cand_.push_back(best);
    candW_.push_back(1.0f);
    candTotal_ = 1.0;
    return Status::success();
  }

  divideAll(scratch_, params.temperature);
  maxLogit = maxOf(scratch_);
  return prepareWeights(params, maxLogit);
}

Status Sampler::prepareWeights(const SamplingParams &params, float maxLogit) {
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
    constexpr int32_t kRun = 64;
    for (int32_t base = 0; base < vocabSize_; base += kRun) {
      const int32_t end = std::min(vocabSize_, base + kRun);
      if (!anyAtLeast(std::span(scratch_).subspan(base, end - base), kth))
        continue;
      for (int32_t i = base; i < end; ++i) {
        if (!(scratch_[i] >= kth))
          continue;
        float w = expNonPositive(scratch_[i] - maxLogit);
        if (w > 0 && w >= minP) {
          cand_.push_back(i);
          candW_.push_back(w);
          total += w;
        }
      }
    }
    if (params.topP < 1.0f) {
      sortDescending(cand_, candW_);
      keepTopP(params.topP, total);
    }
  } else {
    if (params.topP < 1.0f) {
      // The nucleus is a most-likely-first prefix; gather the tokens above
      // a threshold until they hold at least top_p of the mass, so that
      // only those are sorted. The first threshold's gather rides on the
      // exp pass; a flatter distribution gathers again, lower.
      float theta = 1e-3f;
      double mass = 0;
      total = expWeightsGather(scratch_, maxLogit, minP, weights_, theta, cand_, candW_, mass);
      while (!(mass >= double(params.topP) * total || theta == 0)) {
        theta = theta > 1e-30f ? theta * 1e-4f : 0.0f;
        cand_.clear();
        candW_.clear();
        mass = 0;
        for (int32_t i = 0; i < vocabSize_; ++i)
          if (weights_[i] > 0 && weights_[i] >= theta) {
            cand_.push_back(i);
            candW_.push_back(weights_[i]);
            mass += weights_[i];
          }
      }
      sortDescending(cand_, candW_);
      keepTopP(params.topP, total);
    } else {
      total = expWeights(scratch_, maxLogit, minP, weights_);
      // Everything left is a candidate: draws walk weights_ directly.
      dense_ = true;
      candTotal_ = total;
      if (!(candTotal_ > 0))
        return Error("logits: nothing left to sample from");
      return Status::success();
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
  float maxLogit = maxOf(logits);
  double lse = double(maxLogit) + std::log(expWeights(logits, maxLogit, 0.0f, weights_));

  SampleLogprobs out;
  float chosen = logits[token];
  out.logprob = float(double(chosen) - lse);
  out.rank = 1 + countGreater(logits, chosen);

  // Top N by (logit desc, id asc): a min-heap of the best so far; ids come
  // in ascending order, so a later id that only ties the heap's worst never
  // enters.
  auto better = [&](int32_t a, int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  };
  std::vector<int32_t> heap;
  float worst = kNegInf;
  constexpr int32_t kRun = 64;
  for (int32_t i = 0; i < int32_t(logits.size()) && topN > 0; ++i) {
    // Once the heap is full, a run of 64 with nothing above its worst
    // cannot change it: one vector test skips it.
    if (i % kRun == 0 && int32_t(heap.size()) == topN) {
      const int32_t end = std::min(int32_t(logits.size()), i + kRun);
      if (!anyGreater(logits.subspan(i, end - i), worst)) {
        i = end - 1;
        continue;
      }
    }
    float x = logits[i];
    if (int32_t(heap.size()) == topN && !(x > worst))
      continue;
    if (x != x)
      continue;
    if (int32_t(heap.size()) < topN) {
      heap.push_back(i);
      std::push_heap(heap.begin(), heap.end(), better);
    } else {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = i;
      std::push_heap(heap.begin(), heap.end(), better);
    }
    if (int32_t(heap.size()) == topN)
      worst = logits[heap.front()];
  }
  std::sort(heap.begin(), heap.end(), better);
  for (int32_t id : heap)
    out.top.push_back({id, float(double(logits[id]) - lse)});
  return out;
}

int32_t Sampler::drawCandidates(double uniform) const {
  double target = uniform * candTotal_;
  double cum = 0;
  for (size_t j = 0; j < cand_.size(); ++j) {
    cum += candW_[j];
    if (target < cum && candW_[j] > 0)
      return cand_[j];
  }
  return cand_.back(); // rounding left the target past the end
}

int32_t Sampler::drawDense(double uniform) const {
  // Skip whole chunks by their (vectorized) sums, then walk one chunk.
  constexpr int32_t kChunk = 1024;
  double target = uniform * candTotal_;
  double cum = 0;
  int32_t lastPositive = -1;
  for (int32_t base = 0; base < vocabSize_; base += kChunk) {
    int32_t end = std::min(vocabSize_, base + kChunk);
    double chunk = sumOf(std::span(weights_).subspan(base, end - base));
    if (chunk > 0 && cum + chunk <= target) {
      cum += chunk;
      for (int32_t i = end - 1; i >= base; --i)
        if (weights_[i] > 0) {
          lastPositive = i;
          break;
        }
      continue;
    }
    for (int32_t i = base; i < end; ++i) {
      if (weights_[i] <= 0)
        continue;
      cum += weights_[i];
      lastPositive = i;
      if (target < cum)
        return i;
    }
  }
  return lastPositive;
}

Result<SampledToken> Sampler::sample(std::span<const float> logits, const SamplingParams &params,
                                     const TokenHistory &history, std::span<const int32_t> masked,
                                     double uniform) {
  VOLT_RETURN_IF_ERROR(prepare(logits, params, history, masked));
  SampledToken out;
  out.token = dense_ ? drawDense(uniform) : drawCandidates(uniform);
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
  if (dense_) {
    for (int32_t i = 0; i < vocabSize_; ++i)
      probs[i] = float(weights_[i] / candTotal_);
    return probs;
  }
  for (size_t j = 0; j < cand_.size(); ++j)
    probs[cand_[j]] = float(candW_[j] / candTotal_);
  return probs;
}

} // namespace volt::engine
