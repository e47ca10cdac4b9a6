//===- Activation.h - SiluMul and SigmoidGateAdd -----------------*- C++ -*-===//
//
// OpKind SiluMul, SigmoidGateAdd and SigmoidMul of runtime/schema/Ops.def: elementwise,
// FP32 arithmetic between FP16 loads and one FP16 store.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/ThreadPool.h"
#include "runtime/cpu/Types.h"

#include <cstdint>

namespace volt::cpu {

struct SiluMulParams {
  /// Rows n (T, or T * k for MoE experts).
  int64_t rows = 0;
  /// I: half the width of a row of `in`.
  int64_t dim = 0;
};

/// out[r, i] = fp16((g / (1 + exp(-g))) * u) with g = in[r, i],
/// u = in[r, I + i], in FP32. `in` FP16 [n, 2I] (gate | up), `out` FP16
/// [n, I], not overlapping `in`.
void siluMul(const SiluMulParams &params, const uint16_t *in, uint16_t *out, ThreadPool &pool);

struct SigmoidGateAddParams {
  int64_t tokens = 0;
  /// Hidden size H.
  int64_t dim = 0;
  /// The gate's element type (the output of a Linear with N = 1).
  DType gateDtype = DType::F16;
};

/// out[t, i] = fp16(out[t, i] + (1 / (1 + exp(-gate[t]))) * value[t, i]),
/// in FP32. `out` FP16 [T, H] in/out, `value` FP16 [T, H], `gate` [T, 1].
void sigmoidGateAdd(const SigmoidGateAddParams &params, uint16_t *out, const uint16_t *value,
                    const void *gate, ThreadPool &pool);

struct SigmoidMulParams {
  int64_t rows = 0;
  int64_t dim = 0;
};

/// out[r, i] = fp16(x * (1 / (1 + exp(-g)))) with x = in[r, i],
/// g = gate[r, i], in FP32. All FP16 [n, dim]; `out` may be `in`.
void sigmoidMul(const SigmoidMulParams &params, const uint16_t *in, const uint16_t *gate,
                uint16_t *out, ThreadPool &pool);

} // namespace volt::cpu
