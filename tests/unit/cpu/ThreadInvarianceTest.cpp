// Every op gives the same bits with 1 and with 4 threads (each output
// element is computed by one thread with the same code, however the work is
// split). Sizes are large enough that every op really splits.
#include "runtime/cpu/Ops.h"

#include "TestUtil.h"

#include <numeric>

namespace volt::cpu {
namespace {

using namespace test;

/// run(pool) computes an op from fresh copies of its inputs and returns its
/// outputs as bytes.
template <typename Run> void expectThreadInvariant(const char *op, Run run) {
  ThreadPool one(1), four(4);
  std::vector<uint8_t> a = run(one), b = run(four);
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << op << " differs between 1 and 4 threads";
}

template <typename T> std::vector<uint8_t> bytes(const std::vector<T> &v) {
  const uint8_t *p = reinterpret_cast<const uint8_t *>(v.data());
  return std::vector<uint8_t>(p, p + v.size() * sizeof(T));
}

template <typename T> void append(std::vector<uint8_t> &out, const std::vector<T> &v) {
  std::vector<uint8_t> b = bytes(v);
  out.insert(out.end(), b.begin(), b.end());
}

TEST(ThreadInvariance, EveryOp) {
  std::mt19937 rng(90);
  const int64_t tokens = 37, hidden = 96, vocab = 300;

  std::vector<uint16_t> table = randomHalf(static_cast<size_t>(vocab * hidden), rng);
  std::vector<int32_t> tokenIds(static_cast<size_t>(tokens));
  for (auto &id : tokenIds)
    id = static_cast<int32_t>(rng() % 400);
  expectThreadInvariant("Embedding", [&](ThreadPool &pool) {
    std::vector<uint16_t> out(static_cast<size_t>(tokens * hidden));
    embedding({tokens, hidden, 50, vocab}, tokenIds.data(), table.data(), out.data(), pool);
    return bytes(out);
  });

  std::vector<uint16_t> x = randomHalf(static_cast<size_t>(tokens * hidden), rng);
  std::vector<uint16_t> normWeight = randomHalf(static_cast<size_t>(hidden), rng);
  std::vector<float> residualF32(x.size());
  for (auto &r : residualF32)
    r = std::normal_distribution<float>()(rng);
  expectThreadInvariant("RmsNorm", [&](ThreadPool &pool) {
    std::vector<uint16_t> out(x.size());
    rmsNorm({tokens, hidden, 1e-6f, DType::F32}, residualF32.data(), normWeight.data(), out.data(),
            pool);
    return bytes(out);
  });
  expectThreadInvariant("AddRmsNorm", [&](ThreadPool &pool) {
    std::vector<uint16_t> residual = randomHalf(x.size(), rng), out(x.size());
    std::mt19937 local(1);
    residual = randomHalf(x.size(), local);
    addRmsNorm({tokens, hidden, 1e-6f, DType::F16, DType::F16}, x.data(), residual.data(),
               normWeight.data(), out.data(), pool);
    std::vector<uint8_t> result = bytes(out);
    append(result, residual);
    return result;
  });

  std::vector<uint16_t> dense = randomHalf(static_cast<size_t>(200 * hidden), rng, 0.1f);
  std::vector<uint16_t> bias = randomHalf(200, rng);
  expectThreadInvariant("Linear", [&](ThreadPool &pool) {
    std::vector<float> out(static_cast<size_t>(tokens * 200));
    linear({tokens, hidden, 200, DType::F32}, x.data(), dense.data(), bias.data(), out.data(),
           pool);
    return bytes(out);
  });

  TestNvfp4 q = makeNvfp4({64, 32, 32}, hidden, rng);
  for (Epilogue epilogue : {Epilogue::None, Epilogue::SiluMul}) {
    expectThreadInvariant("QLinear", [&](ThreadPool &pool) {
      QLinearParams params;
      params.tokens = tokens;
      params.inFeatures = hidden;
      params.outFeatures = q.rows;
      params.partRows = q.partRows;
      params.globalScales = q.globalScales;
      params.epilogue = epilogue;
      std::vector<uint16_t> out(static_cast<size_t>(tokens * q.rows));
      qlinear(params, x.data(), q.view(), nullptr, out.data(), pool);
      return bytes(out);
    });
  }

  const int64_t heads = 4, kvHeads = 2, dim = 32, row = (heads + 2 * kvHeads) * dim;
  std::vector<uint16_t> qkv = randomHalf(static_cast<size_t>(tokens * row), rng);
  std::vector<int32_t> positions(static_cast<size_t>(tokens));
  std::iota(positions.begin(), positions.end(), 90);
  expectThreadInvariant("QkNormRope", [&](ThreadPool &pool) {
    std::vector<uint16_t> data = qkv;
    qkNormRope({tokens, heads, kvHeads, dim, 1e6f, 1e-6f}, data.data(), positions.data(),
               normWeight.data(), normWeight.data() + dim, pool);
    return bytes(data);
  });

  // Attention: one sequence of 100 cached + 30 new, plus 7 decodes.
  const int64_t bs = 8, blocks = 64, maxBlocks = 17;
  std::vector<int32_t> seqStarts = {0, 30, 31, 32, 33, 34, 35, 36, 37};
  std::vector<int32_t> contextLens = {130, 5, 40, 77, 1, 9, 100, 64};
  std::vector<int32_t> tables(8 * maxBlocks);
  for (size_t i = 0; i < tables.size(); ++i)
    tables[i] = static_cast<int32_t>((i * 7) % blocks);
  std::vector<int32_t> slots(static_cast<size_t>(tokens));
  for (int64_t t = 0; t < tokens; ++t)
    slots[static_cast<size_t>(t)] = static_cast<int32_t>(t); // scribbles; contents don't matter
  std::vector<uint16_t> kCache = randomHalf(static_cast<size_t>(blocks * bs * kvHeads * dim), rng);
  std::vector<uint16_t> vCache = randomHalf(kCache.size(), rng);
  expectThreadInvariant("Attention", [&](ThreadPool &pool) {
    std::vector<uint16_t> k = kCache, v = vCache, out(static_cast<size_t>(tokens * heads * dim));
    attention({tokens, 8, heads, kvHeads, dim}, qkv.data(),
              {slots.data(), seqStarts.data(), contextLens.data(), tables.data(), maxBlocks},
              {k.data(), v.data(), blocks, bs}, out.data(), pool);
    std::vector<uint8_t> result = bytes(out);
    append(result, k);
    append(result, v);
    return result;
  });

  std::vector<uint16_t> gateUp = randomHalf(static_cast<size_t>(tokens * 2 * hidden), rng);
  expectThreadInvariant("SiluMul", [&](ThreadPool &pool) {
    std::vector<uint16_t> out(static_cast<size_t>(tokens * hidden));
    siluMul({tokens, hidden}, gateUp.data(), out.data(), pool);
    return bytes(out);
  });
  std::vector<float> gate(static_cast<size_t>(tokens), 0.3f);
  expectThreadInvariant("SigmoidGateAdd", [&](ThreadPool &pool) {
    std::vector<uint16_t> out = x;
    sigmoidGateAdd({tokens, hidden, DType::F32}, out.data(), gateUp.data(), gate.data(), pool);
    return bytes(out);
  });

  // MoE: 8 experts, top 3.
  const int64_t experts = 8, topK = 3, pairs = tokens * topK, inter = 32;
  std::vector<float> logits(static_cast<size_t>(tokens * experts));
  for (auto &l : logits)
    l = std::normal_distribution<float>()(rng);
  std::vector<int32_t> ids(static_cast<size_t>(pairs)), order(ids.size()),
      starts(static_cast<size_t>(experts + 1));
  std::vector<float> routeWeights(ids.size());
  expectThreadInvariant("MoeRouter", [&](ThreadPool &pool) {
    moeRouter({tokens, experts, topK, true}, logits.data(), ids.data(), routeWeights.data(), pool);
    std::vector<uint8_t> result = bytes(ids);
    append(result, routeWeights);
    return result;
  });
  moeAlign({tokens, topK, experts}, ids.data(), order.data(), starts.data());
  TestNvfp4 expertsUp, expertsDown;
  for (int64_t e = 0; e < experts; ++e) {
    appendNvfp4(expertsUp, {static_cast<uint32_t>(inter), static_cast<uint32_t>(inter)}, hidden,
                rng);
    appendNvfp4(expertsDown, {static_cast<uint32_t>(hidden)}, inter, rng);
  }
  std::vector<uint32_t> parts = {static_cast<uint32_t>(inter), static_cast<uint32_t>(inter)};
  std::vector<uint16_t> act = randomHalf(static_cast<size_t>(pairs * inter), rng);
  expectThreadInvariant("MoeGroupedQLinear", [&](ThreadPool &pool) {
    MoeGroupedQLinearParams up;
    up.tokens = tokens;
    up.topK = topK;
    up.numExperts = experts;
    up.inFeatures = hidden;
    up.outFeatures = 2 * inter;
    up.partRows = parts;
    up.globalScales = expertsUp.globalScales;
    up.gatherTokens = true;
    up.epilogue = Epilogue::SiluMul;
    std::vector<uint16_t> h(static_cast<size_t>(pairs * inter)),
        y(static_cast<size_t>(pairs * hidden));
    moeGroupedQLinear(up, x.data(), order.data(), starts.data(), expertsUp.view(), h.data(), pool);
    MoeGroupedQLinearParams down;
    down.tokens = tokens;
    down.topK = topK;
    down.numExperts = experts;
    down.inFeatures = inter;
    down.outFeatures = hidden;
    down.globalScales = expertsDown.globalScales;
    moeGroupedQLinear(down, act.data(), order.data(), starts.data(), expertsDown.view(), y.data(),
                      pool);
    std::vector<uint8_t> result = bytes(h);
    append(result, y);
    return result;
  });
  std::vector<uint16_t> sorted = randomHalf(static_cast<size_t>(pairs * hidden), rng);
  expectThreadInvariant("MoeCombine", [&](ThreadPool &pool) {
    std::vector<uint16_t> out = x;
    moeCombine({tokens, topK, hidden, true}, sorted.data(), order.data(), routeWeights.data(),
               out.data(), pool);
    return bytes(out);
  });

  std::vector<int32_t> rows = {36, 0, 17};
  expectThreadInvariant("GatherRows", [&](ThreadPool &pool) {
    std::vector<uint16_t> out(3 * static_cast<size_t>(hidden));
    gatherRows({3, hidden, DType::F16}, x.data(), rows.data(), out.data(), pool);
    return bytes(out);
  });
}

} // namespace
} // namespace volt::cpu
