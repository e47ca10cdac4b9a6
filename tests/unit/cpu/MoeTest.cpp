// The MoE ops one by one, and the whole block (router -> align -> gate|up
// -> SiluMul -> down -> combine, with SiluMul separate or fused into the
// gate|up GEMM) against a direct per-token, per-expert double computation
// with the error bound of every FP16 rounding point on the way.
#include "runtime/cpu/Moe.h"
#include "runtime/cpu/Activation.h"
#include "runtime/cpu/Linear.h"

#include "TestUtil.h"

#include <algorithm>
#include <numeric>

namespace volt::cpu {
namespace {

using namespace test;

TEST(MoeRouter, SoftmaxTopKAndRenormalisation) {
  std::mt19937 rng(80);
  ThreadPool pool(2);
  for (int64_t experts : {4, 60, 128}) {
    for (int64_t k : {1, 2, 8}) {
      if (k > experts)
        continue;
      for (bool renormalize : {false, true}) {
        const int64_t tokens = 11;
        std::vector<float> logits(static_cast<size_t>(tokens * experts));
        for (auto &l : logits)
          l = std::normal_distribution<float>(0.0f, 2.0f)(rng);
        std::vector<int32_t> ids(static_cast<size_t>(tokens * k));
        std::vector<float> weights(ids.size());
        moeRouter({tokens, experts, k, renormalize}, logits.data(), ids.data(), weights.data(),
                  pool);
        for (int64_t t = 0; t < tokens; ++t) {
          std::vector<double> p(static_cast<size_t>(experts));
          double m =
              *std::max_element(logits.begin() + t * experts, logits.begin() + (t + 1) * experts);
          double sum = 0;
          for (int64_t e = 0; e < experts; ++e)
            sum += p[static_cast<size_t>(e)] =
                std::exp(logits[static_cast<size_t>(t * experts + e)] - m);
          std::vector<int32_t> rank(static_cast<size_t>(experts));
          std::iota(rank.begin(), rank.end(), 0);
          std::stable_sort(rank.begin(), rank.end(), [&](int32_t a, int32_t b) {
            return p[static_cast<size_t>(a)] > p[static_cast<size_t>(b)];
          });
          double selected = 0;
          for (int64_t s = 0; s < k; ++s)
            selected += p[static_cast<size_t>(rank[static_cast<size_t>(s)])] / sum;
          for (int64_t s = 0; s < k; ++s) {
            int32_t e = rank[static_cast<size_t>(s)];
            ASSERT_EQ(ids[static_cast<size_t>(t * k + s)], e) << "token " << t << " slot " << s;
            double want = p[static_cast<size_t>(e)] / sum / (renormalize ? selected : 1.0);
            // exp, the E-term sum, the quotient (and k-term sum, quotient).
            double bound = (static_cast<double>(experts + k) + 8) * kU32 * want;
            ASSERT_NEAR(weights[static_cast<size_t>(t * k + s)], want, bound)
                << "token " << t << " slot " << s;
          }
        }
      }
    }
  }
}

TEST(MoeRouter, TiesGoToTheLowerExpert) {
  ThreadPool pool(1);
  std::vector<float> logits = {1.0f, 3.0f, 3.0f, 0.5f, 3.0f, 1.0f};
  std::vector<int32_t> ids(4);
  std::vector<float> weights(4);
  moeRouter({1, 6, 4, true}, logits.data(), ids.data(), weights.data(), pool);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 2, 4, 0}));
  EXPECT_EQ(weights[0], weights[1]);
  EXPECT_EQ(weights[1], weights[2]);
}

TEST(MoeAlign, GroupsPairsByExpertStably) {
  std::mt19937 rng(81);
  for (int64_t experts : {1, 5, 128}) {
    const int64_t tokens = 33, k = 3, pairs = tokens * k;
    std::vector<int32_t> ids(static_cast<size_t>(pairs));
    for (auto &id : ids)
      id = static_cast<int32_t>(rng() % static_cast<uint32_t>(experts));
    std::vector<int32_t> order(ids.size()), starts(static_cast<size_t>(experts + 1));
    moeAlign({tokens, k, experts}, ids.data(), order.data(), starts.data());
    EXPECT_EQ(starts[0], 0);
    EXPECT_EQ(starts[static_cast<size_t>(experts)], pairs);
    std::vector<int> seen(ids.size(), 0);
    for (int64_t e = 0; e < experts; ++e) {
      int32_t begin = starts[static_cast<size_t>(e)], end = starts[static_cast<size_t>(e + 1)];
      ASSERT_LE(begin, end);
      EXPECT_EQ(end - begin, std::count(ids.begin(), ids.end(), static_cast<int32_t>(e)));
      for (int32_t j = begin; j < end; ++j) {
        int32_t p = order[static_cast<size_t>(j)];
        ++seen[static_cast<size_t>(p)];
        EXPECT_EQ(ids[static_cast<size_t>(p)], e);
        if (j > begin) {
          EXPECT_LT(order[static_cast<size_t>(j - 1)], p) << "not stable";
        }
      }
    }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
  }
}

