//===- HostKernelsTest.cpp - the host launcher's parameter unpacking ------===//
//
// The launcher reads a driver parameter buffer by the entry point's own
// parameter types, at the CUDA ABI's offsets (each at its natural
// alignment), as the cuda backend packs them.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/cudasim/HostKernels.h"

#include "compiler/codegen/KernelDefs.h"
#include "tests/unit/codegen/NvrtcAvailable.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

namespace volt::cudasim {
namespace {

struct Scales {
  float a, b, c;
};

TEST(SimtHostKernels, ParametersSitAtTheirNaturalAlignment) {
  constexpr auto a = detail::paramOffsets<const uint16_t *, int, float *>();
  EXPECT_EQ(a, (std::array<size_t, 4>{0, 8, 16, 24}));
  constexpr auto b = detail::paramOffsets<int, int, float *>();
  EXPECT_EQ(b, (std::array<size_t, 4>{0, 4, 8, 16}));
  constexpr auto c = detail::paramOffsets<int, const int *, int, Scales>();
  EXPECT_EQ(c, (std::array<size_t, 5>{0, 8, 16, 20, 32}));
  constexpr auto none = detail::paramOffsets<>();
  EXPECT_EQ(none, (std::array<size_t, 1>{0}));
}

void scaleRows(float *out, int rows, Scales s) {
  if (static_cast<int>(blockIdx.x) < rows)
    out[blockIdx.x * blockDim.x + threadIdx.x] = s.a * blockIdx.x + s.b * threadIdx.x + s.c;
}

TEST(SimtHostKernels, RunsEveryThreadWithTheUnpackedArguments) {
  std::vector<float> out(3 * 4, -1.0f);
  float *pointer = out.data();
  const int rows = 2; // the grid has one block more than rows
  const Scales s{100.0f, 1.0f, 0.5f};
  uint8_t buffer[24] = {};
  std::memcpy(buffer, &pointer, 8);
  std::memcpy(buffer + 8, &rows, 4);
  std::memcpy(buffer + 12, &s, 12);
  HostLaunch l;
  l.grid = {3, 1, 1};
  l.block = {4, 1, 1};
  l.params = buffer;
  l.paramBytes = sizeof(buffer);
  ASSERT_EQ(hostLaunch<&scaleRows>(l), "");
  for (int r = 0; r < 3; ++r)
    for (int t = 0; t < 4; ++t)
      EXPECT_EQ(out[r * 4 + t], r < rows ? 100.0f * r + t + 0.5f : -1.0f) << r << ", " << t;
}

TEST(SimtHostKernels, RefusesABufferOfAnotherSize) {
  uint8_t buffer[20] = {};
  HostLaunch l;
  l.params = buffer;
  l.paramBytes = sizeof(buffer);
  EXPECT_EQ(hostLaunch<&scaleRows>(l),
            "a parameter buffer of 20 bytes; the entry point's parameters take 24");
}

// Every kernel of the registry runs in one of the host-emulated GPU plans
// (SimModels.h), against the cpu backend: the generated instance table
// holds at least one instance of each.
TEST(SimtHostKernels, EveryKernelOfTheRegistryRunsInTheEmulatedPlans) {
  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  ASSERT_TRUE(hostKernelsUnavailable().empty()) << hostKernelsUnavailable();
  std::set<std::string> instances;
  for (const HostKernel &k : hostKernels())
    instances.insert(k.name);
  for (const codegen::KernelDef &k : codegen::allKernels())
    EXPECT_TRUE(instances.count(std::string(k.name)))
        << k.name << " runs in none of the plans of SimModels.h";
}

} // namespace
} // namespace volt::cudasim
