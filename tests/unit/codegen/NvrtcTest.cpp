//===- NvrtcTest.cpp - loading NVRTC and compiling with it ----------------===//
#include "tests/unit/codegen/NvrtcAvailable.h"

#include <gtest/gtest.h>

#include <string>

namespace volt::codegen {
namespace {

const char *kKernel = R"(
extern "C" __global__ void add_one(float *x) { x[threadIdx.x] += 1.0f; }
)";

TEST(Nvrtc, NamesEveryLibraryTriedWhenNoneFits) {
  auto n = Nvrtc::load(70, {"libvolt-no-such-nvrtc.so.1", "libvolt-no-such-nvrtc.so.2"});
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.message().find("libvolt-no-such-nvrtc.so.1: not found"), std::string::npos)
      << n.message();
  EXPECT_NE(n.message().find("libvolt-no-such-nvrtc.so.2: not found"), std::string::npos);
  EXPECT_NE(n.message().find("NVRTC 11.8 is the last to target sm_70"), std::string::npos);
  EXPECT_NE(n.message().find(kNvrtcLibraryEnv), std::string::npos);
}

TEST(Nvrtc, RefusesALibraryWithoutTheArchitecture) {
  // No NVRTC supports sm_1; the message lists what the library does support.
  auto n = Nvrtc::load(1);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.message().find("no NVRTC library that compiles for sm_1 "), std::string::npos)
      << n.message();
}

TEST(Nvrtc, LoadsOneForSm70) {
  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  EXPECT_TRUE(nvrtc->supports(70));
  EXPECT_FALSE(nvrtc->version().empty());
  EXPECT_FALSE(nvrtc->library().empty());
}

TEST(Nvrtc, CompilesCubinAndPtx) {
  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  NvrtcSource source{"add_one.cu", kKernel, {}};
  auto cubin = nvrtc->compile(source, 70, NvrtcOutput::Cubin, {"--std=c++17"});
  ASSERT_TRUE(cubin.ok()) << cubin.message();
  ASSERT_GT(cubin->cubin.size(), 64u);
  EXPECT_EQ(cubin->cubin[0], 0x7f);
  EXPECT_EQ(cubin->cubin[1], 'E');
  // The same compile keeps its PTX.
  EXPECT_NE(cubin->ptx.find(".target sm_70"), std::string::npos);
  auto ptx = nvrtc->compile(source, 70, NvrtcOutput::Ptx, {"--std=c++17"});
  ASSERT_TRUE(ptx.ok()) << ptx.message();
  EXPECT_TRUE(ptx->cubin.empty());
  const std::string &text = ptx->ptx;
  EXPECT_NE(text.find(".target sm_70"), std::string::npos);
  EXPECT_NE(text.find(".entry add_one"), std::string::npos);
  EXPECT_EQ(text.find('\0'), std::string::npos);
}

TEST(Nvrtc, HeadersAreFoundByName) {
  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  NvrtcSource source{"main.cu",
                     "#include \"lib/two.cuh\"\n"
                     "extern \"C\" __global__ void k(int *x) { *x = VOLT_TWO; }\n",
                     {{"lib/two.cuh", "#define VOLT_TWO 2\n"}}};
  auto ptx = nvrtc->compile(source, 70, NvrtcOutput::Ptx, {});
  EXPECT_TRUE(ptx.ok()) << ptx.message();
}

TEST(Nvrtc, CompileErrorsCarryTheLog) {
  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  NvrtcSource source{"broken.cu", "extern \"C\" __global__ void k() { undeclared_thing(); }\n", {}};
  auto cubin = nvrtc->compile(source, 70, NvrtcOutput::Cubin, {});
  ASSERT_FALSE(cubin.ok());
  EXPECT_NE(cubin.message().find("broken.cu"), std::string::npos) << cubin.message();
  EXPECT_NE(cubin.message().find("undeclared_thing"), std::string::npos) << cubin.message();
}

} // namespace
} // namespace volt::codegen
