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
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/StepBackend.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/support/Status.h"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace volt::cuda {

struct CudaBackendOptions {
  /// The device of each rank (default: 0, 1, ...).
  std::vector<int> devices;
  /// Libraries to load (empty: CudaDriver/Nccl defaults).
  std::vector<std::string> driverLibraries;
  std::vector<std::string> ncclLibraries;
};

class CudaBackend : public engine::StepBackend {
public:
  /// Loads the driver, checks every rank's device against the plan (arch,
  /// free memory), uploads the weights and loads the kernels. `plan` must
  /// outlive the backend.
  static Result<std::unique_ptr<CudaBackend>> create(const plan::LoadedPlan &plan,
                                                     const CudaBackendOptions &options = {});
  ~CudaBackend() override;

  Status runStep(const engine::StepBatch &batch, std::span<float> logits) override;

  /// Per rank: "device 0: NVIDIA H200 (sm_90), kernels from PTX".
  std::vector<std::string> describeDevices() const;
  /// Device memory allocated, all ranks together.
  uint64_t deviceBytes() const;

private:
  struct Shared;
  struct Rank;
  explicit CudaBackend(const plan::LoadedPlan &plan);
  Status runRank(Rank &rank, const engine::StepBatch &batch, std::span<float> logits);

  const plan::LoadedPlan &plan_;
  std::unique_ptr<Shared> shared_;
  std::vector<std::unique_ptr<Rank>> ranks_;
};

} // namespace volt::cuda
