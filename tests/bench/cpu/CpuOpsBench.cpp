// The cpu backend's hot ops at real shapes (Qwen3-30B-A3B, one rank):
// NVFP4 linears at decode (T = 1) and small-batch (T = 64) token counts, a
// MoE layer's gate|up at decode, attention decode at a 4k context, and a
// Gated DeltaNet recurrence in a speculative verify step (Qwen3.6-35B-A3B).
// Bandwidth is reported as bytes of weights (or KV cache) read per second.
// Run: ./build/bin/cpu_ops_bench; results in docs/perf/cpu-backend.md.
// VOLT_DOTBLOCK_PATH=avx2 or portable limits the GEMMs to that path (the
// CPU's best by default), to compare the paths on one machine.
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/Ops.h"
#include "runtime/numerics/Half.h"

#include <algorithm>
#include <benchmark/benchmark.h>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace volt::cpu {
namespace {

std::vector<uint16_t> randomHalf(size_t n, std::mt19937 &rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<uint16_t> v(n);
  for (auto &x : v)
    x = floatToHalf(dist(rng));
  return v;
}

/// Random NVFP4 bytes with block scales in a sane range (0.0625 to 4).
struct RandomNvfp4 {
  std::vector<uint8_t> packed, scales;
  RandomNvfp4(int64_t rows, int64_t cols, std::mt19937 &rng)
      : packed(static_cast<size_t>(rows * cols / 2)),
        scales(static_cast<size_t>(rows * cols / 16)) {
    for (auto &b : packed)
      b = static_cast<uint8_t>(rng());
    for (auto &s : scales)
      s = static_cast<uint8_t>(0x18 + rng() % 0x28);
  }
  int64_t bytes() const { return static_cast<int64_t>(packed.size() + scales.size()); }
};

// Args: N, K, T, threads, fast (0: Numerics::Reference, 1: Fast).
void BM_QLinear(benchmark::State &state) {
  const int64_t n = state.range(0), k = state.range(1), tokens = state.range(2);
  ThreadPool pool(static_cast<int>(state.range(3)));
  std::mt19937 rng(1);
  RandomNvfp4 w(n, k, rng);
  std::vector<uint16_t> x = randomHalf(static_cast<size_t>(tokens * k), rng);
  std::vector<uint16_t> out(static_cast<size_t>(tokens * n));
  std::vector<float> global = {1e-3f};
  QLinearParams params;
  params.tokens = tokens;
  params.inFeatures = k;
  params.outFeatures = n;
  params.globalScales = global;
  params.numerics = state.range(4) ? Numerics::Fast : Numerics::Reference;
  for (auto _ : state) {
    qlinear(params, x.data(), {w.packed.data(), w.scales.data(), n, k}, nullptr, out.data(), pool);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * w.bytes());
  state.counters["GFLOP/s"] = benchmark::Counter(static_cast<double>(2 * n * k * tokens) *
                                                     static_cast<double>(state.iterations()) / 1e9,
                                                 benchmark::Counter::kIsRate);
}

void qlinearArgs(benchmark::internal::Benchmark *b) {
  // T = 4: an expert's share of a short prompt (decoded in registers).
  for (int64_t n : {768, 4096}) // an expert's gate (or up) 768x2048; q_proj 4096x2048
    for (int64_t tokens : {1, 4, 64})
      for (int64_t threads : {1, 2})
        for (int64_t fast : {0, 1})
          b->Args({n, 2048, tokens, threads, fast});
  b->ArgNames({"N", "K", "T", "threads", "fast"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_QLinear)->Apply(qlinearArgs);

// FP16 (BF16-checkpoint) linears: q_proj of the issue-17 benchmark model
// (1024 x 1024), a 32,768-row slice of its LM head and the whole head
// (151,936 rows, 311 MB: read from memory every call; FP32 logits), at
// T = 1 and 8. Args: N, T, threads, fast.
void BM_Linear(benchmark::State &state) {
  const int64_t n = state.range(0), k = 1024, tokens = state.range(1);
  ThreadPool pool(static_cast<int>(state.range(2)));
  std::mt19937 rng(4);
  std::vector<uint16_t> w = randomHalf(static_cast<size_t>(n * k), rng);
  std::vector<uint16_t> x = randomHalf(static_cast<size_t>(tokens * k), rng);
  std::vector<float> out(static_cast<size_t>(tokens * n));
  LinearParams params;
  params.tokens = tokens;
  params.inFeatures = k;
  params.outFeatures = n;
  params.outDtype = DType::F32;
  params.numerics = state.range(3) ? Numerics::Fast : Numerics::Reference;
  for (auto _ : state) {
    linear(params, x.data(), w.data(), nullptr, out.data(), pool);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * n * k * 2);
}
BENCHMARK(BM_Linear)
    ->ArgsProduct({{1024, 32768, 151936}, {1, 8}, {1, 2}, {0, 1}})
    ->ArgNames({"N", "T", "threads", "fast"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// One decode token through the FP16 experts' fused gate|up of the issue-17
// benchmark model: 32 experts of 2 x 512 x 1024, top 4. Args: threads.
/// The fused gate|up (SiluMul) of an MoE layer of `experts` experts of
/// 2 x inter x hidden, top `topK`, over `tokens` tokens: the fields
/// MoeGroupedLinearParams and MoeGroupedQLinearParams share.
template <typename Params>
Params gateUpParams(int64_t tokens, int64_t topK, int64_t experts, int64_t hidden, int64_t inter) {
  Params params;
  params.tokens = tokens;
  params.topK = topK;
  params.numExperts = experts;
  params.inFeatures = hidden;
  params.outFeatures = 2 * inter;
  params.gatherTokens = true;
  params.epilogue = Epilogue::SiluMul;
  return params;
}

void BM_MoeGroupedLinearDecode(benchmark::State &state) {
  const int64_t experts = 32, topK = 4, hidden = 1024, inter = 512;
  ThreadPool pool(static_cast<int>(state.range(0)));
  std::mt19937 rng(6);
  std::vector<uint16_t> w = randomHalf(static_cast<size_t>(experts * 2 * inter * hidden), rng);
  std::vector<uint16_t> x = randomHalf(static_cast<size_t>(hidden), rng);
  std::vector<int32_t> ids = {3, 17, 20, 31}, order(4), starts(experts + 1);
  moeAlign({1, topK, experts}, ids.data(), order.data(), starts.data());
  std::vector<uint16_t> out(static_cast<size_t>(topK * inter));
  auto params = gateUpParams<MoeGroupedLinearParams>(1, topK, experts, hidden, inter);
  for (auto _ : state) {
    moeGroupedLinear(params, x.data(), order.data(), starts.data(), w.data(), out.data(), pool);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * topK * 2 * inter * hidden * 2);
}
BENCHMARK(BM_MoeGroupedLinearDecode)
    ->Arg(1)
    ->Arg(2)
    ->ArgNames({"threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

/// One decode token through an NVFP4 MoE layer's fused gate|up (SiluMul
/// epilogue) with `experts` experts of 2 x inter x hidden, those of `ids`
/// chosen, over `layers` copies of the weights in turn (several: each call
/// reads its experts from memory rather than from the caches).
void runQGateUpDecode(benchmark::State &state, int64_t experts, int64_t hidden, int64_t inter,
                      std::vector<int32_t> ids, int64_t layers) {
  const int64_t topK = static_cast<int64_t>(ids.size());
  ThreadPool pool(static_cast<int>(state.range(0)));
  std::mt19937 rng(2);
  std::vector<RandomNvfp4> w;
  for (int64_t l = 0; l < layers; ++l)
    w.emplace_back(experts * 2 * inter, hidden, rng);
  std::vector<float> global(static_cast<size_t>(experts * 2), 1e-3f);
  std::vector<uint32_t> parts = {static_cast<uint32_t>(inter), static_cast<uint32_t>(inter)};
  std::vector<uint16_t> x = randomHalf(static_cast<size_t>(hidden), rng);
  std::vector<int32_t> order(ids.size()), starts(static_cast<size_t>(experts + 1));
  moeAlign({1, topK, experts}, ids.data(), order.data(), starts.data());
  std::vector<uint16_t> out(static_cast<size_t>(topK * inter));
  auto params = gateUpParams<MoeGroupedQLinearParams>(1, topK, experts, hidden, inter);
  params.partRows = parts;
  params.globalScales = global;
  size_t layer = 0;
  for (auto _ : state) {
    const RandomNvfp4 &m = w[layer];
    layer = (layer + 1) % w.size();
    moeGroupedQLinear(params, x.data(), order.data(), starts.data(),
                      {m.packed.data(), m.scales.data(), experts * 2 * inter, hidden}, out.data(),
                      pool);
    benchmark::DoNotOptimize(out.data());
  }
  // Bytes of the chosen experts, read once per call.
  state.SetBytesProcessed(state.iterations() * w[0].bytes() / experts * topK);
}

// The NVFP4 experts' gate|up of the issue-17 benchmark model (32 experts of
// 2 x 512 x 1024, top 4) as a decode step meets it: 8 layers' experts
// (160 MB) in turn. Args: threads.
void BM_MoeQGateUpDecodeFromMemory(benchmark::State &state) {
  runQGateUpDecode(state, 32, 1024, 512, {3, 17, 20, 31}, 8);
}
BENCHMARK(BM_MoeQGateUpDecodeFromMemory)
    ->Arg(1)
    ->Arg(2)
    ->ArgNames({"threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

/// A 32-token prompt through the issue-17 benchmark model's MoE gate|up
/// (32 experts of 2 x 512 x 1024, top 4, SiluMul): each token's 4 experts
/// drawn at random (about 4 tokens per expert, as a prompt of random
/// weights routes them), over `layers` copies of the weights in turn.
/// Args: threads, fast, nvfp4 (0: FP16 experts).
void BM_MoeGateUpPrompt(benchmark::State &state) {
  const int64_t experts = 32, topK = 4, hidden = 1024, inter = 512, tokens = 32;
  const bool nvfp4 = state.range(2) != 0;
  const int64_t layers = nvfp4 ? 8 : 2;
  ThreadPool pool(static_cast<int>(state.range(0)));
  std::mt19937 rng(7);
  std::vector<int32_t> ids;
  for (int64_t t = 0; t < tokens; ++t) {
    std::vector<int32_t> all(static_cast<size_t>(experts));
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    ids.insert(ids.end(), all.begin(), all.begin() + topK);
  }
  std::vector<int32_t> order(ids.size()), starts(static_cast<size_t>(experts + 1));
  moeAlign({tokens, topK, experts}, ids.data(), order.data(), starts.data());
  std::vector<uint16_t> x = randomHalf(static_cast<size_t>(tokens * hidden), rng);
  std::vector<uint16_t> out(static_cast<size_t>(tokens * topK * inter));
  const Numerics numerics = state.range(1) ? Numerics::Fast : Numerics::Reference;
  size_t layer = 0;
  if (nvfp4) {
    std::vector<RandomNvfp4> w;
    for (int64_t l = 0; l < layers; ++l)
      w.emplace_back(experts * 2 * inter, hidden, rng);
    std::vector<float> global(static_cast<size_t>(experts * 2), 1e-3f);
    std::vector<uint32_t> parts = {static_cast<uint32_t>(inter), static_cast<uint32_t>(inter)};
    auto params = gateUpParams<MoeGroupedQLinearParams>(tokens, topK, experts, hidden, inter);
    params.partRows = parts;
    params.globalScales = global;
    params.numerics = numerics;
    for (auto _ : state) {
      const RandomNvfp4 &m = w[layer];
      layer = (layer + 1) % w.size();
      moeGroupedQLinear(params, x.data(), order.data(), starts.data(),
                        {m.packed.data(), m.scales.data(), experts * 2 * inter, hidden}, out.data(),
                        pool);
      benchmark::DoNotOptimize(out.data());
    }
  } else {
    std::vector<std::vector<uint16_t>> w;
    for (int64_t l = 0; l < layers; ++l)
      w.push_back(randomHalf(static_cast<size_t>(experts * 2 * inter * hidden), rng));
    auto params = gateUpParams<MoeGroupedLinearParams>(tokens, topK, experts, hidden, inter);
    params.numerics = numerics;
    for (auto _ : state) {
      const std::vector<uint16_t> &m = w[layer];
      layer = (layer + 1) % w.size();
      moeGroupedLinear(params, x.data(), order.data(), starts.data(), m.data(), out.data(), pool);
      benchmark::DoNotOptimize(out.data());
    }
  }
  // Multiply-adds of the call: every pair's 2 x inter x hidden.
  state.counters["GFLOP/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * tokens * topK * 2 * inter * hidden * 2,
      benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_MoeGateUpPrompt)
    ->ArgsProduct({{1, 2}, {0, 1}, {0, 1}})
    ->ArgNames({"threads", "fast", "nvfp4"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// A Qwen3-30B-A3B layer's gate|up: 128 experts of 2 x 768 x 2048, top 8,
// the same layer every call (its 14 MB of chosen experts partly cached).
// Args: threads.
void BM_MoeGateUpDecode(benchmark::State &state) {
  runQGateUpDecode(state, 128, 2048, 768, {3, 17, 40, 41, 77, 90, 100, 127}, 1);
}
BENCHMARK(BM_MoeGateUpDecode)
    ->Arg(1)
    ->Arg(2)
    ->ArgNames({"threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// Decode attention: S sequences of one new token each at context C, 32 q
// heads over 4 kv heads of 128. Args: C, S, threads.
void BM_AttentionDecode(benchmark::State &state) {
  const int64_t context = state.range(0), seqs = state.range(1);
  const int64_t heads = 32, kvHeads = 4, dim = 128, blockSize = 16;
  ThreadPool pool(static_cast<int>(state.range(2)));
  std::mt19937 rng(3);
  const int64_t blocksPerSeq = (context + blockSize - 1) / blockSize;
  const int64_t numBlocks = blocksPerSeq * seqs;
  std::vector<uint16_t> k =
      randomHalf(static_cast<size_t>(numBlocks * blockSize * kvHeads * dim), rng);
  std::vector<uint16_t> v = randomHalf(k.size(), rng);
  std::vector<int32_t> tables(static_cast<size_t>(numBlocks));
  std::iota(tables.begin(), tables.end(), 0);
  std::shuffle(tables.begin(), tables.end(), rng);
  std::vector<int32_t> seqStarts(static_cast<size_t>(seqs + 1)),
      contextLens(static_cast<size_t>(seqs), static_cast<int32_t>(context)),
      slots(static_cast<size_t>(seqs));
  for (int64_t s = 0; s <= seqs; ++s)
    seqStarts[static_cast<size_t>(s)] = static_cast<int32_t>(s);
  for (int64_t s = 0; s < seqs; ++s)
    slots[static_cast<size_t>(s)] =
        tables[static_cast<size_t>(s * blocksPerSeq + (context - 1) / blockSize)] * blockSize +
        static_cast<int32_t>((context - 1) % blockSize);
  std::vector<uint16_t> qkv =
      randomHalf(static_cast<size_t>(seqs * (heads + 2 * kvHeads) * dim), rng);
  std::vector<uint16_t> out(static_cast<size_t>(seqs * heads * dim));
  for (auto _ : state) {
    attention({seqs, seqs, heads, kvHeads, dim}, qkv.data(),
              {slots.data(), seqStarts.data(), contextLens.data(), tables.data(), blocksPerSeq},
              {k.data(), v.data(), numBlocks, blockSize}, out.data(), pool);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * seqs * context * kvHeads * dim * 2 * 2);
}
BENCHMARK(BM_AttentionDecode)
    ->Args({4096, 1, 1})
    ->Args({4096, 1, 2})
    ->Args({4096, 4, 2})
    ->ArgNames({"C", "S", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// A Gated DeltaNet layer's recurrence in a speculative verify step at
// Qwen3.6-35B-A3B's shapes (one rank: 16 key heads, 32 value heads, dk = dv
// = 128, a 2 MiB FP32 state): S sequences of 1 + k tokens each, with or
// without a copy of the state after each of the first k tokens (the
// rollback copies, StepInput.StateSnapshots). Args: k, copies, S, threads.
void BM_GatedDeltaRuleVerify(benchmark::State &state) {
  const int64_t k = state.range(0), seqs = state.range(2);
  const bool copies = state.range(1) != 0;
  const int64_t hk = 16, hv = 32, dk = 128, dv = 128, n = 1 + k, tokens = seqs * n;
  const int64_t width = 2 * hk * dk + hv * dv, stateFloats = hv * dk * dv;
  ThreadPool pool(static_cast<int>(state.range(3)));
  std::mt19937 rng(5);
  std::vector<uint16_t> qkv = randomHalf(static_cast<size_t>(tokens * width), rng),
                        gates = randomHalf(static_cast<size_t>(tokens * 2 * hv), rng),
                        z = randomHalf(static_cast<size_t>(tokens * hv * dv), rng),
                        norm = randomHalf(static_cast<size_t>(dv), rng);
  std::vector<float> aLog(static_cast<size_t>(hv), -0.5f), dtBias(static_cast<size_t>(hv), 0.1f);
  // Each sequence's own slot, then k copy slots per sequence.
  std::vector<float> slots(static_cast<size_t>(seqs * (1 + k) * stateFloats), 0.01f);
  std::vector<int32_t> starts(static_cast<size_t>(seqs + 1)), contexts(static_cast<size_t>(seqs)),
      own(static_cast<size_t>(seqs)), snapshots(static_cast<size_t>(tokens), -1);
  for (int64_t s = 0; s < seqs; ++s) {
    starts[static_cast<size_t>(s + 1)] = static_cast<int32_t>((s + 1) * n);
    contexts[static_cast<size_t>(s)] = static_cast<int32_t>(100 + n);
    own[static_cast<size_t>(s)] = static_cast<int32_t>(s);
    for (int64_t j = 0; copies && j < k; ++j)
      snapshots[static_cast<size_t>(s * n + j)] = static_cast<int32_t>(seqs + s * k + j);
  }
  std::vector<uint16_t> out(static_cast<size_t>(tokens * hv * dv));
  for (auto _ : state) {
    gatedDeltaRule({tokens, seqs, hk, hv, dk, dv, 1e-6f}, qkv.data(), gates.data(), z.data(),
                   aLog.data(), dtBias.data(), norm.data(), slots.data(), starts.data(),
                   contexts.data(), own.data(), copies ? snapshots.data() : nullptr, out.data(),
                   pool);
    benchmark::DoNotOptimize(out.data());
  }
  // State bytes read and written once per step, plus the copies.
  state.SetBytesProcessed(state.iterations() * seqs * stateFloats * 4 * (2 + (copies ? k : 0)));
}
BENCHMARK(BM_GatedDeltaRuleVerify)
    ->Args({0, 0, 1, 2})
    ->Args({3, 0, 1, 2})
    ->Args({3, 1, 1, 2})
    ->Args({7, 0, 1, 2})
    ->Args({7, 1, 1, 2})
    ->Args({3, 0, 4, 2})
    ->Args({3, 1, 4, 2})
    ->ArgNames({"k", "copies", "S", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

} // namespace
} // namespace volt::cpu

int main(int argc, char **argv) {
  if (const char *path = std::getenv("VOLT_DOTBLOCK_PATH")) {
    using volt::cpu::detail::DotBlockPath;
    const std::string p = path;
    volt::cpu::detail::setDotBlockPathLimit(p == "portable" ? DotBlockPath::Portable
                                            : p == "avx2"   ? DotBlockPath::Avx2
                                            : p == "avx512" ? DotBlockPath::Avx512
                                                            : DotBlockPath::Avx512Vbmi);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
