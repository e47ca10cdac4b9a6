//===- GpuCases.h - the ops and token counts the GPU tests run --*- C++ -*-===//
//
// One list serves the kernel tests, the benchmarks and `--prepare` (which
// builds every kernel they need where NVRTC 11.8 is installed): the ops of
// Qwen3-30B-A3B (tensor_parallel_size 1) and of a dense 32B model (2),
// with the V100 variants, each at the token counts that select each variant.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tests/gpu/GpuHarness.h"
#include "tests/unit/codegen/ModelShapes.h"

#include <string>
#include <vector>

namespace volt::gpu {

struct GpuCase {
  codegen::testing::ModelOp op;
  codegen::ProgramInfo program;
  /// Token counts to run (each picks the variant that serves it).
  std::vector<int> tokens;
};

inline std::vector<GpuCase> gpuCases() {
  using namespace codegen::testing;
  std::vector<GpuCase> cases;
  for (const auto &[model, tp] :
       {std::pair{qwen3MoeShape(), int64_t{1}}, std::pair{dense32bShape(), int64_t{2}}}) {
    codegen::ProgramInfo program = programFor(model, tp);
    for (ModelOp &op : modelOps(model, tp)) {
      std::vector<int> tokens = {1, 8, 40, 512};
      if (op.op.kind == plan::OpKind::Attention)
        // A lone long decode, decodes split, a small mixed step
        // (paged_attention); prefill chunks mixed with decodes
        // (paged_attention_tiled, above max_num_seqs = 256).
        tokens = {1, 4, 100, 300, 2048};
      else if (op.op.kind == plan::OpKind::Embedding)
        tokens = {4, 300};
      else if (op.op.name.ends_with("lm_head") || op.op.kind == plan::OpKind::GatherRows)
        tokens = {1, 8};
      cases.push_back({std::move(op), program, tokens});
    }
  }
  return cases;
}

/// Plans every case into `registry`: launches[case][variant].
inline Result<std::vector<std::vector<PlannedLaunch>>> planCases(const std::vector<GpuCase> &cases,
                                                                 KernelRegistry &registry) {
  std::vector<std::vector<PlannedLaunch>> launches;
  for (const GpuCase &c : cases) {
    auto planned =
        codegen::planLaunches(c.op.op, c.op.variants, c.program, codegen::TargetInfo{}, registry);
    if (!planned)
      return planned.error();
    launches.push_back(std::move(*planned));
  }
  return launches;
}

/// The launch that serves `tokens` (as the cuda backend picks it).
inline const PlannedLaunch *launchFor(const std::vector<PlannedLaunch> &launches, int tokens) {
  for (const PlannedLaunch &l : launches)
    if (l.maxTokens >= static_cast<uint32_t>(tokens))
      return &l;
  return nullptr;
}

} // namespace volt::gpu
