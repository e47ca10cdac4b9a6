//===- SamplerTest.cpp - each sampling option against hand computation ----===//
#include "runtime/engine/Sampler.h"
#include "runtime/engine/VocabMath.h"
#include "runtime/cpu/TopCandidates.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace volt::engine {
namespace {

std::vector<float> logOf(std::initializer_list<double> probs) {
  std::vector<float> out;
  for (double p : probs)
    out.push_back(float(std::log(p)));
  return out;
}

std::vector<float> probs(std::span<const float> logits, const SamplingParams &p,
                         const TokenHistory &h = {}, std::span<const int32_t> masked = {}) {
  Sampler s(int32_t(logits.size()));
  auto r = s.probabilities(logits, p, h, masked);
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? *r : std::vector<float>();
}

void expectProbs(const std::vector<float> &got, std::initializer_list<double> want) {
  ASSERT_EQ(got.size(), want.size());
  size_t i = 0;
  for (double w : want) {
    EXPECT_NEAR(got[i], w, 1e-6) << "token " << i;
    ++i;
  }
}

std::vector<float> softmax(std::vector<double> x) {
  double m = *std::max_element(x.begin(), x.end()), sum = 0;
  for (double &v : x)
    sum += (v = std::exp(v - m));
  std::vector<float> out;
  out.reserve(x.size());
  for (double v : x)
    out.push_back(float(v / sum));
  return out;
}

TEST(Sampler, GreedyTakesArgmaxAndLowestIdOnTies) {
  SamplingParams p;
  p.temperature = 0;
  Sampler s(4);
  std::vector<float> logits = {0.5f, 2.0f, 2.0f, -1.0f};
  auto r = s.sample(logits, p, {}, {}, 0.99);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->token, 1);
  expectProbs(probs(logits, p), {0, 1, 0, 0});
  // Below 1e-5 counts as greedy (vLLM's epsilon).
  p.temperature = 1e-6f;
  expectProbs(probs(logits, p), {0, 1, 0, 0});
}

TEST(Sampler, TemperatureScalesLogits) {
  // logits ln1, ln2, ln4: softmax 1/7, 2/7, 4/7; at T = 0.5 the weights
  // square: 1, 4, 16 over 21.
  std::vector<float> logits = logOf({1, 2, 4});
  SamplingParams p;
  expectProbs(probs(logits, p), {1.0 / 7, 2.0 / 7, 4.0 / 7});
  p.temperature = 0.5f;
  expectProbs(probs(logits, p), {1.0 / 21, 4.0 / 21, 16.0 / 21});
  p.temperature = 2.0f;
  double r2 = std::sqrt(2.0);
  double z = 1 + r2 + 2;
  expectProbs(probs(logits, p), {1 / z, r2 / z, 2 / z});
}

TEST(Sampler, TopKKeepsTheKLargestAndTies) {
  std::vector<float> logits = logOf({1, 2, 4});
  SamplingParams p;
  p.topK = 2;
  expectProbs(probs(logits, p), {0, 2.0 / 6, 4.0 / 6});
  p.topK = 1;
  expectProbs(probs(logits, p), {0, 0, 1});
  // Disabled: 0, -1, and k >= vocab.
  for (int32_t k : {0, -1, 3, 10}) {
    p.topK = k;
    expectProbs(probs(logits, p), {1.0 / 7, 2.0 / 7, 4.0 / 7});
  }
  std::vector<float> tied = {1, 1, 1, 0};
  p.topK = 2;
  expectProbs(probs(tied, p), {1.0 / 3, 1.0 / 3, 1.0 / 3, 0});
}

