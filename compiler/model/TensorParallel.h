//===- TensorParallel.h - how a model splits over GPUs ----------*- C++ -*-===//
//
// The tensor-parallel rules (dialects/Transforms/ShardingRules.h, which
// the sharding pass applies too) applied to a model description: checking a
// spec early (`voltc check`) and estimating what each GPU holds.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/model/Model.h"
#include "runtime/support/Status.h"

#include <cstdint>

namespace volt::model {

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
  /// FP8 linears scaled per tensor or per row, kept as E4M3 (a byte per
  /// weight, 4 per row for its scale), experts too where every expert's
  /// gate, up and down are; block-scaled FP8 counts as dense FP16.
  uint64_t fp8Bytes = 0;
  uint64_t denseBytes = 0;
  uint64_t total() const { return nvfp4Bytes + fp8Bytes + denseBytes; }
};

/// The weights of the largest rank for `tp`. With `quantize`, dense linears
/// that quantizedByDefault() are counted as NVFP4.
RankWeights weightsPerRank(const Model &model, int tp, bool quantize);

} // namespace volt::model