TEST(MoeCombine, WeightedSumOfEachTokensPairs) {
  std::mt19937 rng(82);
  ThreadPool pool(2);
  for (bool accumulate : {false, true}) {
    const int64_t tokens = 6, k = 3, dim = 29, pairs = tokens * k;
    std::vector<int32_t> order(static_cast<size_t>(pairs));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<uint16_t> in = randomHalf(static_cast<size_t>(pairs * dim), rng);
    std::vector<float> weights(static_cast<size_t>(pairs));
    for (auto &w : weights)
      w = std::uniform_real_distribution<float>(0.0f, 1.0f)(rng);
    std::vector<uint16_t> out = randomHalf(static_cast<size_t>(tokens * dim), rng), before = out;
    moeCombine({tokens, k, dim, accumulate}, in.data(), order.data(), weights.data(), out.data(),
               pool);
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t i = 0; i < dim; ++i) {
        double sum = accumulate ? h2d(before[static_cast<size_t>(t * dim + i)]) : 0.0, abs = 0;
        for (int64_t j = 0; j < pairs; ++j) {
          int32_t p = order[static_cast<size_t>(j)];
          if (p / k != t)
            continue;
          double term = weights[static_cast<size_t>(p)] * h2d(in[static_cast<size_t>(j * dim + i)]);
          sum += term;
          abs += std::fabs(term);
        }
        double bound = dotBound(k + 1, abs + std::fabs(sum));
        ASSERT_NEAR(h2d(out[static_cast<size_t>(t * dim + i)]), sum, f16Tolerance(sum, bound))
            << "token " << t << " i " << i;
      }
    }
  }
}

/// One expert block's weights: gate|up [E * 2I, H] (two parts per expert),
/// down [E * H, I].
struct ExpertWeights {
  TestNvfp4 gateUp, down;
};

ExpertWeights makeExperts(int64_t experts, int64_t hidden, int64_t inter, std::mt19937 &rng) {
  ExpertWeights w;
  for (int64_t e = 0; e < experts; ++e) {
    appendNvfp4(w.gateUp, {static_cast<uint32_t>(inter), static_cast<uint32_t>(inter)}, hidden,
                rng);
    appendNvfp4(w.down, {static_cast<uint32_t>(hidden)}, inter, rng);
  }
  return w;
}

