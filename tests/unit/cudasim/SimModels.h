//===- SimModels.h - the GPU plans the SIMT end-to-end test runs -*- C++ -*-===//
//
// One list of synthetic models and deployments, read by two programs that
// must agree on it: the generator (GenerateInstances.cpp), which compiles
// these plans at build time and writes a host instance of every kernel
// they name, and the test (CudaSimtEndToEndTest.cpp), which compiles them
// again and runs them. Same spec text, same compiler: same kernels.
//
// The deployments are small on purpose (the emulator runs every GPU
// thread as a fiber): max_num_seqs 4, so that a batched prefill of a few
// prompts is already a step above it (paged_attention_tiled, tiled GEMMs),
// and max_model_len 1024 > the catalog's split_k_tokens (512), so that a
// decode context past 512 positions splits across blocks.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/driver/Compile.h"
#include "compiler/mkmodel/MkModel.h"
#include "runtime/support/Status.h"
#include "tests/support/ToyEmaModel.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace volt::cudasim {

/// A synthetic model and the GPU deployment compiled from it.
struct SimModel {
  /// "qwen3-moe-nvfp4-tp2": the test's name for it.
  std::string name;
  std::string family;
  mkmodel::Format format = mkmodel::Format::ModelOpt;
  int tensorParallelSize = 1;
  /// More spec lines (a speculative plan's).
  std::string extraSpec;
  /// Over the family's tiny preset, and the name of the checkpoint's
  /// folder that says so (empty: the preset as it is).
  mkmodel::Shape shape;
  std::string shapeName;
};

/// Linear-attention heads of 32 x 16, so that steps above max_num_seqs
/// run the chunked Gated DeltaNet kernel (head dims multiples of 16).
inline mkmodel::Shape chunkedGdnShape() {
  mkmodel::Shape s;
  s.linearKeyDim = 32;
  s.linearValueDim = 16;
  return s;
}

/// The deployments' shared limits.
inline constexpr int kMaxNumSeqs = 4;
inline constexpr int kMaxNumBatchedTokens = 256;
inline constexpr int kMaxModelLen = 1024;

/// Every plan the test runs.
inline const std::vector<SimModel> &simModels() {
  static const std::vector<SimModel> models = {
      {"qwen3-moe-nvfp4-tp1", "qwen3-moe", mkmodel::Format::ModelOpt, 1},
      {"qwen3-moe-nvfp4-tp2", "qwen3-moe", mkmodel::Format::ModelOpt, 2},
      {"qwen3-bf16-tp1", "qwen3", mkmodel::Format::BF16, 1},
      {"qwen2-moe-nvfp4-tp2", "qwen2-moe", mkmodel::Format::CompressedTensors, 2},
      {"qwen2-moe-bf16-tp1", "qwen2-moe", mkmodel::Format::BF16, 1},
      {"mixtral-nvfp4-tp4", "mixtral", mkmodel::Format::ModelOpt, 4},
      // A made-up hybrid (tests/support/ToyEmaModel.h): recurrent layers
      // with state slots beside attention layers 1 and 3.
      {"toy-ema-bf16-tp1", "toy-ema", mkmodel::Format::BF16, 1},
      // Qwen3-Next: Gated DeltaNet layers (conv and recurrent state slots)
      // beside gated attention with partial RoPE; NVFP4 experts and
      // out_proj, BF16 linear-attention inputs; split over two ranks.
      {"qwen3-next-nvfp4-tp2", "qwen3-next", mkmodel::Format::ModelOpt, 2},
      // Qwen3.5-MoE in the multimodal layout: flat linear-attention
      // projections; NVFP4 experts on one GPU (linear-attention heads of
      // 32 x 16: prefill steps run gated_delta_rule_chunked), and BF16
      // experts stacked in gate_up_proj / down_proj (packed per expert)
      // over two.
      {"qwen3.5-moe-nvfp4-tp1", "qwen3.5-moe", mkmodel::Format::ModelOpt, 1, "",
       chunkedGdnShape(), "gdn32x16"},
      {"qwen3.5-moe-bf16-tp2", "qwen3.5-moe", mkmodel::Format::BF16, 2},
      // NVIDIA's Qwen3.6 NVFP4 layout: FP8 attention and linear-attention
      // projections (E4M3 rows), NVFP4 experts, shared expert and lm_head.
      {"qwen3.5-moe-mixed-tp2", "qwen3.5-moe", mkmodel::Format::ModelOptMixed, 2},
      // llm-compressor's FP8_DYNAMIC layout: every linear FP8 with a scale
      // per row, the experts too (fp8_moe_gemv / fp8_moe_gemm).
      {"qwen3.5-moe-ct-fp8-tp1", "qwen3.5-moe", mkmodel::Format::CompressedTensorsFp8, 1},
      // With its MTP head as a draft program (GatherHidden, Concat, the
      // head's layer as one more KV layer).
      {"qwen3.5-moe-bf16-tp1-mtp", "qwen3.5-moe", mkmodel::Format::BF16, 1,
       "speculative: {method: mtp, num_speculative_tokens: 3}\n"},
  };
  return models;
}

