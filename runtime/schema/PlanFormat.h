//===- PlanFormat.h - the plan format's version and file names ---*- C++ -*-===//
#pragma once

#include "runtime/schema/plan_generated.h"

#include <string>

namespace volt::plan {

/// The version this build reads and writes. Bump it on any change an older
/// runtime would misread (plan.fbs's header says when). 2: typed params per
/// op kind (the OpParams union of ops.fbs); cache groups (Rank.caches)
/// with state slots in place of one KV cache indexed by layer. 3: the
/// recurrent ops' snapshot_slots operand (StepInput.StateSnapshots) before
/// their output; GridDim.per_row and ArgKind.RowCount (launches over the
/// logits rows of a speculative verify step). 4: the draft program
/// (Rank.draft_ops_begin, StepInput.HiddenRows, StepOutput.Hidden; op
/// kinds GatherHidden and Concat), which an older runtime would run as
/// part of the target step. 5: WeightLayout.Fp8RowScaled (FP8 weights
/// kept as E4M3 with row scales), which an older runtime would read as
/// dense FP16.
inline constexpr uint32_t kFormatVersion = 5;

/// Whether the plan's ranks carry a draft program (Rank.draft_ops_begin).
inline bool hasDraftProgram(const Plan &plan) {
  return plan.ranks() && plan.ranks()->size() > 0 && plan.ranks()->Get(0)->draft_ops_begin() > 0;
}

/// Weight-pack entries start on this boundary.
inline constexpr uint64_t kPackAlignment = 256;

/// The first vocabulary row an Embedding's table holds on rank `rank`: a
/// vocab-parallel table holds rows [rank * vocab_rows, (rank + 1) *
/// vocab_rows), a replicated one all rows.
inline uint32_t vocabStart(uint32_t vocabRows, bool vocabParallel, uint32_t rank) {
  return vocabParallel ? rank * vocabRows : 0;
}

/// The params table type of op kind `kind` (Op.params_type).
inline OpParams paramsTypeOf(OpKind kind) {
  return static_cast<OpParams>(static_cast<uint16_t>(kind) + 1);
}

/// "weights.rank0.bin": the pack of rank `rank`, beside the plan file.
inline std::string packFileName(uint32_t rank) {
  return "weights.rank" + std::to_string(rank) + ".bin";
}

} // namespace volt::plan
