//===- StepOperands.h - a step program's operands and inputs ---*- C++ -*-===//
//
// What every backend must decide the same way about a rank's step
// program, decided here once: where each operand lies (its region and
// byte offset: a backend adds its base address of the region), how many
// rows an activation operand has in a step, its element type, and whether
// a step's inputs fit the plan. The cpu and cuda backends both use these,
// so that they cannot drift apart.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/EngineConfig.h"
#include "runtime/engine/StepBackend.h"
#include "runtime/schema/PlanFormat.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <span>
#include <utility>

namespace volt::plan {

/// The memory an operand lives in.
enum class Region : uint8_t {
  /// The rank's activation arena (Rank.arena_bytes).
  Arena,
  /// The rank's weight pack.
  Weights,
  /// A step input array (OperandPlace.input).
  Input,
  /// The step output (f32 [R, vocab_size] logits).
  Output,
  /// The rank's cache region (Rank.cache_bytes; runtime/plan/Caches.h).
  Cache,
  /// The kernel workspace (Rank.workspace_bytes).
  Workspace,
  /// The backend-held hidden rows (StepOutput.Hidden): [max_num_batched_tokens,
  /// hidden_size] FP16, kept between steps.
  Hidden,
};

/// Which of a rank's programs a step runs.
enum class Program : uint8_t {
  /// ops[0, draft_ops_begin) (all ops when the rank has no draft program).
  Target,
  /// ops[draft_ops_begin, end).
  Draft,
};

/// The ops of `program` on `rank`: [first, last).
std::pair<uint32_t, uint32_t> programOps(const Rank &rank, Program program);


struct OperandPlace {
  Region region = Region::Arena;
  /// Region::Input: which array.
  StepInput input = StepInput::Tokens;
  /// Bytes from the start of the region (of the array, for inputs).
  uint64_t offset = 0;
};

/// Where `operand` of `rank` lies; an error naming it when it is outside
/// the plan.
Result<OperandPlace> operandPlace(const Rank &rank, const Operand &operand);

/// Rows of an activation operand in a step of `tokens` tokens and
/// `logitsRows` logits rows: the logits and per-row buffers (no per-token
/// bytes: what follows the gather of the logits rows) hold R rows, the
/// others (the hidden rows too) T.
uint64_t operandRows(const Rank &rank, const Operand &operand, uint64_t tokens,
                     uint64_t logitsRows);

/// The plan's most logits rows per step (Limits.max_logits_rows, or
/// max_num_seqs for plans without it).
uint32_t maxLogitsRows(const Limits &limits);

/// The engine's limits as a loaded plan (PlanFile.h: checked) fixes them:
/// vocabulary, the paged KV group's blocks, the state slots, Limits, prefix
/// caching, speculative decoding, EOS ids and seed. The serving options
/// (sampler threads, logprobs) are left at their defaults.
engine::EngineConfig engineConfigOf(const Plan &plan);

/// The element type of an activation operand: its buffer's, F32 for the
/// logits, F16 otherwise (the hidden rows too).
DType operandDtype(const Rank &rank, const Operand &operand);

/// The array of `input` in `batch`.
std::span<const int32_t> stepInput(const engine::StepBatch &batch, StepInput input);

/// Checks `batch` against `plan`: token, sequence and logits-row counts
/// within the limits, every array of the size the step needs, logits rows
/// ascending token rows of the step, token ids in the
/// vocabulary, KV slots and block table entries inside the KV cache, state
/// slots inside the state groups (or -1) and no slot used twice. A plan
/// without state groups accepts an empty state_slots array.
///
/// A draft step (`program` Draft) needs hidden_rows of T entries inside
/// [0, max_num_batched_tokens) and no state snapshots, and may leave
/// state_slots empty; a target step needs hidden_rows empty.
Status checkStep(const Plan &plan, const engine::StepBatch &batch,
                 Program program = Program::Target);

} // namespace volt::plan