TEST(Sampler, TopPKeepsTheSmallestSetHoldingP) {
  std::vector<float> logits = logOf({0.1, 0.2, 0.3, 0.4});
  SamplingParams p;
  p.topP = 0.5f; // 0.4 alone is not enough; 0.4 + 0.3 is
  expectProbs(probs(logits, p), {0, 0, 3.0 / 7, 4.0 / 7});
  p.topP = 0.35f;
  expectProbs(probs(logits, p), {0, 0, 0, 1});
  p.topP = 0.8f;
  expectProbs(probs(logits, p), {0, 2.0 / 9, 3.0 / 9, 4.0 / 9});
  p.topP = 1.0f;
  expectProbs(probs(logits, p), {0.1, 0.2, 0.3, 0.4});
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheMostLikely) {
  std::vector<float> logits = logOf({0.1, 0.2, 0.3, 0.4});
  SamplingParams p;
  p.minP = 0.6f; // threshold 0.24
  expectProbs(probs(logits, p), {0, 0, 3.0 / 7, 4.0 / 7});
  p.minP = 0.2f; // threshold 0.08: all stay
  expectProbs(probs(logits, p), {0.1, 0.2, 0.3, 0.4});
  p.minP = 1.0f;
  expectProbs(probs(logits, p), {0, 0, 0, 1});
}

TEST(Sampler, FiltersApplyInVllmOrder) {
  // temperature, then min_p, then top_k, then top_p over what is left.
  std::vector<float> logits = logOf({0.05, 0.1, 0.15, 0.3, 0.4});
  SamplingParams p;
  p.minP = 0.3f; // drops 0.05, 0.1 (threshold 0.12)
  p.topK = 2;    // keeps 0.3, 0.4
  p.topP = 0.5f; // of 0.3/0.7 and 0.4/0.7: 0.571 alone is enough
  expectProbs(probs(logits, p), {0, 0, 0, 0, 1});
  p.topP = 0.6f; // 0.571 < 0.6: both
  expectProbs(probs(logits, p), {0, 0, 0, 3.0 / 7, 4.0 / 7});
  // Temperature comes first: at T = 0.5 weights square (0.09 vs 0.16).
  p = SamplingParams();
  p.temperature = 0.5f;
  p.minP = 0.5f; // 0.15^2 / 0.16 = 0.14, 0.3^2 / 0.4^2 = 0.5625: only two stay
  expectProbs(probs(logits, p), {0, 0, 0, 0.09 / 0.25, 0.16 / 0.25});
}

TEST(Sampler, RepetitionPenaltyOverPromptAndOutput) {
  std::vector<float> logits = {2.0f, -2.0f, 1.0f, 0.5f};
  TokenHistory h;
  std::vector<int32_t> prompt = {0, 0};
  h.setPrompt(prompt);
  h.addOutput(1);
  SamplingParams p;
  p.repetitionPenalty = 2.0f; // 2 -> 1 (divided), -2 -> -4 (multiplied)
  auto want = softmax({1.0, -4.0, 1.0, 0.5});
  auto got = probs(logits, p, h);
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6);
  p.repetitionPenalty = 0.5f; // < 1 rewards repetition
  want = softmax({4.0, -1.0, 1.0, 0.5});
  got = probs(logits, p, h);
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6);
}

TEST(Sampler, PresenceAndFrequencyPenaltiesOverOutputOnly) {
  std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f};
  TokenHistory h;
  std::vector<int32_t> prompt = {0};
  h.setPrompt(prompt); // prompt tokens are not penalised by these two
  for (int i = 0; i < 3; ++i)
    h.addOutput(2);
  h.addOutput(3);
  SamplingParams p;
  p.frequencyPenalty = 0.5f;
  p.presencePenalty = 0.25f;
  auto want = softmax({1.0, 1.0, 1.0 - 1.5 - 0.25, 1.0 - 0.5 - 0.25});
  auto got = probs(logits, p, h);
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6);
  p.frequencyPenalty = -1.0f; // negative: encourages repeats
  p.presencePenalty = 0;
  want = softmax({1.0, 1.0, 4.0, 2.0});
  got = probs(logits, p, h);
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6);
}

TEST(Sampler, LogitBiasAndMaskedTokens) {
  std::vector<float> logits = {0, 0, 0, 0};
  SamplingParams p;
  p.logitBias = {{1, float(std::log(3.0))}};
  std::vector<int32_t> masked = {3};
  expectProbs(probs(logits, p, {}, masked), {0.2, 0.6, 0.2, 0});
  p.temperature = 0;
  expectProbs(probs(logits, p, {}, masked), {0, 1, 0, 0});
}

