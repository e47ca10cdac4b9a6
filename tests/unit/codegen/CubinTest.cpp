//===- CubinTest.cpp - resource facts read from NVRTC's cubins ------------===//
#include "compiler/codegen/Cubin.h"
#include "tests/unit/codegen/NvrtcAvailable.h"

#include <gtest/gtest.h>

#include <cstring>

namespace volt::codegen {
namespace {

// Two kernels: one keeps everything in registers; the other calls double
// sin, whose Payne-Hanek slow path keeps an array in local memory (a stack
// frame, as register spills make).
const char *kKernels = R"(
extern "C" __global__ void __launch_bounds__(128) tidy(float *out, const float *in) {
  __shared__ float tile[256];
  tile[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x + 1) % 128];
}
extern "C" __global__ void spills(double *out) {
  out[threadIdx.x] = sin(out[threadIdx.x]);
}
extern "C" __global__ void __launch_bounds__(64) planes(float *out) {
  out[blockIdx.z * 64 + threadIdx.x] = 1.0f;
}
)";

std::vector<uint8_t> compileCubin(Nvrtc &nvrtc) {
  auto cubin = nvrtc.compile({"resources.cu", kKernels, {}}, 70, NvrtcOutput::Cubin, {});
  EXPECT_TRUE(cubin.ok()) << cubin.message();
  return cubin.ok() ? cubin->cubin : std::vector<uint8_t>{};
}

TEST(Cubin, ReadsRegistersSharedAndLocalMemory) {
  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  auto bytes = compileCubin(*nvrtc);
  auto info = readCubin(bytes, "resources.cubin");
  ASSERT_TRUE(info.ok()) << info.message();
  EXPECT_EQ(info->smVersion, 70);
  const CubinKernel *tidy = info->find("tidy");
  const CubinKernel *spills = info->find("spills");
  ASSERT_TRUE(tidy && spills);
  EXPECT_GT(tidy->registers, 0u);
  EXPECT_LE(tidy->registers, 255u);
  EXPECT_EQ(tidy->staticSharedBytes, 1024u);
  EXPECT_EQ(tidy->localBytes, 0u);
  EXPECT_EQ(tidy->maxThreadsPerBlock, 128u);
  EXPECT_GT(spills->localBytes, 0u);
  EXPECT_EQ(spills->staticSharedBytes, 0u);
  EXPECT_EQ(spills->maxThreadsPerBlock, 0u);
}

TEST(Cubin, ReadsAttributesWithoutValues) {
  // A kernel that reads blockIdx.z carries a record with no value (format 1,
  // still four bytes); the records after it are read in step.
  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  auto bytes = compileCubin(*nvrtc);
  auto info = readCubin(bytes, "resources.cubin");
  ASSERT_TRUE(info.ok()) << info.message();
  const CubinKernel *planes = info->find("planes");
  ASSERT_TRUE(planes);
  EXPECT_EQ(planes->maxThreadsPerBlock, 64u);
  EXPECT_GT(planes->registers, 0u);
}

TEST(Cubin, ReadsNewerCubinsToo) {
  // NVRTC 12/13 write ELF ABI version 8, whose e_flags keep the SM version
  // in their second byte.
  VOLT_REQUIRE_NVRTC(nvrtc, 75);
  auto cubin = nvrtc->compile({"resources.cu", kKernels, {}}, 75, NvrtcOutput::Cubin, {});
  ASSERT_TRUE(cubin.ok()) << cubin.message();
  auto info = readCubin(cubin->cubin, "resources.cubin");
  ASSERT_TRUE(info.ok()) << info.message();
  EXPECT_EQ(info->smVersion, 75);
  ASSERT_TRUE(info->find("tidy"));
  EXPECT_EQ(info->find("tidy")->staticSharedBytes, 1024u);
}

TEST(Cubin, DamagedFilesAreErrorsNotCrashes) {
  EXPECT_FALSE(readCubin(std::vector<uint8_t>{}, "empty").ok());
  std::vector<uint8_t> text(100, 'x');
  auto notElf = readCubin(text, "notes.txt");
  ASSERT_FALSE(notElf.ok());
  EXPECT_EQ(notElf.message(), "notes.txt: not a little-endian ELF64 file (a cubin was expected)");

  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  auto bytes = compileCubin(*nvrtc);
  // Every truncation before the section header table (near the end of the
  // file) fails cleanly; none reads past the buffer (ASan builds check).
  uint64_t sectionHeaders = 0;
  std::memcpy(&sectionHeaders, bytes.data() + 0x28, 8);
  for (size_t size = 0; size < sectionHeaders; size += 97) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(size));
    auto r = readCubin(cut, "cut");
    if (r.ok())
      ADD_FAILURE() << "a cubin cut to " << size << " bytes was accepted";
  }
  // Flipping bytes anywhere never crashes.
  for (size_t i = 0; i < bytes.size(); i += 13) {
    std::vector<uint8_t> flipped = bytes;
    flipped[i] ^= 0xA5;
    (void)readCubin(flipped, "flipped");
  }
  std::vector<uint8_t> otherMachine = bytes;
  otherMachine[0x12] = 62; // x86-64
  auto wrong = readCubin(otherMachine, "host.o");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.message(), "host.o: ELF machine 62, expected 190 (NVIDIA CUDA)");
}

} // namespace
} // namespace volt::codegen
