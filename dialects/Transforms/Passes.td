//===- Passes.td - volt's passes ---------------------------*- tablegen -*-===//
//
// One pass per file; the file name, the flag and the lit test share a name
// (LegalizeDtypes.cpp, --volt-legalize-dtypes, legalize-dtypes.mlir). The
// order they run in, and why, is in compiler/pipeline/Pipeline.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef VOLT_PASSES
#define VOLT_PASSES

include "mlir/Pass/PassBase.td"

def LegalizeDtypes : Pass<"volt-legalize-dtypes", "mlir::ModuleOp"> {
  let summary = "Converts BF16 (and FP32 weights) to the FP16 the kernels compute in";
  let description = [{
    Volta has no BF16 arithmetic and volt's kernels compute in FP16 on every
    SKU: BF16 activations and weights become FP16, and so do FP32 weights.
    A dense weight whose recorded `max_abs` exceeds FP16's range (65504) is
    an error naming it, or, with `allow-fp32-weights`, stays FP32. The
    residual stream (the embedding and every residual add) takes
    `residual-dtype`. FP32 activations by design (router and LM-head logits,
    routing weights) are untouched.
  }];
  let options = [
    Option<"residualDtype", "residual-dtype", "std::string", /*default=*/"\"f16\"",
           "dtype of the residual stream: f16 or f32">,
    Option<"allowFp32Weights", "allow-fp32-weights", "bool", /*default=*/"false",
           "keep weights beyond FP16's range in FP32 instead of failing">,
  ];
}

def FuseDequantIntoGemm : Pass<"volt-fuse-dequant-into-gemm", "mlir::ModuleOp"> {
  let summary = "Rewrites linear(dequant(w)) into a quantized linear";
  let description = [{
    `volt.linear(x, volt.dequant(packed, scales))` becomes `volt.qlinear(x,
    packed, scales)`, and `volt.moe_experts` over dequantized expert weights
    becomes `volt.moe_qexperts`: the NVFP4 weight is decoded inside the GEMM,
    block by block, and never materialised. Each part of a fused projection
    keeps its own global scale.
  }];
}

def ShardTensorParallel : Pass<"volt-shard-tensor-parallel", "mlir::ModuleOp"> {
  let summary = "Splits the step over tensor-parallel ranks and inserts collectives";
  let description = [{
    Rewrites the step into one rank's program (SPMD): attention heads are
    split (KV heads too when they divide, else replicated), o_proj and down
    projections become row-parallel and an all-reduce completes each
    residual branch, MoE experts are split along their width (the router is
    replicated; one all-reduce after the experts and the shared expert),
    the embedding and LM head are split by vocabulary rows when the ranks
    divide the vocabulary (else replicated). Weights record their slice in
    `shards`. A dimension that cannot be split is an error naming it.
  }];
  let options = [
    Option<"tensorParallelSize", "tensor-parallel-size", "int64_t", /*default=*/"0",
           "ranks (0: the module's volt.deployment value)">,
  ];
}

def FuseElementwise : Pass<"volt-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "Fuses residual add + RMSNorm, QK-norm + RoPE, and SiLU·mul into GEMMs";
  let description = [{
    `add` + `rms_norm` become `add_rms_norm`; `qk_norm` + `rope` (or `rope`
    alone) become `qk_norm_rope`; `silu_mul` of a quantized gate|up linear
    becomes that linear's `silu_mul` epilogue. Each saves a pass over the
    activations through memory.
  }];
}

def SelectKernels : Pass<"volt-select-kernels", "mlir::ModuleOp"> {
  let summary = "Chooses the kernel and tile configuration of every op for the SKU";
  let description = [{
    For each compute op, records in `volt.kernels` which kernel template
    serves it at which token counts (a decode-size variant for small token
    counts, a prefill-size one above) and with which tile configuration,
    from the SKU facts in the module's `volt.target` (shared memory per
    block, SM count, memory bandwidth), not from architecture checks. The
    cpu target runs every op on the reference backend and gets no kernels.
  }];
}

def LowerToVexec : Pass<"volt-lower-to-vexec", "mlir::ModuleOp"> {
  let summary = "Lowers the step function to vexec: buffers, weights and launches";
  let description = [{
    Every tensor becomes a buffer (sized per token and fixed bytes, at the
    largest step), every weight a `vexec.weight` the packer will write, and
    every op a `vexec.launch` of its OpKind with its parameters and kernel
    variants. Ops that update a value in place (QK-norm + RoPE, the residual
    of add_rms_norm, collectives) reuse their input's buffer.
  }];
  let dependentDialects = ["::volt::vexec::VexecDialect"];
}

def PlanMemory : Pass<"vexec-plan-memory", "mlir::ModuleOp"> {
  let summary = "Places every buffer in one arena and sizes the cache groups";
  let description = [{
    Liveness over the step program at the largest token count
    (max_num_batched_tokens), then offsets in one activation arena (largest
    buffers first, best fit), reported against the lower bound (the largest
    sum of simultaneously live bytes). The cache groups (the paged KV group
    of every vexec.kv_cache layer, a state group per vexec.state name) lie in
    one cache region: each state group holds max_num_seqs slots per layer,
    and the KV cache gets what is left of gpu_memory_utilization × memory −
    CUDA context − NCCL − weights − arena − workspace − state, up to
    max_num_seqs full-length sequences (more can never be resident). When
    one max_model_len sequence does not fit, compiling fails with a table of
    what each part needs, and the module keeps `vexec.shortfall` (budget,
    bytes left for the KV cache, bytes needed) for a driver that re-plans
    with other spec values to say which would make it fit (voltc does).
  }];
}

#endif // VOLT_PASSES
