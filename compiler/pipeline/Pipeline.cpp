//===- Pipeline.cpp - the passes of voltc, in order, and why -------------===//
#include "compiler/pipeline/Pipeline.h"

#include "dialects/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

namespace volt::pipeline {

std::optional<Phase> parsePhase(std::string_view name) {
  for (Phase p :
       {Phase::Volt, Phase::Sharded, Phase::Fused, Phase::Vexec, Phase::Memory, Phase::Plan})
    if (name == phaseName(p))
      return p;
  return std::nullopt;
}

std::vector<std::string> phaseNames() {
  return {"volt", "sharded", "fused", "vexec", "memory", "plan"};
}

const char *phaseName(Phase phase) {
  switch (phase) {
  case Phase::Volt:
    return "volt";
  case Phase::Sharded:
    return "sharded";
  case Phase::Fused:
    return "fused";
  case Phase::Vexec:
    return "vexec";
  case Phase::Memory:
    return "memory";
  case Phase::Plan:
    return "plan";
  }
  return "?";
}

void buildPipeline(mlir::OpPassManager &pm, Phase last, const PipelineOptions &options) {
  if (last == Phase::Volt)
    return;

  // Types first: every later pass (and the weight packer) sees the dtypes
  // the kernels compute in, and a weight FP16 cannot hold is reported
  // before any work is spent on it.
  LegalizeDtypesOptions legalize;
  legalize.residualDtype = options.residualDtype;
  pm.addPass(createLegalizeDtypes(legalize));
  // Fuse the dequantization before sharding, so that the sharding rules see
  // one quantized GEMM (with its per-part global scales) rather than a
  // decoded weight that would be split as if it were dense.
  pm.addPass(createFuseDequantIntoGemm());
  // Sharding changes every shape; it runs before the elementwise fusions so
  // that the all-reduces it inserts sit where the fusions expect a residual
  // branch to arrive complete.
  pm.addPass(createShardTensorParallel());
  if (last == Phase::Sharded)
    return;

  // Element-wise fusions need the final (per-rank) graph: the residual add
  // after an all-reduce fuses with the norm that follows it.
  pm.addPass(createFuseElementwise());
  // Kernels are chosen on the fused, sharded graph: the shapes they serve
  // are one rank's shapes, and a fused epilogue changes which kernel runs.
  pm.addPass(createSelectKernels());
  if (last == Phase::Fused)
    return;

  // From tensors to buffers: every value gets a buffer (or reuses its input
  // for in-place ops) and every op becomes a launch of a plan OpKind.
  pm.addPass(createLowerToVexec());
  if (last == Phase::Vexec)
    return;

  // Only now are all buffers known: place them and size the KV cache.
  pm.addPass(createPlanMemory());
}

namespace {

struct PipelineCommandLine : mlir::PassPipelineOptions<PipelineCommandLine> {
  Option<Phase> emit{*this, "emit", llvm::cl::desc("the last phase"), llvm::cl::init(Phase::Memory),
                     llvm::cl::values(clEnumValN(Phase::Sharded, "sharded", "one rank's shard"),
                                      clEnumValN(Phase::Fused, "fused", "kernels chosen"),
                                      clEnumValN(Phase::Vexec, "vexec", "buffers and launches"),
                                      clEnumValN(Phase::Memory, "memory", "the memory plan"))};
  Option<std::string> residualDtype{*this, "residual-dtype",
                                    llvm::cl::desc("the residual stream's dtype: f16 or f32"),
                                    llvm::cl::init("f16")};
};

} // namespace

void registerPipeline() {
  mlir::PassPipelineRegistration<PipelineCommandLine>(
      "volt-pipeline", "voltc's passes from an imported module to the memory plan",
      [](mlir::OpPassManager &pm, const PipelineCommandLine &cl) {
        PipelineOptions options;
        options.residualDtype = cl.residualDtype;
        buildPipeline(pm, cl.emit, options);
      });
}

} // namespace volt::pipeline