TEST(Sampler, DrawWalksTheDistributionByTokenId) {
  // Without filters a draw u picks the token whose CDF interval holds it:
  // [0, 1/7) -> 0, [1/7, 3/7) -> 1, [3/7, 1) -> 2.
  std::vector<float> logits = logOf({1, 2, 4});
  SamplingParams p;
  Sampler s(3);
  auto at = [&](double u) { return s.sample(logits, p, {}, {}, u)->token; };
  EXPECT_EQ(at(0.0), 0);
  EXPECT_EQ(at(0.14), 0);
  EXPECT_EQ(at(0.15), 1);
  EXPECT_EQ(at(0.42), 1);
  EXPECT_EQ(at(0.43), 2);
  EXPECT_EQ(at(0.999999), 2);
  // With top_p the kept tokens are walked most likely first.
  p.topP = 0.9f;
  EXPECT_EQ(at(0.1), 2);  // [0, 4/7)
  EXPECT_EQ(at(0.6), 1);  // [4/7, 6/7)
  EXPECT_EQ(at(0.95), 0); // [6/7, 1)
}

TEST(Sampler, EmpiricalFrequenciesMatchTheDistribution) {
  std::vector<float> logits = logOf({0.1, 0.2, 0.3, 0.4});
  SamplingParams p;
  p.topP = 0.5f; // 3/7, 4/7
  Sampler s(4);
  std::vector<int> counts(4, 0);
  const int n = 20000;
  for (int i = 0; i < n; ++i)
    ++counts[s.sample(logits, p, {}, {}, uniformDraw(42, i))->token];
  EXPECT_EQ(counts[0] + counts[1], 0);
  // 5 standard deviations of a binomial(20000, 3/7): about 350.
  EXPECT_NEAR(counts[2], n * 3.0 / 7, 350);
  EXPECT_NEAR(counts[3], n * 4.0 / 7, 350);
}

TEST(Sampler, SeededStreamsAreReproducibleAndDistinct) {
  EXPECT_EQ(uniformDraw(7, 3), uniformDraw(7, 3));
  EXPECT_NE(uniformDraw(7, 3), uniformDraw(7, 4));
  EXPECT_NE(uniformDraw(7, 3), uniformDraw(8, 3));
  double lo = 1, hi = 0, sum = 0;
  for (int i = 0; i < 10000; ++i) {
    double u = uniformDraw(1, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    sum += u;
  }
  EXPECT_LT(lo, 0.001);
  EXPECT_GT(hi, 0.999);
  EXPECT_NEAR(sum / 10000, 0.5, 0.01);
}

TEST(Sampler, LogprobsAreOfTheRawLogits) {
  std::vector<float> logits = logOf({1, 2, 4});
  SamplingParams p;
  p.temperature = 0; // processing does not change logprobs
  p.repetitionPenalty = 1.5f;
  p.logprobs = 2;
  Sampler s(3);
  TokenHistory h;
  auto r = s.sample(logits, p, h, {}, 0.5);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->logprobs);
  EXPECT_EQ(r->token, 2);
  EXPECT_NEAR(r->logprobs->logprob, std::log(4.0 / 7), 1e-6);
  EXPECT_EQ(r->logprobs->rank, 1);
  ASSERT_EQ(r->logprobs->top.size(), 2u);
  EXPECT_EQ(r->logprobs->top[0].token, 2);
  EXPECT_EQ(r->logprobs->top[1].token, 1);
  EXPECT_NEAR(r->logprobs->top[1].logprob, std::log(2.0 / 7), 1e-6);
  // A token chosen against the odds reports its rank.
  p = SamplingParams();
  p.logprobs = 0;
  r = s.sample(logits, p, h, {}, 0.01);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->token, 0);
  EXPECT_EQ(r->logprobs->rank, 3);
  EXPECT_NEAR(r->logprobs->logprob, std::log(1.0 / 7), 1e-6);
  EXPECT_TRUE(r->logprobs->top.empty());
}

TEST(Sampler, NonFiniteLogitsAreAnError) {
  float nan = std::nanf("");
  float inf = std::numeric_limits<float>::infinity();
  Sampler s(3);
  SamplingParams p;
  std::vector<float> allNan = {nan, nan, nan};
  auto r = s.sample(allNan, p, {}, {}, 0.5);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("NaN"), std::string::npos);
  p.temperature = 0;
  std::vector<float> allMinusInf = {-inf, -inf, -inf};
  EXPECT_FALSE(s.sample(allMinusInf, p, {}, {}, 0.5).ok());
  // Some NaN among finite logits: the NaN tokens are never chosen.
  p = SamplingParams();
  std::vector<float> some = {nan, 0.0f, nan};
  for (double u : {0.0, 0.5, 0.99})
    EXPECT_EQ(s.sample(some, p, {}, {}, u)->token, 1);
}

