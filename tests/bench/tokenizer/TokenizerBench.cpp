//===- TokenizerBench.cpp - encode throughput on the conformance corpus --===//
//
// Single-thread encode throughput (MB/s of input text) over the 10k-string
// corpus of tests/conformance/tokenizer/, for each committed tokenizer;
// hf_bench.py measures HF `tokenizers` on the same corpus. Results are
// recorded in docs/perf/tokenizer.md.
//
//   ./build/bin/tokenizer_bench [--benchmark_filter=qwen3]
//
//===----------------------------------------------------------------------===//
#include "runtime/tokenizer/Tokenizer.h"
#include "tests/unit/tokenizer/ConformanceData.h"

#include <benchmark/benchmark.h>

#include <map>

namespace volt::tok {
namespace {

const std::vector<std::string> &corpus() {
  static const std::vector<std::string> items = [] {
    auto blob = testing::readXz(testing::conformanceDir() + "corpus.bin.xz");
    return blob ? testing::parseCorpus(*blob) : std::vector<std::string>();
  }();
  return items;
}

const Tokenizer *load(const std::string &name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto &slot = cache[name];
  if (!slot) {
    auto json = testing::readXz(testing::conformanceDir() + name + ".tokenizer.json.xz");
    if (!json)
      return nullptr;
    auto t = Tokenizer::fromJson(*json, name);
    if (!t.ok())
      return nullptr;
    slot = std::move(*t);
  }
  return slot.get();
}

void encodeCorpus(benchmark::State &state, const char *name, bool addSpecialTokens) {
  const Tokenizer *t = load(name);
  if (!t || corpus().empty()) {
    state.SkipWithError("cannot load the tokenizer or the corpus (is xz installed?)");
    return;
  }
  size_t bytes = 0, tokens = 0;
  for (const std::string &s : corpus())
    bytes += s.size();
  for (auto _ : state) {
    for (const std::string &s : corpus()) {
      auto ids = t->encode(s, addSpecialTokens);
      tokens += ids.size();
      benchmark::DoNotOptimize(ids.data());
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes * state.iterations()));
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}

void decodeCorpus(benchmark::State &state, const char *name) {
  const Tokenizer *t = load(name);
  if (!t || corpus().empty()) {
    state.SkipWithError("cannot load the tokenizer or the corpus (is xz installed?)");
    return;
  }
  std::vector<std::vector<int32_t>> all;
  size_t tokens = 0;
  for (const std::string &s : corpus())
    all.push_back(t->encode(s, false));
  for (auto _ : state) {
    for (const auto &ids : all) {
      auto text = t->decode(ids, false);
      tokens += ids.size();
      benchmark::DoNotOptimize(text);
    }
  }
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}

void loadTokenizer(benchmark::State &state, const char *name) {
  auto json = testing::readXz(testing::conformanceDir() + name + ".tokenizer.json.xz");
  if (!json) {
    state.SkipWithError("cannot read the tokenizer");
    return;
  }
  for (auto _ : state) {
    auto t = Tokenizer::fromJson(*json, name);
    benchmark::DoNotOptimize(t);
  }
}

BENCHMARK_CAPTURE(encodeCorpus, qwen3, "qwen3", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encodeCorpus, llama3, "llama3", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encodeCorpus, mistral_v1, "mistral-v1", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encodeCorpus, mistral_v3, "mistral-v3", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decodeCorpus, qwen3, "qwen3")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decodeCorpus, mistral_v1, "mistral-v1")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(loadTokenizer, qwen3, "qwen3")->Unit(benchmark::kMillisecond)->Iterations(3);

} // namespace
} // namespace volt::tok

BENCHMARK_MAIN();
