//===- CudaBackend.h - runs a plan's step program on NVIDIA GPUs -*- C++ -*-===//
//
// The GPU counterpart of runtime/executor/CpuBackend: one GPU per
// tensor-parallel rank, driven from one process (a thread per rank during a
// step), each rank's weights, activation arena and paged KV cache in its
// device memory, every op run as the kernel launch the plan lists for the
// step's token count, all-reduces and all-gathers through NCCL. Kernels
// load from the plan's cubin when the device is the plan's architecture,
// and from its PTX (compiled by the driver) on newer GPUs, so that a plan
// for sm_70 also runs on an sm_90 machine.
//
// The driver and NCCL are loaded with dlopen (CudaDriver.h, Nccl.h): on a
// machine without them create() fails with their names.
//
// Decode steps (one token per sequence) run as CUDA graphs, one per batch
// size bucket, captured on first use and replayed after; the inputs are
// padded to the bucket (StepInputs.h, StepProgram.h). Inputs are staged in
// pinned host memory and uploaded asynchronously, and a step's logits come
// back in chunks whose copy-out overlaps the DMA of the next chunk; a step
// can be submitted before the previous one is finished (submitStep,
// finishStep). With a plan that has a sampler, runStepCandidates runs the
// sampler's kernel (top_candidates) on rank 0 after the step, inside the
// decode graph when the step is captured, and copies back only each
// sequence's candidates; the rows stay on the device for fetchRows.
// docs/design/cuda-backend.md says what is captured, what overlaps and
// what crosses PCIe.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/StepBackend.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/StepOperands.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace volt::cuda {

class CudaDriver;
class Nccl;
struct StepAction;

struct CudaBackendOptions {
  /// The device of each rank (default: 0, 1, ...).
  std::vector<int> devices;
  /// Libraries to load (empty: CudaDriver/Nccl defaults).
  std::vector<std::string> driverLibraries;
  std::vector<std::string> ncclLibraries;
  /// Tables to use instead of loading the libraries: a fake driver and
  /// NCCL in tests.
  std::shared_ptr<CudaDriver> driver;
  std::shared_ptr<Nccl> nccl;
  /// Run decode steps as CUDA graphs. VOLT_CUDA_GRAPHS=0 in the
  /// environment turns them off as well (for debugging a kernel, or to
  /// compare).
  bool graphs = true;
  /// The logits come back in chunks of about this many bytes (at least a
  /// row), so that copying one chunk to the caller overlaps the DMA of the
  /// next.
  uint64_t logitsChunkBytes = 2 << 20;
  /// Where the backend's notes go (a capture that failed and the direct
  /// launches that replace it); stderr when empty.
  std::function<void(const std::string &)> log;
  /// Benchmarking only: do not upload the plan's weight packs (which need
  /// not be loaded) but fill each rank's weight memory on the device with
  /// deterministic pseudo-random contents (SyntheticWeights.h). The speed
  /// is the plan's; the outputs are meaningless.
  bool syntheticWeights = false;
};

/// How the steps ran so far.
struct GraphStats {
  /// Buckets captured, and captures that failed (the bucket then runs with
  /// direct launches).
  uint64_t captures = 0, captureFailures = 0;
  /// Steps run by launching a bucket's graphs (the capturing step too).
  uint64_t graphSteps = 0;
  /// Steps run with direct launches (prefill, mixed, or no graph).
  uint64_t directSteps = 0;
};

class CudaBackend : public engine::StepBackend {
public:
  /// Loads the driver, checks every rank's device against the plan (arch,
  /// free memory), uploads the weights (or, with syntheticWeights, fills
  /// their memory) and loads the kernels. `plan` must
  /// outlive the backend.
  static Result<std::unique_ptr<CudaBackend>> create(const plan::LoadedPlan &plan,
                                                     const CudaBackendOptions &options = {});
  ~CudaBackend() override;

