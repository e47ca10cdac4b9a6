// Compiles synthetic models into plans for the runtime's end-to-end tests.
#pragma once

#include <unistd.h>
#include "compiler/driver/Compile.h"
#include "compiler/mkmodel/MkModel.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <string>

namespace volt::testing {

struct PlanRequest {
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
  auto root = std::filesystem::temp_directory_path() /
              ("volt-e2e-runtime-" + std::to_string(::getpid()));
  cleanup.root = root;
  std::string modelName = r.family + "-" + mkmodel::formatName(r.format) + "-s" +
                          std::to_string(r.seed);
  auto modelDir = root / "models" / modelName;
  if (!std::filesystem::exists(modelDir / "config.json")) {
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
      << "model: " << modelDir.string() << "\ntarget: " << r.target << "\ntensor_parallel_size: "
      << r.tensorParallelSize << "\nmax_num_seqs: " << r.maxNumSeqs
      << "\nmax_num_batched_tokens: " << r.maxNumBatchedTokens << "\n"
      << r.extra;
  driver::CompileOptions options;
  options.output = dir / "plan.vplan";
  auto result = driver::compile(dir / "deploy.yaml", options);
  EXPECT_TRUE(result.ok()) << result.message();
  return cache[key] = options.output;
}

} // namespace volt::testing
