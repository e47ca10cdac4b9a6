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

#include <cstdint>
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

/// Encodes every corpus string of at most `maxBytes` bytes (the corpus ends
/// with seven long strings of 12-60 KB; the others are typical prompts).
void encodeCorpus(benchmark::State &state, const char *name, size_t maxBytes) {
  const Tokenizer *t = load(name);
  if (!t || corpus().empty()) {
    state.SkipWithError("cannot load the tokenizer or the corpus (is xz installed?)");
    return;
  }
  std::vector<const std::string *> inputs;
  size_t bytes = 0, tokens = 0;
  for (const std::string &s : corpus()) {
    if (s.size() <= maxBytes) {
      inputs.push_back(&s);
      bytes += s.size();
    }
  }
  for (auto _ : state) {
    for (const std::string *s : inputs) {
      auto ids = t->encode(*s, false);
      tokens += ids.size();
      benchmark::DoNotOptimize(ids.data());
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes * state.iterations()));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
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
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}

/// One 1 MB input without a single split point: the worst case for BPE.
void encodeMegabyteWord(benchmark::State &state, const char *name) {
  const Tokenizer *t = load(name);
  if (!t) {
    state.SkipWithError("cannot load the tokenizer (is xz installed?)");
    return;
  }
  std::string text(1 << 20, 'x');
  for (auto _ : state) {
    auto ids = t->encode(text, false);
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(text.size() * state.iterations()));
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

constexpr size_t kAll = SIZE_MAX, kShort = 10000;
BENCHMARK_CAPTURE(encodeCorpus, qwen3, "qwen3", kAll)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encodeCorpus, llama3, "llama3", kAll)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encodeCorpus, mistral_v1, "mistral-v1", kAll)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encodeCorpus, mistral_v3, "mistral-v3", kAll)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encodeCorpus, qwen3_short, "qwen3", kShort)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encodeCorpus, llama3_short, "llama3", kShort)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encodeCorpus, mistral_v1_short, "mistral-v1", kShort)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encodeCorpus, mistral_v3_short, "mistral-v3", kShort)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decodeCorpus, qwen3, "qwen3")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decodeCorpus, mistral_v1, "mistral-v1")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encodeMegabyteWord, qwen3, "qwen3")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encodeMegabyteWord, mistral_v1, "mistral-v1")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(loadTokenizer, qwen3, "qwen3")->Unit(benchmark::kMillisecond)->Iterations(3);

} // namespace
} // namespace volt::tok

BENCHMARK_MAIN();
