//===- Norm.h - RmsNorm and AddRmsNorm ---------------------------*- C++ -*-===//
//
// OpKind RmsNorm and AddRmsNorm of runtime/schema/plan.fbs. The residual
// stream may be kept in FP16 or FP32 (Plan.residual_dtype); normalised
// outputs are FP16 activations.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/ThreadPool.h"
#include "runtime/cpu/Types.h"

#include <cstdint>

namespace volt::cpu {

struct RmsNormParams {
  /// Rows to normalise (T * rows_per_token).
  int64_t rows = 0;
  /// Elements per row.
  int64_t dim = 0;
  float eps = 1e-6f;
  /// Element type of `in` (F16 activations, or an F32 residual stream).
  DType inDtype = DType::F16;
};

/// out[r, i] = fp16(x[r, i] * (1 / sqrt(sum(x[r]^2) / dim + eps)) * w[i]),
/// all in FP32 with one rounding at the store. `in` [rows, dim] may be `out`
/// when both are F16. `weight` is FP16 [dim]; `out` FP16 [rows, dim].
void rmsNorm(const RmsNormParams &params, const void *in, const uint16_t *weight, uint16_t *out,
             ThreadPool &pool);

struct AddRmsNormParams {
  int64_t tokens = 0;
  /// Hidden size H.
  int64_t dim = 0;
  float eps = 1e-6f;
  DType inDtype = DType::F16;
  DType residualDtype = DType::F16;
};

/// residual[t] = round_residual(residual[t] + in[t]) in FP32, then
/// out[t] = rmsNorm(residual[t]) of the value as stored (so the next layer's
/// residual and this norm read the same numbers). `in` [T, H], `residual`
/// [T, H] in/out, `weight` FP16 [H], `out` FP16 [T, H].
void addRmsNorm(const AddRmsNormParams &params, const void *in, void *residual,
                const uint16_t *weight, uint16_t *out, ThreadPool &pool);

} // namespace volt::cpu
