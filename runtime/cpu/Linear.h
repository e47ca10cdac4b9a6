//===- Linear.h - Linear (FP16 or FP8 weight), QLinear (NVFP4) ---*- C++ -*-===//
//
// OpKind Linear and QLinear of runtime/schema/plan.fbs: out = x * W^T (+ b)
// over FP16 activations, accumulated in FP32.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/ThreadPool.h"
#include "runtime/cpu/Types.h"

#include <cstdint>
#include <span>

namespace volt::cpu {

struct LinearParams {
  int64_t tokens = 0;
  /// K.
  int64_t inFeatures = 0;
  /// N.
  int64_t outFeatures = 0;
  /// F16, or F32 for the router's and the LM head's logits.
  DType outDtype = DType::F16;
  Numerics numerics = Numerics::Reference;
};

/// out[t, n] = round_out(dot(in[t], weight[n]) + bias[n]): products and the
/// sum in FP32 (Kernels.h order), bias added in FP32, one rounding at the
/// store. `in` FP16 [T, K]; `weight` FP16 [N, K]; `bias` FP16 [N] or null;
/// `out` [T, N] in outDtype.
void linear(const LinearParams &params, const uint16_t *in, const uint16_t *weight,
            const uint16_t *bias, void *out, ThreadPool &pool);

/// Linear over an FP8 weight kept as E4M3 with a scale per row:
/// out[t, n] = round_out(dot(in[t], e4m3 row n) * rowScales[n] + bias[n]),
/// each E4M3 value exact in FP32, the dot as for linear(), the row's scale
/// multiplying the FP32 sum once, then the bias added.
void fp8Linear(const LinearParams &params, const uint16_t *in, const Fp8Matrix &weight,
               const uint16_t *bias, void *out, ThreadPool &pool);

struct QLinearParams {
  int64_t tokens = 0;
  /// K, a multiple of 16.
  int64_t inFeatures = 0;
  /// N: the rows of all parts together.
  int64_t outFeatures = 0;
  /// Rows of each fused part (q, k, v / gate, up) in order; empty for one
  /// part of N rows.
  std::span<const uint32_t> partRows;
  /// The FP32 global scale (a multiplier) of each part.
  std::span<const float> globalScales;
  DType outDtype = DType::F16;
  Epilogue epilogue = Epilogue::None;
  Numerics numerics = Numerics::Reference;
};

/// out[t, n] = round_out(dot(in[t], w[n]) * globalScale[part(n)] + bias[n]),
/// where w[n, i] = e2m1 * e4m3 of the NVFP4 weight, formed exactly in FP32;
/// the dot as for linear(); the part's global scale multiplies the FP32 sum
/// once, then the bias is added. `weight` is [N, K]. With the SiluMul
/// epilogue, out is [T, N/2] and out[t, c] = round_out(silu(y[c]) * y[c +
/// N/2]) where y is the FP32 value above before rounding (gate and up are
/// not rounded on their own), silu(g) = g / (1 + exp(-g)).
void qlinear(const QLinearParams &params, const uint16_t *in, const Nvfp4Matrix &weight,
             const uint16_t *bias, void *out, ThreadPool &pool);

} // namespace volt::cpu
