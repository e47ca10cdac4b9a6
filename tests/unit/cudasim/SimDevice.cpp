//===- SimDevice.cpp ------------------------------------------------------===//
#include "tests/unit/cudasim/SimDevice.h"

#include "runtime/support/Strings.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace volt::cudasim {
namespace {

/// The value of `name=` in a request key (0: absent).
uint32_t keyValue(const std::string &key, const std::string &name) {
  for (const std::string &prefix : {"(" + name + "=", " " + name + "="}) {
    const size_t at = key.find(prefix);
    if (at != std::string::npos)
      return static_cast<uint32_t>(std::strtoul(key.c_str() + at + prefix.size(), nullptr, 10));
  }
  return 0;
}

} // namespace

SimDevice::SimDevice(const plan::LoadedPlan &plan, cuda::testing::FakeCuda &fake) : fake_(fake) {
  std::map<std::string, const HostKernel *> byKey;
  for (const HostKernel &k : hostKernels())
    byKey[k.key] = &k;
  for (const plan::Kernel *k : *plan.plan().kernels()) {
    Entry e;
    e.key = k->source() ? k->source()->str() : "";
    auto it = byKey.find(e.key);
    e.host = it == byKey.end() ? nullptr : it->second;
    e.threads = keyValue(e.key, "threads");
    e.dynamicShared = keyValue(e.key, "dynamic_shared");
    kernels_.push_back(std::move(e));
  }
}

Status SimDevice::ready() const {
  std::vector<std::string> missing;
  for (const Entry &e : kernels_)
    if (!e.host)
      missing.push_back(e.key);
  if (missing.empty())
    return Status::success();
  return Error("no host instance of " + joinList(missing, "; ") +
               " (the generated instances come from the plans of tests/unit/cudasim/"
               "SimModels.h: a plan the test compiles differently from the generator?)");
}

void SimDevice::install() {
  auto before = fake_.onLaunch;
  fake_.onLaunch = [this, before](const cuda::testing::FakeLaunch &launch) {
    if (before)
      before(launch);
    run(launch);
  };
}

void SimDevice::run(const cuda::testing::FakeLaunch &launch) {
  if (::testing::Test::HasFailure()) {
    ++skipped;
    return;
  }
  ASSERT_GE(launch.module, 0);
  ASSERT_LT(static_cast<size_t>(launch.module), kernels_.size())
      << "a launch from module " << launch.module << ", beyond the plan's kernels";
  const Entry &e = kernels_[static_cast<size_t>(launch.module)];
  ASSERT_NE(e.host, nullptr) << "no host instance of " << e.key;
  ASSERT_EQ(launch.kernel, e.host->name) << e.key;
  ASSERT_EQ(launch.block[0] * launch.block[1] * launch.block[2], e.threads)
      << e.key << ": launched with another block size than compiled for";
  ASSERT_GE(launch.sharedBytes, e.dynamicShared)
      << e.key << ": launched with less dynamic shared memory than it uses";
  HostLaunch l;
  l.grid = {launch.grid[0], launch.grid[1], launch.grid[2]};
  l.block = {launch.block[0], launch.block[1], launch.block[2]};
  l.sharedBytes = launch.sharedBytes;
  l.params = launch.params.data();
  l.paramBytes = launch.params.size();
  const std::string error = e.host->launch(l);
  ASSERT_TRUE(error.empty()) << e.key << ": " << error;
  ++launches[launch.kernel];
  graphLaunches += launch.fromGraph;
}

} // namespace volt::cudasim