  /// submitStep then finishStep; refused while a submitted step is in
  /// flight. After a driver or NCCL failure in any step, every later
  /// runStep, submitStep and finishStep is refused with that failure:
  /// work may be left queued on some GPUs, and the backend must be
  /// created again.
  Status runStep(const engine::StepBatch &batch, std::span<float> logits) override;
  /// The draft program's step (plans compiled with speculative method
  /// mtp), with direct launches; as runStep otherwise.
  bool hasDraftProgram() const override;
  Status runDraftStep(const engine::StepBatch &batch, std::span<float> logits) override;

  /// Plan.sampler's k; 0 when the plan has none.
  int32_t candidatesPerSeq() const override;
  /// Runs a step (refused while a submitted step is in flight), then the
  /// sampler over its logits on rank 0 with `temperatures` (S values, not
  /// NaN), and copies back S x k ids and values and S x 3 stats into
  /// `out`'s spans, which must be exactly that long; out.k is set. The
  /// logits stay on the device until the next step is submitted.
  Status runStepCandidates(const engine::StepBatch &batch, std::span<const float> temperatures,
                           engine::StepCandidates &out) override;
  /// Copies the rows of sequences `seqs` (ascending, below the last
  /// step's S) of the last runStepCandidates step from the device into
  /// `rows` (seqs.size() x vocab floats). Refused when the last step
  /// submitted was not a runStepCandidates step that finished.
  Status fetchRows(std::span<const int32_t> seqs, std::span<float> rows) override;

  /// Checks `batch`, stages and uploads its inputs and enqueues its work on
  /// every rank's stream, and returns without waiting for the device: the
  /// caller may prepare the next step meanwhile. `batch`'s arrays may be
  /// reused as soon as it returns. At most two steps are in flight; the
  /// second runs on the device after the first.
  Result<uint64_t> submitStep(const engine::StepBatch &batch);
  /// Waits for the logits of step `ticket` (the oldest in flight) and
  /// writes them, S x vocab floats, to `logits`.
  Status finishStep(uint64_t ticket, std::span<float> logits);

  /// The batch sizes decode steps are captured for (empty: graphs off).
  std::vector<uint32_t> decodeBuckets() const;
  GraphStats graphStats() const;

  /// Per rank: "device 0: NVIDIA H200 (sm_90), kernels from PTX".
  std::vector<std::string> describeDevices() const;
  /// Device memory allocated, all ranks together.
  uint64_t deviceBytes() const;

private:
  struct Shared;
  struct Rank;
  struct StepMode;
  explicit CudaBackend(const plan::LoadedPlan &plan);
  Status checkBatch(const engine::StepBatch &batch,
                    plan::Program program = plan::Program::Target) const;
  /// runStep and runDraftStep: one step of `program`, submitted and finished.
  Status run(const engine::StepBatch &batch, std::span<float> logits, plan::Program program);
  /// submitStep, for logits or (with `temperatures`) for candidates, of the
  /// target's program or the draft program.
  Result<uint64_t> submit(const engine::StepBatch &batch, const float *temperatures,
                          plan::Program program = plan::Program::Target);
  /// Stages, uploads and enqueues `rank`'s part of a step. A capture that
  /// fails is not an error: the step runs with direct launches and
  /// `captureError` says why.
  Status submitRank(Rank &rank, const engine::StepBatch &batch, const float *temperatures,
                    const StepMode &mode, std::string &captureError);
  /// The sampler's launch over the first `seqs` logits rows of rank 0.
  StepAction samplerAction(const Rank &rank, uint32_t seqs) const;
  /// runStepCandidates' waits and copies, once `ticket` is taken off the
  /// queue.
  Status waitForCandidates(uint64_t ticket, uint64_t seqs, engine::StepCandidates &out);
  /// Whether the other ranks' part of step `ticket` failed.
  Status checkOtherRanks(uint64_t ticket);
  /// finishStep's waits and copies, once `ticket` is taken off the queue.
  Status waitForLogits(uint64_t ticket, uint64_t rows, std::span<float> logits);

  const plan::LoadedPlan &plan_;
  std::unique_ptr<Shared> shared_;
  std::vector<std::unique_ptr<Rank>> ranks_;
};

} // namespace volt::cuda