// A plain implementation of the pipeline, sorting the whole vocabulary.
std::vector<double> bruteForce(const std::vector<float> &logits, const SamplingParams &p) {
  size_t v = logits.size();
  std::vector<double> x(v);
  double m = -1e300;
  for (size_t i = 0; i < v; ++i)
    m = std::max(m, x[i] = double(logits[i] / p.temperature));
  std::vector<double> w(v);
  for (size_t i = 0; i < v; ++i)
    w[i] = std::exp(x[i] - m);
  for (size_t i = 0; i < v; ++i)
    if (w[i] < p.minP)
      w[i] = 0;
  std::vector<size_t> order(v);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] > x[b]; });
  if (p.topK > 0)
    for (size_t j = p.topK; j < v; ++j)
      if (x[order[j]] < x[order[p.topK - 1]])
        w[order[j]] = 0;
  double total = std::accumulate(w.begin(), w.end(), 0.0), before = 0;
  for (size_t j = 0; j < v; ++j) {
    if (before >= p.topP * total)
      w[order[j]] = 0;
    before += w[order[j]];
  }
  total = std::accumulate(w.begin(), w.end(), 0.0);
  for (double &q : w)
    q /= total;
  return w;
}

TEST(Sampler, LargeVocabularyMatchesAFullSort) {
  const int32_t vocab = 151936;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0, 3);
  std::vector<float> logits(vocab);
  for (float &l : logits)
    l = normal(rng);
  for (int i = 0; i < 20; ++i) // a few likely tokens, as a trained model has
    logits[rng() % vocab] += 12;
  struct Case {
    float temperature, topP, minP;
    int32_t topK;
  } cases[] = {{1, 0.9f, 0, 0},           {0.7f, 0.95f, 0, 0}, {1, 1, 0.05f, 0}, {1, 0.8f, 0, 50},
               {1.3f, 0.5f, 0.01f, 1000}, {1, 0.99f, 0, 0},    {5, 0.9f, 0, 0},  {1, 1, 0, 300}};
  Sampler s(vocab);
  for (const Case &c : cases) {
    SamplingParams p;
    p.temperature = c.temperature;
    p.topP = c.topP;
    p.minP = c.minP;
    p.topK = c.topK;
    auto got = s.probabilities(logits, p, {}, {});
    ASSERT_TRUE(got.ok());
    auto want = bruteForce(logits, p);
    int32_t keptGot = 0, keptWant = 0;
    for (int32_t i = 0; i < vocab; ++i) {
      keptGot += (*got)[i] > 0;
      keptWant += want[i] > 0;
      ASSERT_NEAR((*got)[i], want[i], 1e-6)
          << "token " << i << ", T " << c.temperature << " top_p " << c.topP << " top_k " << c.topK;
    }
    EXPECT_EQ(keptGot, keptWant);
  }
}

TEST(Sampler, LargeVocabularyLogprobsMatchAFullSort) {
  // The top-N scan skips runs that cannot enter; ties (lower id first),
  // NaN and -inf must come out as a full sort says.
  const int32_t vocab = 151936;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0, 3);
  std::vector<float> logits(vocab);
  for (float &l : logits)
    l = std::round(normal(rng) * 4) / 4; // many exact ties
  for (int i = 0; i < 30; ++i)
    logits[rng() % vocab] = 9.5f;
  logits[100] = std::nanf("");
  logits[vocab - 1] = -std::numeric_limits<float>::infinity();
  std::vector<int32_t> order;
  for (int32_t i = 0; i < vocab; ++i)
    if (logits[i] == logits[i])
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  Sampler s(vocab);
  for (int32_t n : {1, 5, 20, 64}) {
    SamplingParams p;
    p.temperature = 0;
    p.logprobs = n;
    auto r = s.sample(logits, p, {}, {}, 0.5);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->logprobs->top.size(), size_t(n));
    for (int32_t j = 0; j < n; ++j)
      EXPECT_EQ(r->logprobs->top[size_t(j)].token, order[size_t(j)]) << "N " << n << " at " << j;
  }
}