/// The deployment spec of `m` over the checkpoint in `modelDir`.
inline std::string simSpec(const SimModel &m, const std::filesystem::path &modelDir) {
  return "model: " + modelDir.string() +
         "\ntarget: v100-pcie-16gb"
         "\ntensor_parallel_size: " +
         std::to_string(m.tensorParallelSize) + "\nmax_model_len: " + std::to_string(kMaxModelLen) +
         "\nmax_num_seqs: " + std::to_string(kMaxNumSeqs) +
         "\nmax_num_batched_tokens: " + std::to_string(kMaxNumBatchedTokens) +
         // The cpu backend allocates the whole KV cache: keep it small,
         // above the CUDA context (and NCCL's buffers with two ranks).
         "\ngpu_memory_utilization: " + (m.tensorParallelSize > 1 ? "0.055" : "0.04") + "\n" +
         m.extraSpec;
}

/// Writes `m`'s checkpoint under root/models (once) and compiles its plan
/// under root/plans; returns the plan's path.
inline Result<std::filesystem::path> compileSimPlan(const SimModel &m,
                                                    const std::filesystem::path &root) {
  namespace fs = std::filesystem;
  const fs::path modelDir =
      root / "models" /
      (m.family + "-" + mkmodel::formatName(m.format) +
       (m.shapeName.empty() ? std::string() : "-" + m.shapeName));
  if (m.family == "toy-ema") {
    VOLT_RETURN_IF_ERROR(testing::registerToyEmaFamily());
    if (!fs::exists(modelDir / "config.json"))
      VOLT_RETURN_IF_ERROR(testing::writeToyEmaModel(modelDir));
  } else if (!fs::exists(modelDir / "config.json")) {
    mkmodel::Options o;
    o.family = m.family;
    o.format = m.format;
    o.outDir = modelDir;
    o.shape = m.shape;
    VOLT_RETURN_IF_ERROR(mkmodel::writeModel(o));
  }
  const fs::path dir = root / "plans" / m.name;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return Error("cannot create " + dir.string() + ": " + ec.message());
  {
    std::ofstream spec(dir / "deploy.yaml");
    spec << simSpec(m, modelDir);
    if (!spec)
      return Error("cannot write " + (dir / "deploy.yaml").string());
  }
  driver::CompileOptions options;
  options.output = dir / "plan.vplan";
  auto compiled = driver::compile(dir / "deploy.yaml", options);
  if (!compiled)
    return Error(m.name + ": " + compiled.message());
  return options.output;
}

/// compileSimPlan under a folder of this process, removed when it exits.
inline Result<std::filesystem::path> compileSimPlanHere(const SimModel &m) {
  static struct Root {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("volt-cudasim-" + std::to_string(::getpid()));
    ~Root() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } root;
  return compileSimPlan(m, root.path);
}

/// `m`'s name as a test parameter's name.
inline std::string simTestName(const SimModel &m) {
  std::string name = m.name;
  std::replace(name.begin(), name.end(), '-', '_');
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

} // namespace volt::cudasim
