// Compiles synthetic models into plans for the runtime's end-to-end tests.
#pragma once

#include "compiler/driver/Compile.h"
#include "compiler/mkmodel/MkModel.h"
#include "tests/support/ToyEmaModel.h"
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <string>

namespace volt::testing {

struct PlanRequest {
  /// A volt-mkmodel family, or "toy-ema" (tests/support/ToyEmaModel.h).
  std::string family = "qwen3-moe";
  mkmodel::Format format = mkmodel::Format::ModelOpt;
  int tensorParallelSize = 1;
  int maxNumSeqs = 32;
  int maxNumBatchedTokens = 256;
  uint64_t seed = 0;
  std::string target = "cpu";
  std::string extra; ///< more spec lines
};

/// Writes the model (once per family/format/seed) and compiles a plan for
/// `request`; returns the plan's path.
inline std::filesystem::path compilePlan(const PlanRequest &r) {
  static std::map<std::string, std::filesystem::path> cache;
  // The plans of this process, removed when it exits.
  static struct Cleanup {
    std::filesystem::path root;
    ~Cleanup() {
      std::error_code ec;
      if (!root.empty())
        std::filesystem::remove_all(root, ec);
    }
  } cleanup;
  std::string key = r.family + "-" + mkmodel::formatName(r.format) + "-s" + std::to_string(r.seed) +
                    "-tp" + std::to_string(r.tensorParallelSize) + "-n" +
                    std::to_string(r.maxNumSeqs) + "-b" + std::to_string(r.maxNumBatchedTokens) +
                    "-" + r.target + "-" + std::to_string(std::hash<std::string>{}(r.extra));
  if (auto it = cache.find(key); it != cache.end())
    return it->second;
  // Per process: ctest runs the test cases of this binary in parallel.
  auto root =
      std::filesystem::temp_directory_path() / ("volt-e2e-runtime-" + std::to_string(::getpid()));
  cleanup.root = root;
  std::string modelName =
      r.family + "-" + mkmodel::formatName(r.format) + "-s" + std::to_string(r.seed);
  auto modelDir = root / "models" / modelName;
  if (r.family == "toy-ema") {
    auto registered = registerToyEmaFamily();
    EXPECT_TRUE(registered.ok()) << registered.message();
    if (!std::filesystem::exists(modelDir / "config.json")) {
      auto st = writeToyEmaModel(modelDir, r.seed);
      EXPECT_TRUE(st.ok()) << st.message();
    }
  } else if (!std::filesystem::exists(modelDir / "config.json")) {
    mkmodel::Options o;
    o.family = r.family;
    o.format = r.format;
    o.seed = r.seed;
    o.outDir = modelDir;
    auto st = mkmodel::writeModel(o);
    EXPECT_TRUE(st.ok()) << st.message();
  }
  auto dir = root / "plans" / key;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "deploy.yaml")
      << "model: " << modelDir.string() << "\ntarget: " << r.target
      << "\ntensor_parallel_size: " << r.tensorParallelSize << "\nmax_num_seqs: " << r.maxNumSeqs
      << "\nmax_num_batched_tokens: " << r.maxNumBatchedTokens << "\n"
      << r.extra;
  driver::CompileOptions options;
  options.output = dir / "plan.vplan";
  auto result = driver::compile(dir / "deploy.yaml", options);
  EXPECT_TRUE(result.ok()) << result.message();
  return cache[key] = options.output;
}

/// The spec and model folder compilePlan(r) would use, without compiling:
/// for tests of compile errors.
inline std::filesystem::path specFor(const PlanRequest &r, const std::string &name) {
  auto root =
      std::filesystem::temp_directory_path() / ("volt-e2e-runtime-" + std::to_string(::getpid()));
  PlanRequest plain = r;
  plain.extra.clear();
  auto plan = compilePlan(plain); // writes the model
  (void)plan;
  std::string modelName =
      r.family + "-" + mkmodel::formatName(r.format) + "-s" + std::to_string(r.seed);
  auto dir = root / "specs";
  std::filesystem::create_directories(dir);
  auto spec = dir / (name + ".yaml");
  std::ofstream(spec) << "model: " << (root / "models" / modelName).string()
                      << "\ntarget: " << r.target
                      << "\ntensor_parallel_size: " << r.tensorParallelSize
                      << "\nmax_num_seqs: " << r.maxNumSeqs
                      << "\nmax_num_batched_tokens: " << r.maxNumBatchedTokens << "\n"
                      << r.extra;
  return spec;
}

} // namespace volt::testing