TEST(SamplingParams, InvalidValuesAreNamed) {
  auto check = [](auto edit, const std::string &message) {
    SamplingParams p;
    edit(p);
    Status s = validateSamplingParams(p, 100, 20);
    ASSERT_FALSE(s.ok()) << message;
    EXPECT_EQ(s.message(), message);
  };
  check([](SamplingParams &p) { p.temperature = -0.5f; },
        "temperature: expected a non-negative number, found -0.5");
  check([](SamplingParams &p) { p.topP = 0; }, "top_p: expected a value in (0, 1], found 0");
  check([](SamplingParams &p) { p.topP = 1.5f; }, "top_p: expected a value in (0, 1], found 1.5");
  check([](SamplingParams &p) { p.topK = -2; },
        "top_k: expected -1 or 0 (disabled) or at least 1, found -2");
  check([](SamplingParams &p) { p.minP = 1.5f; }, "min_p: expected a value in [0, 1], found 1.5");
  check([](SamplingParams &p) { p.repetitionPenalty = 0; },
        "repetition_penalty: expected a value greater than 0, found 0");
  check([](SamplingParams &p) { p.presencePenalty = 2.5f; },
        "presence_penalty: expected a value in [-2, 2], found 2.5");
  check([](SamplingParams &p) { p.frequencyPenalty = -3; },
        "frequency_penalty: expected a value in [-2, 2], found -3");
  check([](SamplingParams &p) { p.maxTokens = 0; }, "max_tokens: expected at least 1, found 0");
  check([](SamplingParams &p) { p.minTokens = -1; }, "min_tokens: expected at least 0, found -1");
  check(
      [](SamplingParams &p) {
        p.maxTokens = 4;
        p.minTokens = 5;
      },
      "min_tokens: expected at most max_tokens (4), found 5");
  check(
      [](SamplingParams &p) {
        p.stopTokenIds = {3, 100};
      },
      "stop_token_ids: expected token ids in [0, 100), found 100");
  check(
      [](SamplingParams &p) {
        p.logitBias = {{-1, 1.0f}};
      },
      "logit_bias: expected token ids in [0, 100), found -1");
  check(
      [](SamplingParams &p) {
        p.stop = {"ok", ""};
      },
      "stop: expected non-empty strings, found an empty string");
  check([](SamplingParams &p) { p.logprobs = 21; },
        "logprobs: expected a value in [0, 20], found 21");
  check([](SamplingParams &p) { p.temperature = std::nanf(""); },
        "temperature: expected a non-negative number, found nan");

  SamplingParams ok;
  ok.temperature = 0;
  ok.topK = -1;
  ok.topP = 1;
  ok.minP = 1;
  ok.logprobs = 20;
  ok.stop = {"x"};
  EXPECT_TRUE(validateSamplingParams(ok, 100, 20).ok());
}

} // namespace
} // namespace volt::engine

