//===- TensorParallel.h - how a model splits over GPUs ----------*- C++ -*-===//
//
// The sharding rules, stated once, for checking a spec early (`voltc
// check`) and estimating what each GPU holds:
//
//   q            column-parallel: heads split across ranks
//   k, v         heads split when num_key_value_heads divides by the rank
//                count; otherwise each rank holds one KV head (replicated
//                across the ranks that share it)
//   o            row-parallel (input split), followed by an all-reduce
//   gate, up     column-parallel along the MLP/expert width
//   down         row-parallel along the width, followed by an all-reduce;
//                an NVFP4 down projection needs each rank's slice of the
//                width to be whole 16-element blocks
//   router, shared_expert_gate, norms      replicated
//   embed_tokens, lm_head                  vocab-parallel (rows split)
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/model/Model.h"
#include "runtime/support/Status.h"

#include <cstdint>

namespace volt::model {

/// The tensor-parallel sizes volt compiles for.
inline constexpr int kTensorParallelSizes[] = {1, 2, 4, 8};

/// Checks that `config` splits over `tp` ranks; the error names the
/// dimension and says why.
Status checkTensorParallel(const ModelConfig &config, int tp, bool nvfp4);

/// Whether a linear layer is quantized when an unquantized checkpoint is
/// quantized to NVFP4 (`weights: {quantize: nvfp4}`): everything but the
/// router, the shared-expert gate and the LM head, as ModelOpt's recipes do.
bool quantizedByDefault(const Linear &linear);

/// What one rank holds, in bytes, as stored on the GPU: NVFP4 linears as
/// packed data + block scales + global scale; dense weights in FP16.
struct RankWeights {
  uint64_t nvfp4Bytes = 0;
  uint64_t denseBytes = 0;
  uint64_t total() const { return nvfp4Bytes + denseBytes; }
};

/// The weights of the largest rank for `tp`. With `quantize`, dense linears
/// that quantizedByDefault() are counted as NVFP4.
RankWeights weightsPerRank(const Model &model, int tp, bool quantize);

} // namespace volt::model
