//===- OpContext.h - what a cpu op runner sees of its rank -------*- C++ -*-===//
//
// The cpu backend runs each op of a step program through the runner of its
// kind (runtime/executor/ops/): a function that maps the plan op's
// operands and typed params onto a cpu op (runtime/cpu). The runners are
// declared here from runtime/schema/Ops.def, so that a new op kind gets
// its runner in a file of its own and the backend's dispatch table picks
// it up; a runner reads its operands through the OpContext: their
// addresses (runtime/plan/StepOperands.h decides where each lies), rows
// and element types.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/Communicator.h"
#include "runtime/cpu/ThreadPool.h"
#include "runtime/cpu/Types.h"
#include "runtime/engine/StepBackend.h"
#include "runtime/plan/StepOperands.h"
#include "runtime/schema/PlanFormat.h"

#include <cstdint>
#include <span>
#include <vector>

namespace volt::executor {

/// The host memory of one rank's regions (runtime/plan/StepOperands.h).
struct RankMemory {
  uint8_t *arena = nullptr;
  const uint8_t *weights = nullptr;
  uint8_t *caches = nullptr;
  uint8_t *workspace = nullptr;
  /// Where this rank writes the step output (rank 0: the caller's logits).
  float *output = nullptr;
  /// The rank's hidden rows (StepOutput.Hidden; null without a draft
  /// program).
  uint8_t *hidden = nullptr;
};

class OpContext {
public:
  OpContext(const plan::Rank &rank, uint32_t rankIndex, const plan::Op &op,
            const engine::StepBatch &batch, const RankMemory &memory, cpu::ThreadPool &pool,
            cpu::Communicator &communicator, std::vector<uint16_t> &scratch,
            cpu::Numerics numerics = cpu::Numerics::Reference)
      : rank(rank), rankIndex(rankIndex), op(op), batch(batch), pool(pool),
        communicator(communicator), scratch(scratch), numerics(numerics), memory_(memory) {}

  const plan::Rank &rank;
  /// Rank.rank: the tensor-parallel rank running the op.
  uint32_t rankIndex;
  const plan::Op &op;
  const engine::StepBatch &batch;
  cpu::ThreadPool &pool;
  cpu::Communicator &communicator;
  /// FP16 rows on their way to an FP32 buffer.
  std::vector<uint16_t> &scratch;
  /// How the GEMMs multiply (CpuBackendOptions::numerics).
  cpu::Numerics numerics;

  /// The step's token count T and sequence count S.
  int64_t tokens() const { return batch.numTokens; }
  int64_t seqs() const { return batch.numSeqs; }
  /// R: the step's logits rows (StepBatch::numRows).
  int64_t logitsRows() const { return batch.numRows(); }

  unsigned operandCount() const { return op.operands()->size(); }
  const plan::Operand &operand(unsigned i) const { return *op.operands()->Get(i); }
  /// The host address of operand `i` (the loader checked every operand).
  uint8_t *pointer(unsigned i) const;
  uint16_t *f16(unsigned i) const { return reinterpret_cast<uint16_t *>(pointer(i)); }
  int32_t *i32(unsigned i) const { return reinterpret_cast<int32_t *>(pointer(i)); }
  float *f32(unsigned i) const { return reinterpret_cast<float *>(pointer(i)); }
  /// Rows of activation operand `i` this step (T, or S per sequence).
  int64_t rows(unsigned i) const;
  cpu::DType dtype(unsigned i) const;
  /// Operand `i` as a weight entry (null when it is not one).
  const plan::WeightEntry *weight(unsigned i) const;
  /// Operand `i` as an NVFP4 matrix, its fused parts' rows, its global scales.
  cpu::Nvfp4Matrix nvfp4(unsigned i) const;
  cpu::Fp8Matrix fp8(unsigned i) const;
  std::span<const uint32_t> partRows(unsigned i) const;
  std::span<const float> globalScales(unsigned i) const;

private:
  RankMemory memory_;
};

/// An op kind's cpu runner.
using OpRunner = void (*)(OpContext &c);

// The runner of each op kind (runtime/executor/ops/), by Ops.def.
#define VOLT_OP(Kind, Summary) void run##Kind(OpContext &c);
#include "runtime/schema/Ops.def"

/// The runner of `kind`; null past the last kind.
OpRunner runnerOf(plan::OpKind kind);

} // namespace volt::executor
