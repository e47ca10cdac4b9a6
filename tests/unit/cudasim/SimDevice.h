//===- SimDevice.h - FakeCuda launches run by the SIMT emulator -*- C++ -*-===//
//
// Installed as FakeCuda's onLaunch after whatever was installed before (a
// PlanEmulator, whose pointer checks then run first), this runs every
// launch of a plan's kernels as the kernel's host instance (HostKernels.h)
// would run it on the GPU: the module a launch comes from is the plan's
// kernel of that index (the cuda backend loads one module per kernel, in
// plan order), whose Kernel.source names the instance. Device memory in the
// fake is host memory, so the instance reads and writes the device
// pointers of its parameter buffer directly.
//
// PlanEmulator writes the sampler's outputs (cpu::topCandidates of the
// logits) as it checks the launch: they are overwritten with NaN and -1
// before the kernel runs, so that an output the kernel fails to write shows.
//
// MoE routing is discontinuous: where a token's k-th and (k+1)-th router
// logits nearly tie, the last-ulp differences between any two correct
// implementations can pick different experts, and the logits then move
// far more than rounding does. Every moe_router launch's smallest such
// margin is recorded (tests/support/RouterTies.h), so that a disagreement
// can be told apart from an expert swap on a near tie.
//
// Once the test has failed (a pointer the checks rejected, a launch with
// the wrong block or shared memory), launches are counted but no longer
// run: a kernel given a bad pointer would crash the test rather than fail
// it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/plan/PlanFile.h"
#include "runtime/support/Status.h"
#include "tests/support/RouterTies.h"
#include "tests/unit/cuda/FakeCuda.h"
#include "tests/unit/cudasim/HostKernels.h"

#include <limits>
#include <map>
#include <string>
#include <vector>

namespace volt::cudasim {

class SimDevice {
public:
  SimDevice(const plan::LoadedPlan &plan, cuda::testing::FakeCuda &fake);
  /// Fails naming every plan kernel that has no host instance.
  Status ready() const;
  /// Chains onto the fake's onLaunch.
  void install();

  /// Launches run, by kernel name; launches that came from a graph.
  std::map<std::string, size_t> launches;
  size_t graphLaunches = 0;
  /// Launches not run because the test had already failed.
  size_t skipped = 0;

  /// Per token of the step: the smallest gap between its k-th and
  /// (k+1)-th router logits, relative, over every moe_router launch (every
  /// device) since it was cleared.
  testing::RouterGaps routerGaps;

private:
  struct Entry {
    std::string key;
    const HostKernel *host = nullptr;
    uint32_t threads = 0, dynamicShared = 0;
    /// moe_router's experts and top_k (0: another kernel).
    uint32_t experts = 0, topK = 0;
  };
  void run(const cuda::testing::FakeLaunch &launch);
  void poisonSamplerOutputs(const cuda::testing::FakeLaunch &launch);
  void recordRouterMargin(const cuda::testing::FakeLaunch &launch, uint32_t experts, uint32_t topK);

  cuda::testing::FakeCuda &fake_;
  /// By plan kernel (= module) index.
  std::vector<Entry> kernels_;
  /// Plan.sampler's kernel (-1: none) and k.
  int samplerKernel_ = -1;
  uint32_t samplerK_ = 0;
};

} // namespace volt::cudasim
