//===- LaunchArgs.h - a plan launch as the driver takes it ------*- C++ -*-===//
//
// Pure functions between a plan's Launch (runtime/schema/plan.fbs) and
// cuLaunchKernel: which launch serves a step, its grid at the step's token
// and sequence counts, and its parameter buffer. Kept apart from the
// backend so that they are tested on machines without a GPU.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/schema/PlanFormat.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace volt::cuda {

/// The launch of `op` that serves a step of `tokens` tokens: the first (they
/// are sorted by max_tokens) whose max_tokens covers it; null when none does.
const plan::Launch *selectLaunch(const plan::Op &op, uint32_t tokens);

/// ceil((per_token T + per_seq S + per_row R + fixed) / divisor), for a
/// step of T tokens, S sequences and R logits rows.
uint64_t gridExtent(const plan::GridDim *rule, uint64_t tokens, uint64_t seqs, uint64_t rows);

/// The device address of an operand (a buffer, weight, step input or
/// output, or a layer's KV cache).
using OperandAddress = std::function<Result<uint64_t>(const plan::Operand &)>;

/// The kernel's parameter buffer: the arguments in order, each at its
/// natural alignment (8 bytes for pointers, 4 for 32-bit values), which is
/// how the CUDA ABI lays out the parameters of the templates' entry points
/// (a by-value array of floats is a run of 4-byte values).
Result<std::vector<uint8_t>> packArguments(const plan::Launch &launch,
                                           const OperandAddress &address, uint32_t tokens,
                                           uint32_t seqs, uint32_t rows);

} // namespace volt::cuda
