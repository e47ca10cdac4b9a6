//===- TemplatesTest.cpp - embedded templates and their instantiation -----===//
#include "compiler/codegen/Templates.h"
#include "compiler/codegen/KernelSource.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

namespace volt::codegen {
namespace {

TEST(Templates, EveryFileUnderTemplatesIsEmbeddedVerbatim) {
  std::set<std::string> paths;
  for (const TemplateFile &f : templateFiles()) {
    paths.insert(std::string(f.path));
    std::ifstream in(std::string(VOLT_SOURCE_DIR) + "/templates/" + std::string(f.path),
                     std::ios::binary);
    ASSERT_TRUE(in) << f.path;
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), f.text) << f.path;
  }
  for (const char *expected : {"common/volt.cuh",     "common/nvfp4.cuh",
                               "common/gemv.cuh",     "common/gemm.cuh",
                               "nvfp4_gemv.cu",       "nvfp4_gemm.cu",
                               "dense_gemv.cu",       "dense_gemm.cu",
                               "nvfp4_moe_gemv.cu",   "nvfp4_moe_gemm.cu",
                               "dense_moe_gemv.cu",   "dense_moe_gemm.cu",
                               "paged_attention.cu",  "paged_attention_tiled.cu",
                               "embedding.cu",        "rms_norm.cu",
                               "add_rms_norm.cu",     "qk_norm_rope.cu",
                               "silu_mul.cu",         "moe_router.cu",
                               "sigmoid_gate_add.cu", "gather_rows.cu",
                               "moe_align.cu",        "moe_combine.cu"})
    EXPECT_TRUE(paths.count(expected)) << expected;
}

TEST(Templates, NoTemplateIncludesACudaHeader) {
  // NVRTC 11.8 cannot parse CUDA 13's headers; self-contained templates
  // compile with every NVRTC.
  for (const TemplateFile &f : templateFiles()) {
    EXPECT_EQ(f.text.find("#include <"), std::string_view::npos) << f.path;
    EXPECT_EQ(f.text.find("cuda_fp16"), std::string_view::npos) << f.path;
  }
}

TEST(Instantiate, ConstantsBecomeDefinesBeforeTheTemplate) {
  KernelRequest r{"silu_mul", {}, 256, 0};
  r.set("dim", 768);
  auto source = instantiate(r);
  ASSERT_TRUE(source.ok()) << source.message();
  EXPECT_EQ(source->name, "silu_mul.instance.cu");
  EXPECT_NE(source->text.find("#define VOLT_DIM 768\n#define VOLT_THREADS 256\n#include "
                              "\"silu_mul.cu\"\n"),
            std::string::npos)
      << source->text;
  EXPECT_EQ(source->headers.size(), templateFiles().size());
}

TEST(Instantiate, KeysAreCanonical) {
  KernelRequest a{"nvfp4_gemv", {}, 256, 0}, b{"nvfp4_gemv", {}, 256, 0};
  a.set("n", 4).set("k", 64);
  b.set("k", 64).set("n", 4);
  EXPECT_EQ(a.key(), b.key());
  EXPECT_EQ(a.key(), "nvfp4_gemv(k=64, n=4, threads=256)");
  b.set("n", 8);
  EXPECT_NE(a.key(), b.key());
  EXPECT_EQ(b.get("n"), 8);
  EXPECT_EQ(b.get("absent"), 0);
}

TEST(Instantiate, UnknownTemplatesAndBadNamesAreErrors) {
  auto unknown = instantiate({"nvfp4_gemvv", {}, 32, 0});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.message(), "no kernel template 'nvfp4_gemvv' (templates/nvfp4_gemvv.cu); did "
                               "you mean 'nvfp4_gemv'?");
  KernelRequest bad{"silu_mul", {}, 32, 0};
  bad.set("Dim", 4);
  auto badName = instantiate(bad);
  ASSERT_FALSE(badName.ok());
  EXPECT_EQ(badName.message(),
            "kernel 'silu_mul': constant name 'Dim' is not a lower_snake identifier");
}

} // namespace
} // namespace volt::codegen