TEST(MoeGroupedQLinear, EachRowIsTheExpertsQLinear) {
  std::mt19937 rng(83);
  ThreadPool pool(3);
  const int64_t tokens = 7, k = 2, experts = 5, hidden = 32, inter = 48;
  ExpertWeights w = makeExperts(experts, hidden, inter, rng);
  std::vector<int32_t> ids(static_cast<size_t>(tokens * k));
  for (auto &id : ids)
    id = static_cast<int32_t>(rng() % 4); // expert 4 gets nothing
  std::vector<int32_t> order(ids.size()), starts(static_cast<size_t>(experts + 1));
  moeAlign({tokens, k, experts}, ids.data(), order.data(), starts.data());
  std::vector<uint16_t> x = randomHalf(static_cast<size_t>(tokens * hidden), rng);
  std::vector<uint32_t> parts = {static_cast<uint32_t>(inter), static_cast<uint32_t>(inter)};

  // Each numerics: the grouped rows equal that numerics' qlinear bit for
  // bit (Fast sums in its own order, the same for any token count).
  for (Numerics numerics : {Numerics::Reference, Numerics::Fast})
  for (Epilogue epilogue : {Epilogue::None, Epilogue::SiluMul}) {
    const int64_t width = epilogue == Epilogue::SiluMul ? inter : 2 * inter;
    std::vector<uint16_t> out(static_cast<size_t>(tokens * k * width), 0xFFFF);
    MoeGroupedQLinearParams params;
    params.tokens = tokens;
    params.topK = k;
    params.numExperts = experts;
    params.inFeatures = hidden;
    params.outFeatures = 2 * inter;
    params.partRows = parts;
    params.globalScales = w.gateUp.globalScales;
    params.gatherTokens = true;
    params.epilogue = epilogue;
    params.numerics = numerics;
    moeGroupedQLinear(params, x.data(), order.data(), starts.data(), w.gateUp.view(), out.data(),
                      pool);
    for (int64_t j = 0; j < tokens * k; ++j) {
      int32_t pair = order[static_cast<size_t>(j)];
      int64_t e = ids[static_cast<size_t>(pair)];
      QLinearParams single;
      single.tokens = 1;
      single.inFeatures = hidden;
      single.outFeatures = 2 * inter;
      single.partRows = parts;
      single.globalScales = {w.gateUp.globalScales.data() + 2 * e, 2};
      single.epilogue = epilogue;
      single.numerics = numerics;
      Nvfp4Matrix m{w.gateUp.packed.data() + e * 2 * inter * hidden / 2,
                    w.gateUp.scales.data() + e * 2 * inter * hidden / 16, 2 * inter, hidden};
      std::vector<uint16_t> want(static_cast<size_t>(width));
      qlinear(single, x.data() + (pair / k) * hidden, m, nullptr, want.data(), pool);
      ASSERT_TRUE(std::equal(want.begin(), want.end(), out.begin() + j * width))
          << "row " << j << " (pair " << pair << ", expert " << e << ", numerics "
          << static_cast<int>(numerics) << ")";
    }
  }
}

