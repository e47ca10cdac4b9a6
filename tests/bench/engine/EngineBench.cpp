//===- EngineBench.cpp - scheduling overhead and sampler cost -------------===//
//
// The engine's own cost, without a model: one step of 64 decoding
// sequences on a backend that does nothing (scheduling, block allocation,
// batch building, sampling a 32-token vocabulary, callbacks); the same step
// sampling top-p from a 151,936-token vocabulary (Qwen3's) on 1 and 2
// sampler threads; and the sampler alone on one such row. Results are
// recorded in docs/perf/engine.md.
//
//   ./build/bin/engine_bench [--benchmark_filter=Sampler]
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/TopCandidates.h"
#include "runtime/engine/Engine.h"
#include "runtime/engine/Sampler.h"

#include <array>
#include <benchmark/benchmark.h>

#include <random>

namespace volt::engine {
namespace {

class NullBackend : public StepBackend {
public:
  Status runStep(const StepBatch &, std::span<float>) override { return Status::success(); }
};

// One step with `range(0)` sequences decoding (prompts already in the
// cache); range(1) turns prefix caching on.
void BM_EngineStepDecode(benchmark::State &state) {
  const int32_t numSeqs = int32_t(state.range(0));
  EngineConfig cfg;
  cfg.vocabSize = 32;
  cfg.blockSize = 16;
  cfg.maxModelLen = 8192;
  cfg.numKvBlocks = numSeqs * (cfg.maxModelLen / cfg.blockSize);
  cfg.maxNumSeqs = 256;
  cfg.maxNumBatchedTokens = 8192;
  cfg.enablePrefixCaching = state.range(1) != 0;
  NullBackend backend;
  auto engine = std::move(*Engine::create(cfg, backend));
  std::mt19937 rng(1);
  int64_t finished = 0;
  auto submit = [&] {
    Request r;
    for (int i = 0; i < 512; ++i)
      r.promptTokens.push_back(int32_t(rng() % 32));
    r.sampling.temperature = 0;
    r.sampling.maxTokens = cfg.maxModelLen - 512;
    r.onOutput = [&](const RequestOutput &o) { finished += o.finished; };
    (void)engine->submit(std::move(r));
  };
  for (int i = 0; i < numSeqs; ++i)
    submit();
  (void)engine->step(); // the prefills
  for (auto _ : state) {
    auto r = engine->step();
    benchmark::DoNotOptimize(r);
    if (finished > 0) {
      state.PauseTiming();
      for (; finished > 0; --finished)
        submit();
      (void)engine->step();
      state.ResumeTiming();
    }
  }
  state.counters["seqs"] = numSeqs;
  state.SetItemsProcessed(state.iterations() * numSeqs);
}
BENCHMARK(BM_EngineStepDecode)->Args({64, 0})->Args({64, 1})->Args({256, 0});

std::vector<float> modelLikeLogits(int32_t vocab);
constexpr int32_t kQwenVocab = 151936;

// Writes model-like logits into every row once; later steps reuse them
// (the engine keeps its logits buffer), so the backend costs nothing.
class FixedLogitsBackend : public StepBackend {
public:
  Status runStep(const StepBatch &, std::span<float> logits) override {
    if (logits.size() != filled_) {
      static const std::vector<float> row = modelLikeLogits(kQwenVocab);
      for (size_t at = 0; at + row.size() <= logits.size(); at += row.size())
        std::copy(row.begin(), row.end(), logits.begin() + at);
      filled_ = logits.size();
    }
    return Status::success();
  }

private:
  size_t filled_ = 0;
};

// The same logits as 64 candidates per sequence (what the cuda backend
// returns), computed once by the reference op; the engine never sees rows.
class FixedCandidatesBackend : public StepBackend {
public:
  static constexpr int32_t kK = 64;
  FixedCandidatesBackend() {
    const std::vector<float> row = modelLikeLogits(kQwenVocab);
    ids_.resize(kK);
    values_.resize(kK);
    const float t = 0.7f;
    cpu::ThreadPool pool(1);
    cpu::topCandidates({1, kQwenVocab, kK}, row.data(), &t, ids_.data(), values_.data(),
                       stats_.data(), pool);
  }
  Status runStep(const StepBatch &, std::span<float>) override {
    return Error("the candidate backend has no rows");
  }
  int32_t candidatesPerSeq() const override { return kK; }
  Status runStepCandidates(const StepBatch &b, std::span<const float>,
                           StepCandidates &out) override {
    for (int32_t s = 0; s < b.numSeqs; ++s) {
      std::copy(ids_.begin(), ids_.end(), out.ids.begin() + s * kK);
      std::copy(values_.begin(), values_.end(), out.values.begin() + s * kK);
      std::copy(stats_.begin(), stats_.end(), out.stats.begin() + s * 3);
    }
    return Status::success();
  }
  Status fetchRows(std::span<const int32_t>, std::span<float>) override {
    return Error("the benchmark's requests never need a row");
  }

private:
  std::vector<int32_t> ids_;
  std::vector<float> values_;
  std::array<float, 3> stats_{};
};

// One decode step of 64 sequences sampling top-p from a Qwen-sized
// vocabulary, on range(0) sampler threads: the whole engine-side cost of a
// step; range(1) = 1: from candidates instead of rows.
void BM_EngineStepTopP(benchmark::State &state) {
  const int32_t numSeqs = 64;
  EngineConfig cfg;
  cfg.vocabSize = kQwenVocab;
  cfg.blockSize = 16;
  cfg.maxModelLen = 8192;
  cfg.numKvBlocks = numSeqs * (cfg.maxModelLen / cfg.blockSize);
  cfg.samplerThreads = int32_t(state.range(0));
  FixedLogitsBackend rows;
  FixedCandidatesBackend candidates;
  StepBackend &backend = state.range(1) ? static_cast<StepBackend &>(candidates) : rows;
  auto engine = std::move(*Engine::create(cfg, backend));
  int64_t finished = 0;
  auto submit = [&] {
    Request r;
    r.promptTokens.assign(64, 7);
    r.sampling.temperature = 0.7f;
    r.sampling.topP = 0.8f;
    r.sampling.maxTokens = cfg.maxModelLen - 64;
    r.onOutput = [&](const RequestOutput &o) { finished += o.finished; };
    (void)engine->submit(std::move(r));
  };
  for (int i = 0; i < numSeqs; ++i)
    submit();
  (void)engine->step();
  for (auto _ : state) {
    auto r = engine->step();
    benchmark::DoNotOptimize(r);
    if (finished > 0) {
      state.PauseTiming();
      for (; finished > 0; --finished)
        submit();
      (void)engine->step();
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations() * numSeqs);
}
BENCHMARK(BM_EngineStepTopP)->Args({1, 0})->Args({2, 0})->Args({1, 1})->UseRealTime();

// Logits shaped like a trained model's: a normal bulk and a few likely tokens.
std::vector<float> modelLikeLogits(int32_t vocab) {
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0, 2.5f);
  std::vector<float> logits(vocab);
  for (float &l : logits)
    l = normal(rng);
  for (int i = 0; i < 40; ++i)
    logits[rng() % vocab] += 8 + float(i % 8);
  return logits;
}

void runSampler(benchmark::State &state, const SamplingParams &p) {
  auto logits = modelLikeLogits(kQwenVocab);
  Sampler sampler(kQwenVocab);
  TokenHistory history;
  std::vector<int32_t> prompt(512);
  for (size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = int32_t(i * 97 % kQwenVocab);
  history.setPrompt(prompt);
  for (int i = 0; i < 64; ++i)
    history.addOutput(int32_t(i * 31 % kQwenVocab));
  uint64_t draw = 0;
  for (auto _ : state) {
    auto r = sampler.sample(logits, p, history, {}, uniformDraw(9, draw++));
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_SamplerGreedy(benchmark::State &state) {
  SamplingParams p;
  p.temperature = 0;
  runSampler(state, p);
}
BENCHMARK(BM_SamplerGreedy);

void BM_SamplerTemperature(benchmark::State &state) {
  SamplingParams p;
  p.temperature = 0.8f;
  runSampler(state, p);
}
BENCHMARK(BM_SamplerTemperature);

void BM_SamplerTopP(benchmark::State &state) {
  SamplingParams p;
  p.temperature = 0.7f;
  p.topP = 0.8f;
  runSampler(state, p);
}
BENCHMARK(BM_SamplerTopP);

void BM_SamplerTopKTopP(benchmark::State &state) {
  SamplingParams p;
  p.temperature = 0.7f;
  p.topK = 20;
  p.topP = 0.8f;
  runSampler(state, p);
}
BENCHMARK(BM_SamplerTopKTopP);

void BM_SamplerTopPPenaltiesLogprobs(benchmark::State &state) {
  SamplingParams p;
  p.temperature = 0.7f;
  p.topP = 0.8f;
  p.repetitionPenalty = 1.1f;
  p.presencePenalty = 0.5f;
  p.logprobs = 5;
  runSampler(state, p);
}
BENCHMARK(BM_SamplerTopPPenaltiesLogprobs);

} // namespace
} // namespace volt::engine

BENCHMARK_MAIN();
