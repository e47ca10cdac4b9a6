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
// Once the test has failed (a pointer the checks rejected, a launch with
// the wrong block or shared memory), launches are counted but no longer
// run: a kernel given a bad pointer would crash the test rather than fail
// it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/plan/PlanFile.h"
#include "runtime/support/Status.h"
#include "tests/unit/cuda/FakeCuda.h"
#include "tests/unit/cudasim/HostKernels.h"

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

private:
  struct Entry {
    std::string key;
    const HostKernel *host = nullptr;
    uint32_t threads = 0, dynamicShared = 0;
  };
  void run(const cuda::testing::FakeLaunch &launch);
  void poisonSamplerOutputs(const cuda::testing::FakeLaunch &launch);

  cuda::testing::FakeCuda &fake_;
  /// By plan kernel (= module) index.
  std::vector<Entry> kernels_;
  /// Plan.sampler's kernel (-1: none) and k.
  int samplerKernel_ = -1;
  uint32_t samplerK_ = 0;
};

} // namespace volt::cudasim