namespace volt::engine {
namespace {

// The backend's candidates of a row (runtime/cpu/TopCandidates.h is the
// reference the GPU kernel is checked against).
struct Candidates {
  std::vector<int32_t> ids;
  std::vector<float> values, stats;
  CandidateRow row() const { return {ids, values, stats[0], stats[1], stats[2]}; }
};

Candidates candidatesOf(const std::vector<float> &logits, int32_t k, float temperature) {
  Candidates c;
  c.ids.resize(size_t(k));
  c.values.resize(size_t(k));
  c.stats.resize(3);
  cpu::ThreadPool pool(1);
  const float t = temperature;
  cpu::topCandidates({1, int64_t(logits.size()), k}, logits.data(), &t, c.ids.data(),
                     c.values.data(), c.stats.data(), pool);
  return c;
}

// The distribution the candidate path draws from, measured exactly enough
// by sweeping the draw over a fine grid: each token's share of the grid.
// Also counts the draws that needed the row.
std::vector<double> candidatePathShares(Sampler &s, const std::vector<float> &logits,
                                        const Candidates &c, const SamplingParams &p, int grid,
                                        int &rowDraws) {
  std::vector<double> shares(logits.size(), 0.0);
  rowDraws = 0;
  for (int i = 0; i < grid; ++i) {
    const double u = (i + 0.5) / grid;
    auto decided = s.sampleCandidates(c.row(), p, {}, {}, u);
    EXPECT_TRUE(decided.ok()) << decided.message();
    int32_t token;
    if (decided.ok() && decided->has_value()) {
      token = (*decided)->token;
    } else {
      ++rowDraws;
      auto r = s.sampleRow(logits, c.row(), p, {}, {}, u);
      EXPECT_TRUE(r.ok()) << r.message();
      token = r.ok() ? r->token : 0;
    }
    shares[size_t(token)] += 1.0 / grid;
  }
  return shares;
}

TEST(CandidateSampler, DrawsFromTheSameDistributionAsTheRow) {
  // A smaller vocabulary than a real model's keeps the sweep of row draws
  // quick; 64 candidates of 8,192 still leave a long tail.
  const int32_t vocab = 8192, k = 64;
  std::mt19937 rng(17);
  std::normal_distribution<float> normal(0, 2.5f);
  std::vector<float> logits(vocab);
  for (float &l : logits)
    l = normal(rng);
  for (int i = 0; i < 30; ++i) // a few likely tokens, some tied
    logits[rng() % vocab] = 9.0f + float(i % 10) * 0.5f;
  enum Rows { None, Some, All };
  struct Case {
    float temperature, topP, minP;
    int32_t topK;
    Rows rows; // how many draws must fetch the row
  } cases[] = {
      {0.7f, 0.8f, 0, 0, None},     // nucleus inside the candidates
      {1.0f, 1.0f, 0, 20, None},    // top_k inside
      {0.8f, 0.9f, 0, 40, None},    // both
      {1.0f, 1.0f, 0.05f, 0, None}, // min_p inside
      {0.5f, 1.0f, 0, 0, None},     // plain temperature, peaked: every draw lands on a candidate
      {1.2f, 1.0f, 0, 0, Some},     // plain temperature: most draws land on a candidate
      {3.0f, 1.0f, 0, 0, Some},     // plain temperature, flat: many in the tail
      {2.0f, 0.99f, 0, 0, All},     // the nucleus reaches past 64 tokens
      {1.0f, 1.0f, 0, 200, All},    // top_k beyond the candidates
      {1.0f, 1.0f, 1e-4f, 0, All},  // min_p below the last candidate
  };
  Sampler s(vocab);
  for (const Case &c : cases) {
    SamplingParams p;
    p.temperature = c.temperature;
    p.topP = c.topP;
    p.minP = c.minP;
    p.topK = c.topK;
    auto want = s.probabilities(logits, p, {}, {});
    ASSERT_TRUE(want.ok());
    const Candidates cand = candidatesOf(logits, k, c.temperature);
    const int grid = 4000;
    int rowDraws = 0;
    auto got = candidatePathShares(s, logits, cand, p, grid, rowDraws);
    const std::string what = "T " + std::to_string(c.temperature) + " top_p " +
                             std::to_string(c.topP) + " top_k " + std::to_string(c.topK) +
                             " min_p " + std::to_string(c.minP);
    if (c.rows == None)
      EXPECT_EQ(rowDraws, 0) << what;
    if (c.rows == Some) {
      EXPECT_GT(rowDraws, 0) << what;
      EXPECT_LT(rowDraws, grid) << what;
    }
    if (c.rows == All)
      EXPECT_EQ(rowDraws, grid) << what;
    // A token's share of the grid is within one step of its probability
    // (plus the backend's and the host's sums' rounding).
    double worst = 0;
    for (int32_t i = 0; i < vocab; ++i)
      worst = std::max(worst, std::fabs(got[size_t(i)] - double((*want)[size_t(i)])));
    EXPECT_LT(worst, 2.0 / grid + 1e-5) << what;
  }
}

TEST(CandidateSampler, GreedyAndLogprobsAreTheRowsOwn) {
  const int32_t vocab = 151936, k = 64;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0, 3);
  std::vector<float> logits(vocab);
  for (float &l : logits)
    l = std::round(normal(rng) * 2) / 2; // ties, the lowest id must win
  Sampler s(vocab);
  for (float t : {0.0f, 0.8f}) {
    SamplingParams p;
    p.temperature = t;
    p.topK = 10;
    p.logprobs = 5;
    const Candidates c = candidatesOf(logits, k, t);
    for (double u : {0.1, 0.6, 0.95}) {
      auto decided = s.sampleCandidates(c.row(), p, {}, {}, u);
      ASSERT_TRUE(decided.ok() && decided->has_value());
      auto full = s.sample(logits, p, {}, {}, u);
      ASSERT_TRUE(full.ok());
      if (t == 0)
        EXPECT_EQ((*decided)->token, full->token);
      // Logprobs of the token the candidates chose, against the row's.
      auto row = s.sample(logits, p, {}, {}, u);
      const SampleLogprobs &a = *(*decided)->logprobs;
      ASSERT_EQ(a.top.size(), 5u);
      for (size_t j = 0; j < 5; ++j) {
        EXPECT_EQ(a.top[j].token, row->logprobs->top[j].token);
        EXPECT_NEAR(a.top[j].logprob, row->logprobs->top[j].logprob, 1e-5);
      }
      int32_t rank = 1;
      for (float x : logits)
        rank += x > logits[size_t((*decided)->token)];
      EXPECT_EQ(a.rank, rank);
    }
  }
}

TEST(CandidateSampler, EditsAndLongLogprobsNeedTheRow) {
  const int32_t vocab = 1000, k = 16;
  std::vector<float> logits(vocab);
  for (int32_t i = 0; i < vocab; ++i)
    logits[size_t(i)] = float(i % 97) * 0.1f;
  const Candidates c = candidatesOf(logits, k, 1.0f);
  Sampler s(vocab);
  SamplingParams penalized;
  penalized.repetitionPenalty = 1.2f;
  SamplingParams biased;
  biased.logitBias = {{3, 2.0f}};
  SamplingParams manyLogprobs;
  manyLogprobs.temperature = 0;
  manyLogprobs.logprobs = 17;
  for (const SamplingParams &p : {penalized, biased, manyLogprobs}) {
    auto decided = s.sampleCandidates(c.row(), p, {}, {}, 0.5);
    ASSERT_TRUE(decided.ok());
    EXPECT_FALSE(decided->has_value());
  }
  // Masked tokens (stop tokens before min_tokens) too.
  SamplingParams plain;
  plain.temperature = 0;
  const std::vector<int32_t> masked = {96};
  auto decided = s.sampleCandidates(c.row(), plain, {}, masked, 0.5);
  ASSERT_TRUE(decided.ok());
  EXPECT_FALSE(decided->has_value());
}

TEST(CandidateSampler, ARowWithFewerLogitsThanCandidatesIsDecidedWhole) {
  // 10 finite logits, the rest NaN: every filter is decided from the 16
  // candidates (the last 6 absent).
  const int32_t vocab = 1000, k = 16;
  std::vector<float> logits(vocab, std::nanf(""));
  for (int i = 0; i < 10; ++i)
    logits[size_t(i * 37)] = float(i) * 0.3f;
  const Candidates c = candidatesOf(logits, k, 2.0f);
  EXPECT_EQ(c.ids[10], -1);
  Sampler s(vocab);
  SamplingParams p;
  p.temperature = 2.0f;
  p.topK = 12;
  p.topP = 0.999f;
  int rowDraws = 0;
  auto got = candidatePathShares(s, logits, c, p, 10000, rowDraws);
  EXPECT_EQ(rowDraws, 0);
  auto want = s.probabilities(logits, p, {}, {});
  ASSERT_TRUE(want.ok());
  for (int32_t i = 0; i < vocab; ++i)
    EXPECT_NEAR(got[size_t(i)], (*want)[size_t(i)], 2e-4) << i;
}

} // namespace
} // namespace volt::engine

