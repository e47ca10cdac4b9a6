//===- CpuBackend.h - runs a plan's step program on the CPU ------*- C++ -*-===//
//
// The embedded default and the reference: executes every op of the plan
// with the cpu ops (runtime/cpu) over host memory laid out exactly as the
// plan says — one arena per rank at the planned offsets, the weights in
// huge pages (or read in place from the mapped packs), a paged FP16 KV
// cache — with each
// tensor-parallel rank a thread and an in-process all-reduce between them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/Types.h"
#include "runtime/engine/StepBackend.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/StepOperands.h"
#include "runtime/support/Status.h"

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace volt::executor {

struct CpuBackendOptions {
  /// Threads in all (split over the ranks); 0: one per hardware thread.
  int threads = 0;
  /// Sampling candidates per sequence (a power of two up to 256; 0: none,
  /// the engine samples whole rows). The cpu backend gains nothing from
  /// them, its rows being in host memory already; they let tests run the
  /// engine's candidate path, which the cuda backend takes, on real plans.
  int candidates = 0;
  /// How the GEMMs multiply: Reference (the bits the GPU kernels and the
  /// goldens are checked against) or Fast (BF16 activations and vdpbf16ps
  /// for every GEMM but the MoE routers'; Reference where the CPU lacks
  /// AVX512_BF16 or VBMI, see cpu::fastNumericsAvailable).
  cpu::Numerics numerics = cpu::Numerics::Reference;
  /// Where the weights are read from.
  cpu::WeightMemory weights = cpu::WeightMemory::Auto;
};

/// One op of the step program, just run on one rank: what an op observer
/// (CpuBackend::setOpObserver) is given. Everything it points to is valid
/// only during the call.
struct OpObservation {
  /// The rank that ran the op (Rank.rank) and the op's index in that
  /// rank's step program (Rank.ops).
  uint32_t rank = 0;
  uint32_t opIndex = 0;
  /// The plan's op (its params and operands) and its kind.
  const plan::Op *op = nullptr;
  plan::OpKind kind = plan::OpKind::Embedding;
  /// Op.name ("model.layers.3.mlp.gate"); empty where the plan has none.
  std::string_view name;
  /// The step's token count T and sequence count S.
  int64_t numTokens = 0;
  int64_t numSeqs = 0;
  /// Per operand, in Op.operands order, the host bytes it covers in this
  /// step, read-only, as they are after the op: an arena buffer's
  /// per_token_bytes * T + fixed_bytes (at most Buffer.bytes), a step
  /// input's array, the step output's S x vocab_size floats (rank 0's
  /// are the caller's logits), a weight's entry in the pack; empty for
  /// KV-cache and workspace operands.
  std::span<const std::span<const uint8_t>> operands;
};

/// Called after each op a rank runs (CpuBackend::setOpObserver).
using OpObserver = std::function<void(const OpObservation &)>;

class CpuBackend : public engine::StepBackend {
public:
  /// Prepares the ranks of `plan` (which must outlive the backend) for the
  /// cpu: allocates each rank's arena and KV cache. Plans of any target run
  /// here: a GPU plan's ops and weights are the cpu plan's.
  static Result<std::unique_ptr<CpuBackend>> create(const plan::LoadedPlan &plan,
                                                    const CpuBackendOptions &options = {});
  ~CpuBackend() override;

  Status runStep(const engine::StepBatch &batch, std::span<float> logits) override;
  bool hasDraftProgram() const override;
  Status runDraftStep(const engine::StepBatch &batch, std::span<float> logits) override;
  int32_t candidatesPerSeq() const override;
  Status runStepCandidates(const engine::StepBatch &batch, std::span<const float> temperatures,
                           engine::StepCandidates &out) override;
  Status fetchRows(std::span<const int32_t> seqs, std::span<float> rows) override;

  /// Host bytes held for arenas, KV caches and (with candidates) the last
  /// step's rows, all ranks together.
  uint64_t hostBytes() const;
  int threadsPerRank() const;
  /// Where the weights are read from and why, for the load message: e.g.
  /// "weights in huge pages (1,404 MiB copied, 1,402 MiB of it in huge
  /// pages)" or "weights read in place from the mapped packs (transparent
  /// huge pages are off: ... is never)".
  const std::string &weightsDescription() const;

  /// Installs `observer` (an empty function removes it), called after every
  /// op of every step on every rank, in each rank's program order, like
  /// llama.cpp's eval callback: for tests that look inside a step (a MoE
  /// router's logits) and for debugging. It is called on the thread that
  /// runs the rank: rank 0's on the thread calling runStep, each other
  /// rank's on a thread of its own, so calls for different ranks overlap
  /// and an observer that gathers across ranks must synchronise; the ranks
  /// meet at every all-reduce, so a slow observer slows them all. Set it
  /// between steps only. Without one, a step pays one branch per op.
  void setOpObserver(OpObserver observer);

private:
  struct RankState;
  explicit CpuBackend(const plan::LoadedPlan &plan);
  Status run(const engine::StepBatch &batch, std::span<float> logits, plan::Program program);
  void runRank(RankState &rank, const engine::StepBatch &batch, std::span<float> logits,
               plan::Program program);
  void observe(RankState &rank, uint32_t opIndex, const plan::Op &op,
               const engine::StepBatch &batch, std::span<float> logits);

  const plan::LoadedPlan &plan_;
  /// Hidden rows the last step left (0 before the first, or without a
  /// draft program): a draft step reads only these.
  int32_t hiddenRowsLeft_ = 0;
  std::vector<std::unique_ptr<RankState>> ranks_;
  struct Shared;
  std::unique_ptr<Shared> shared_;
};

} // namespace volt::executor
