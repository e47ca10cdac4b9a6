//===- CpuBackend.h - runs a plan's step program on the CPU ------*- C++ -*-===//
//
// The embedded default and the reference: executes every op of the plan
// with the cpu ops (runtime/cpu) over host memory laid out exactly as the
// plan says — one arena per rank at the planned offsets, weights read in
// place from the mapped packs, a paged FP16 KV cache — with each
// tensor-parallel rank a thread and an in-process all-reduce between them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/StepBackend.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/support/Status.h"

#include <memory>
#include <span>

namespace volt::executor {

struct CpuBackendOptions {
  /// Threads in all (split over the ranks); 0: one per hardware thread.
  int threads = 0;
  /// Sampling candidates per sequence (a power of two up to 256; 0: none,
  /// the engine samples whole rows). The cpu backend gains nothing from
  /// them, its rows being in host memory already; they let tests run the
  /// engine's candidate path, which the cuda backend takes, on real plans.
  int candidates = 0;
};

class CpuBackend : public engine::StepBackend {
public:
  /// Prepares the ranks of `plan` (which must outlive the backend) for the
  /// cpu: allocates each rank's arena and KV cache. Plans of any target run
  /// here: a GPU plan's ops and weights are the cpu plan's.
  static Result<std::unique_ptr<CpuBackend>> create(const plan::LoadedPlan &plan,
                                                    const CpuBackendOptions &options = {});
  ~CpuBackend() override;

  Status runStep(const engine::StepBatch &batch, std::span<float> logits) override;
  int32_t candidatesPerSeq() const override;
  Status runStepCandidates(const engine::StepBatch &batch, std::span<const float> temperatures,
                           engine::StepCandidates &out) override;
  Status fetchRows(std::span<const int32_t> seqs, std::span<float> rows) override;

  /// Host bytes held for arenas, KV caches and (with candidates) the last
  /// step's rows, all ranks together.
  uint64_t hostBytes() const;
  int threadsPerRank() const;

private:
  struct RankState;
  explicit CpuBackend(const plan::LoadedPlan &plan);
  void runRank(RankState &rank, const engine::StepBatch &batch, std::span<float> logits);

  const plan::LoadedPlan &plan_;
  std::vector<std::unique_ptr<RankState>> ranks_;
  struct Shared;
  std::unique_ptr<Shared> shared_;
};

} // namespace volt::executor
