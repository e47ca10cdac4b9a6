// Loading a plan, excluding the weight bytes: the FlatBuffers verifier, the
// version and consistency checks, for a plan of Qwen3-30B-A3B's shape (48
// layers, 128 experts) at tensor_parallel_size 4 on the cpu backend. The
// plan is compiled once per run from a zero-filled checkpoint of the
// published shapes (its packs are file holes).
//
//   ./build/bin/plan_load_bench
#include "compiler/driver/Compile.h"
#include "compiler/mkmodel/MkModel.h"
#include "runtime/plan/PlanFile.h"

#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>

namespace {

using namespace volt;

std::filesystem::path qwen3Plan() {
  static std::filesystem::path plan;
  if (!plan.empty())
    return plan;
  auto dir = std::filesystem::temp_directory_path() / "volt-bench-plan-qwen3-30b-a3b";
  plan = dir / "plan.vplan";
  if (std::filesystem::exists(plan))
    return plan;
  std::filesystem::create_directories(dir);
  mkmodel::Options o;
  o.preset = "qwen3-30b-a3b";
  o.zeros = true;
  o.shards = 4;
  o.outDir = dir / "model";
  if (auto st = mkmodel::writeModel(o); !st) {
    std::fprintf(stderr, "%s\n", st.message().c_str());
    std::abort();
  }
  // The published checkpoint ships a tokenizer; the zero model gets the
  // tiny one (the plan embeds whichever the directory holds).
  std::ofstream(dir / "model" / "tokenizer.json") << mkmodel::tinyTokenizer(151936).dump();
  std::ofstream(dir / "deploy.yaml")
      << "model: model\ntarget: cpu\ntensor_parallel_size: 4\nmax_model_len: 32768\n"
         "max_num_seqs: 8\nmax_num_batched_tokens: 2048\n";
  driver::CompileOptions options;
  options.output = plan;
  auto r = driver::compile(dir / "deploy.yaml", options);
  if (!r) {
    std::fprintf(stderr, "%s\n", r.message().c_str());
    std::abort();
  }
  return plan;
}

void loadPlan(benchmark::State &state) {
  auto path = qwen3Plan();
  plan::LoadOptions options;
  options.loadWeights = false;
  size_t ops = 0;
  for (auto _ : state) {
    auto loaded = plan::LoadedPlan::load(path, options);
    if (!loaded)
      state.SkipWithError(loaded.message().c_str());
    ops = (*loaded)->plan().ranks()->Get(0)->ops()->size();
    benchmark::DoNotOptimize(loaded);
  }
  state.counters["plan_bytes"] = static_cast<double>(std::filesystem::file_size(path));
  state.counters["ops_per_rank"] = static_cast<double>(ops);
}
BENCHMARK(loadPlan)->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
