// Opening and validating a checkpoint costs O(tensors), not O(bytes): the
// same tensor count at 1,000x the bytes takes the same time. Checkpoints are
// written once per run by volt-mkmodel's library (large tensors as file
// holes) under the system temp folder.
//
//   ./build/bin/checkpoint_bench
#include "compiler/mkmodel/MkModel.h"
#include "compiler/model/Model.h"

#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>

namespace {

using namespace volt;

std::filesystem::path checkpoint(const std::string &preset, mkmodel::Format format, int shards) {
  static std::map<std::string, std::filesystem::path> written;
  std::string key = preset + "-" + mkmodel::formatName(format);
  if (auto it = written.find(key); it != written.end())
    return it->second;
  auto dir = std::filesystem::temp_directory_path() / ("volt-bench-" + key);
  std::filesystem::remove_all(dir);
  mkmodel::Options o;
  o.family = "qwen3-moe";
  o.preset = preset;
  o.format = format;
  o.shards = shards;
  o.zeros = preset != "tiny";
  o.outDir = dir;
  if (auto st = mkmodel::writeModel(o); !st) {
    fprintf(stderr, "%s\n", st.message().c_str());
    std::abort();
  }
  return written[key] = dir;
}

void report(benchmark::State &state, const model::Checkpoint &c) {
  state.counters["tensors"] = static_cast<double>(c.tensors().size());
  state.counters["file_GiB"] = static_cast<double>(c.dataBytes()) / (1ull << 30);
  state.counters["tensors_per_s"] = benchmark::Counter(
      static_cast<double>(c.tensors().size()), benchmark::Counter::kIsIterationInvariantRate);
}

void openHeaders(benchmark::State &state, const std::string &preset, mkmodel::Format format,
                 int shards) {
  auto dir = checkpoint(preset, format, shards);
  for (auto _ : state) {
    auto c = model::Checkpoint::open(dir);
    if (!c)
      state.SkipWithError(c.message().c_str());
    benchmark::DoNotOptimize(c);
    state.PauseTiming();
    report(state, *c);
    state.ResumeTiming();
  }
}

void loadModel(benchmark::State &state, const std::string &preset, mkmodel::Format format,
               int shards) {
  auto dir = checkpoint(preset, format, shards);
  for (auto _ : state) {
    auto m = model::loadModel(dir);
    if (!m)
      state.SkipWithError(m.message().c_str());
    benchmark::DoNotOptimize(m);
    state.PauseTiming();
    report(state, *m->checkpoint);
    state.ResumeTiming();
  }
}

// Headers only: validation of every safetensors header.
BENCHMARK_CAPTURE(openHeaders, tiny_nvfp4, "tiny", mkmodel::Format::ModelOpt, 1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(openHeaders, qwen3_30b_a3b_bf16, "qwen3-30b-a3b", mkmodel::Format::BF16, 16)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(openHeaders, qwen3_30b_a3b_nvfp4, "qwen3-30b-a3b", mkmodel::Format::ModelOpt, 4)
    ->Unit(benchmark::kMillisecond);
// Everything `voltc check` does to the model: config, quantization claim,
// headers, and binding every weight with its shape and format checks.
BENCHMARK_CAPTURE(loadModel, qwen3_30b_a3b_bf16, "qwen3-30b-a3b", mkmodel::Format::BF16, 16)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(loadModel, qwen3_30b_a3b_nvfp4, "qwen3-30b-a3b", mkmodel::Format::ModelOpt, 4)
    ->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
