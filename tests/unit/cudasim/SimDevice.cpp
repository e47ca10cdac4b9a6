//===- SimDevice.cpp ------------------------------------------------------===//
#include "tests/unit/cudasim/SimDevice.h"

#include "runtime/support/Strings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

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
    if (e.key.starts_with("moe_router(")) {
      e.experts = keyValue(e.key, "experts");
      e.topK = keyValue(e.key, "top_k");
    }
    kernels_.push_back(std::move(e));
  }
  if (const plan::Sampler *sampler = plan.plan().sampler()) {
    samplerKernel_ = static_cast<int>(sampler->kernel());
    samplerK_ = sampler->k();
  }
}

void SimDevice::poisonSamplerOutputs(const cuda::testing::FakeLaunch &launch) {
  // top_candidates(logits, temperatures, ids, values, stats, seqs).
  ASSERT_EQ(launch.params.size(), 5 * 8 + 4u) << "the sampler's parameter buffer";
  uint64_t pointers[5];
  int32_t seqs = 0;
  std::memcpy(pointers, launch.params.data(), sizeof(pointers));
  std::memcpy(&seqs, launch.params.data() + sizeof(pointers), sizeof(seqs));
  ASSERT_GT(seqs, 0);
  const uint64_t S = static_cast<uint64_t>(seqs), k = samplerK_;
  const uint64_t counts[3] = {S * k, S * k, S * 3};
  for (int i = 0; i < 3; ++i) {
    uint8_t *at = fake_.deviceBytes(launch.device, pointers[2 + i], counts[i] * 4,
                                    "the sampler's output " + std::to_string(i));
    ASSERT_NE(at, nullptr);
    for (uint64_t j = 0; j < counts[i]; ++j) {
      const int32_t id = -1;
      const float nan = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(at + j * 4, i == 0 ? static_cast<const void *>(&id) : &nan, 4);
    }
  }
}

void SimDevice::recordRouterMargin(const cuda::testing::FakeLaunch &launch, uint32_t experts,
                                   uint32_t topK) {
  // moe_router(logits f32[T, E], ids, weights, count).
  ASSERT_EQ(launch.params.size(), 3 * 8 + 4u) << "moe_router's parameter buffer";
  uint64_t logitsAt = 0;
  int32_t count = 0;
  std::memcpy(&logitsAt, launch.params.data(), 8);
  std::memcpy(&count, launch.params.data() + 24, 4);
  if (count <= 0 || topK == 0 || topK >= experts)
    return;
  const std::vector<float> logits =
      fake_.readFloats(launch.device, logitsAt, static_cast<size_t>(count) * experts);
  ASSERT_EQ(logits.size(), static_cast<size_t>(count) * experts);
  routerGaps.record(logits, static_cast<size_t>(count), experts, topK);
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
  if (launch.module == samplerKernel_) {
    poisonSamplerOutputs(launch);
    if (::testing::Test::HasFailure())
      return;
  }
  HostLaunch l;
  l.grid = {launch.grid[0], launch.grid[1], launch.grid[2]};
  l.block = {launch.block[0], launch.block[1], launch.block[2]};
  l.sharedBytes = launch.sharedBytes;
  l.params = launch.params.data();
  l.paramBytes = launch.params.size();
  const std::string error = e.host->launch(l);
  ASSERT_TRUE(error.empty()) << e.key << ": " << error;
  if (e.experts > 0)
    recordRouterMargin(launch, e.experts, e.topK);
  ++launches[launch.kernel];
  graphLaunches += launch.fromGraph;
}

} // namespace volt::cudasim