namespace volt::engine {
namespace {

TEST(CandidateSampler, DecidedDrawsAreTheRowsOwnTokens) {
  // Where the candidates decide, the same draw gives sample()'s token: the
  // kept set is walked in sample()'s order (top_p by weight then id, top_k
  // and min_p by id). Plain temperature is the one documented exception.
  const int32_t vocab = 4096, k = 64;
  std::mt19937 rng(23);
  std::normal_distribution<float> normal(0, 2.0f);
  std::vector<float> logits(vocab);
  for (float &l : logits)
    l = normal(rng);
  for (int i = 0; i < 20; ++i)
    logits[rng() % vocab] = 7.0f + float(i % 5);
  Sampler s(vocab);
  struct Case {
    float temperature, topP, minP;
    int32_t topK;
  } cases[] = {
      {1.0f, 1.0f, 0, 20}, {0.8f, 1.0f, 0.05f, 0}, {0.7f, 0.8f, 0, 0}, {1.0f, 0.9f, 0.01f, 30}};
  for (const Case &c : cases) {
    SamplingParams p;
    p.temperature = c.temperature;
    p.topP = c.topP;
    p.minP = c.minP;
    p.topK = c.topK;
    const Candidates cand = candidatesOf(logits, k, c.temperature);
    int decidedDraws = 0;
    for (int i = 0; i < 2000; ++i) {
      const double u = (i + 0.5) / 2000;
      auto decided = s.sampleCandidates(cand.row(), p, {}, {}, u);
      ASSERT_TRUE(decided.ok());
      if (!decided->has_value())
        continue;
      ++decidedDraws;
      auto full = s.sample(logits, p, {}, {}, u);
      ASSERT_TRUE(full.ok());
      EXPECT_EQ((*decided)->token, full->token)
          << "draw " << u << " top_k " << c.topK << " top_p " << c.topP << " min_p " << c.minP;
    }
    EXPECT_GT(decidedDraws, 1900);
  }
}

TEST(CandidateSampler, EqualWeightsAtTheNucleusEdgeFollowTheRowsOrder) {
  // Two logits a few ulps apart round to one weight; the row orders them
  // by id, so a lower id past the candidates may come first: the
  // candidates must not decide then.
  std::vector<float> logits = {0.1f, -0.4f, std::nextafter(0.1f, 1.0f), -3.0f};
  Sampler s(4);
  SamplingParams p;
  p.temperature = 1.0f;
  p.topP = 0.5f;
  // e^(-7e-9) rounds to 1: tokens 0 and 2 weigh the same.
  ASSERT_EQ(expNonPositive(logits[0] - logits[2]), 1.0f);
  // One candidate: token 2 (the largest logit); token 0 ties its weight.
  const Candidates c = candidatesOf(logits, 1, p.temperature);
  ASSERT_EQ(c.ids[0], 2);
  for (double u : {0.1, 0.5, 0.9}) {
    auto decided = s.sampleCandidates(c.row(), p, {}, {}, u);
    ASSERT_TRUE(decided.ok());
    if (decided->has_value()) {
      auto full = s.sample(logits, p, {}, {}, u);
      EXPECT_EQ((*decided)->token, full->token) << u;
    }
  }
  // With both among the candidates (and a lighter one after them), the
  // lower id comes first, as in the row.
  const Candidates both = candidatesOf(logits, 3, p.temperature);
  auto decided = s.sampleCandidates(both.row(), p, {}, {}, 0.2);
  ASSERT_TRUE(decided.ok() && decided->has_value());
  EXPECT_EQ((*decided)->token, s.sample(logits, p, {}, {}, 0.2)->token);
}

TEST(CandidateSampler, NoFiniteLogitLeavesTheErrorToTheRow) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> logits(100, -inf);
  Sampler s(100);
  const Candidates c = candidatesOf(logits, 8, 0.0f);
  SamplingParams greedy;
  greedy.temperature = 0;
  auto decided = s.sampleCandidates(c.row(), greedy, {}, {}, 0.5);
  ASSERT_TRUE(decided.ok());
  EXPECT_FALSE(decided->has_value());
  EXPECT_FALSE(s.sampleRow(logits, c.row(), greedy, {}, {}, 0.5).ok());
  // An id outside the vocabulary (a backend bug) is an error, not a token.
  Candidates bad = candidatesOf(std::vector<float>(100, 1.0f), 8, 0.0f);
  bad.ids[0] = 100;
  EXPECT_FALSE(s.sampleCandidates(bad.row(), greedy, {}, {}, 0.5).ok());
}

} // namespace
} // namespace volt::engine