/// Bounds through the whole block; see the file comment.
TEST(MoeBlock, PipelineMatchesPerTokenPerExpertDouble) {
  std::mt19937 rng(84);
  ThreadPool pool(2);
  const int64_t tokens = 9, experts = 6, k = 2, hidden = 64, inter = 48;
  const int64_t pairs = tokens * k;
  ExpertWeights w = makeExperts(experts, hidden, inter, rng);
  std::vector<uint16_t> x = randomHalf(static_cast<size_t>(tokens * hidden), rng);
  std::vector<float> logits(static_cast<size_t>(tokens * experts));
  for (auto &l : logits)
    l = std::normal_distribution<float>(0.0f, 2.0f)(rng);
  std::vector<uint32_t> parts = {static_cast<uint32_t>(inter), static_cast<uint32_t>(inter)};

  for (bool fused : {false, true}) {
    std::vector<int32_t> ids(static_cast<size_t>(pairs)), order(ids.size()),
        starts(static_cast<size_t>(experts + 1));
    std::vector<float> weights(ids.size());
    moeRouter({tokens, experts, k, true}, logits.data(), ids.data(), weights.data(), pool);
    moeAlign({tokens, k, experts}, ids.data(), order.data(), starts.data());

    MoeGroupedQLinearParams gateUp;
    gateUp.tokens = tokens;
    gateUp.topK = k;
    gateUp.numExperts = experts;
    gateUp.inFeatures = hidden;
    gateUp.outFeatures = 2 * inter;
    gateUp.partRows = parts;
    gateUp.globalScales = w.gateUp.globalScales;
    gateUp.gatherTokens = true;
    std::vector<uint16_t> act(static_cast<size_t>(pairs * inter));
    if (fused) {
      gateUp.epilogue = Epilogue::SiluMul;
      moeGroupedQLinear(gateUp, x.data(), order.data(), starts.data(), w.gateUp.view(), act.data(),
                        pool);
    } else {
      std::vector<uint16_t> h(static_cast<size_t>(pairs * 2 * inter));
      moeGroupedQLinear(gateUp, x.data(), order.data(), starts.data(), w.gateUp.view(), h.data(),
                        pool);
      siluMul({pairs, inter}, h.data(), act.data(), pool);
    }
    MoeGroupedQLinearParams down;
    down.tokens = tokens;
    down.topK = k;
    down.numExperts = experts;
    down.inFeatures = inter;
    down.outFeatures = hidden;
    down.globalScales = w.down.globalScales;
    std::vector<uint16_t> y(static_cast<size_t>(pairs * hidden)),
        out(static_cast<size_t>(tokens * hidden));
    moeGroupedQLinear(down, act.data(), order.data(), starts.data(), w.down.view(), y.data(), pool);
    moeCombine({tokens, k, hidden, false}, y.data(), order.data(), weights.data(), out.data(),
               pool);

    for (int64_t t = 0; t < tokens; ++t) {
      // Router in double.
      std::vector<double> p(static_cast<size_t>(experts));
      double m =
          *std::max_element(logits.begin() + t * experts, logits.begin() + (t + 1) * experts);
      for (int64_t e = 0; e < experts; ++e)
        p[static_cast<size_t>(e)] = std::exp(logits[static_cast<size_t>(t * experts + e)] - m);
      std::vector<int32_t> rank(static_cast<size_t>(experts));
      std::iota(rank.begin(), rank.end(), 0);
      std::stable_sort(rank.begin(), rank.end(), [&](int32_t a, int32_t b) {
        return p[static_cast<size_t>(a)] > p[static_cast<size_t>(b)];
      });
      double selected = p[static_cast<size_t>(rank[0])] + p[static_cast<size_t>(rank[1])];

      std::vector<double> want(static_cast<size_t>(hidden), 0.0), bound(want.size(), 0.0);
      for (int64_t s = 0; s < k; ++s) {
        const int64_t e = rank[static_cast<size_t>(s)];
        ASSERT_EQ(ids[static_cast<size_t>(t * k + s)], e);
        const double weight = p[static_cast<size_t>(e)] / selected;
        // a = silu(gate) * up, and its error after the FP16 store.
        std::vector<double> a(static_cast<size_t>(inter)), aError(a.size());
        for (int64_t r = 0; r < inter; ++r) {
          double g = 0, gAbs = 0, u = 0, uAbs = 0;
          for (int64_t i = 0; i < hidden; ++i) {
            double xi = h2d(x[static_cast<size_t>(t * hidden + i)]);
            double wg = w.gateUp.values[static_cast<size_t>((e * 2 * inter + r) * hidden + i)];
            double wu =
                w.gateUp.values[static_cast<size_t>((e * 2 * inter + inter + r) * hidden + i)];
            g += xi * wg, gAbs += std::fabs(xi * wg);
            u += xi * wu, uAbs += std::fabs(xi * wu);
          }
          double gError = dotBound(hidden + 1, gAbs) + kU32 * std::fabs(g);
          double uError = dotBound(hidden + 1, uAbs) + kU32 * std::fabs(u);
          if (!fused) { // gate and up are stored as FP16 first
            gError = f16Tolerance(g, gError);
            uError = f16Tolerance(u, uError);
          }
          double silu = g / (1.0 + std::exp(-g));
          a[static_cast<size_t>(r)] = silu * u;
          double error = 1.1 * gError * (std::fabs(u) + uError) + std::fabs(silu) * uError +
                         8 * kU32 * std::fabs(silu * u);
          aError[static_cast<size_t>(r)] = f16Tolerance(silu * u, error);
        }
        for (int64_t c = 0; c < hidden; ++c) {
          double yc = 0, yAbs = 0, propagated = 0;
          for (int64_t r = 0; r < inter; ++r) {
            double wd = w.down.values[static_cast<size_t>((e * hidden + c) * inter + r)];
            yc += wd * a[static_cast<size_t>(r)];
            yAbs += std::fabs(wd * a[static_cast<size_t>(r)]);
            propagated += std::fabs(wd) * aError[static_cast<size_t>(r)];
          }
          double yError =
              f16Tolerance(yc, propagated + dotBound(inter + 1, yAbs) + kU32 * std::fabs(yc));
          want[static_cast<size_t>(c)] += weight * yc;
          // The routing weight's own error ((E + k + 8) u), the stored y's
          // error, and the combine's FP32 sum.
          bound[static_cast<size_t>(c)] +=
              weight * yError +
              (static_cast<double>(experts + k) + 8) * kU32 * weight * std::fabs(yc) +
              dotBound(k, weight * (std::fabs(yc) + yError));
        }
      }
      for (int64_t c = 0; c < hidden; ++c) {
        double got = h2d(out[static_cast<size_t>(t * hidden + c)]);
        ASSERT_NEAR(got, want[static_cast<size_t>(c)],
                    f16Tolerance(want[static_cast<size_t>(c)], bound[static_cast<size_t>(c)]))
            << (fused ? "fused" : "separate") << " SiluMul, token " << t << " column " << c;
      }
    }
  }
}

} // namespace
} // namespace volt::cpu
