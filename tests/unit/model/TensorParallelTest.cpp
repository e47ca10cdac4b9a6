// The sharding rules as `voltc check` applies them.
#include "compiler/mkmodel/MkModel.h"
#include "compiler/model/TensorParallel.h"

#include "TestFiles.h"

#include <gtest/gtest.h>

namespace volt::model {
namespace {

ModelConfig config(const std::string &family, const std::string &preset = "tiny") {
  auto j = mkmodel::presetConfig(family, preset);
  auto c = parseModelConfig(*j, "config.json");
  EXPECT_TRUE(c.ok()) << c.message();
  return *c;
}

TEST(TensorParallel, TinyModelsSplitEveryWay) {
  for (const char *f : {"qwen3-moe", "qwen2-moe", "mixtral", "qwen3", "llama"})
    for (int tp : {1, 2, 4})
      EXPECT_TRUE(checkTensorParallel(config(f), tp, true).ok()) << f << " tp=" << tp;
}

TEST(TensorParallel, ErrorsNameTheDimension) {
  ModelConfig c = config("qwen3-moe");
  auto st = checkTensorParallel(c, 3, false);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not one of 1, 2, 4, 8"), std::string::npos);

  c.numAttentionHeads = 6;
  c.numKeyValueHeads = 2;
  st = checkTensorParallel(c, 4, false);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("does not divide num_attention_heads 6"), std::string::npos)
      << st.message();

  c = config("qwen3-moe");
  c.numAttentionHeads = 24;
  c.numKeyValueHeads = 3;
  st = checkTensorParallel(c, 2, false);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("num_key_value_heads 3"), std::string::npos) << st.message();

  c = config("qwen3-moe");
  c.moeIntermediateSize = 96;
  EXPECT_TRUE(checkTensorParallel(c, 2, true).ok()) << "96 / 2 = 48 = 3 blocks";
  st = checkTensorParallel(c, 4, true);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not whole 16-element NVFP4 blocks"), std::string::npos)
      << st.message();
  EXPECT_TRUE(checkTensorParallel(c, 4, false).ok()) << "dense weights split anywhere";
  c.moeIntermediateSize = 100;
  c.numAttentionHeads = 8;
  st = checkTensorParallel(c, 8, false);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("does not divide moe_intermediate_size 100"), std::string::npos);
}

TEST(TensorParallel, KvHeadsReplicateWhenFewerThanRanks) {
  ModelConfig c = config("qwen3-moe", "qwen3-30b-a3b");
  EXPECT_TRUE(checkTensorParallel(c, 8, true).ok()) << "4 KV heads over 8 ranks: replicated";
}

TEST(TensorParallel, Qwen3_30B_WeightsPerGpu) {
  auto dir = testing::freshDir("tp-30b");
  mkmodel::Options o;
  o.preset = "qwen3-30b-a3b";
  o.configOnly = true;
  o.outDir = dir;
  ASSERT_TRUE(mkmodel::writeModel(o).ok());
  auto m = loadModel(dir);
  ASSERT_TRUE(m.ok()) << m.message();
  RankWeights one = weightsPerRank(*m, 1, false);
  RankWeights two = weightsPerRank(*m, 2, false);
  // By hand: experts 48 layers x 128 x 3 x 768 x 2048 weights at 0.5625
  // bytes = 16.3 GB; attention 48 x (4096 + 512 + 512) x 2048 + 48 x 2048 x
  // 4096 weights = 0.90 B at 0.5625 = 0.51 GB; embed + lm_head 2 x 151936 x
  // 2048 x 2 bytes = 1.24 GB; routers 48 x 128 x 2048 x 2 = 25 MB.
  EXPECT_NEAR(one.nvfp4Bytes / 1e9, 16.3 + 0.51, 0.05);
  EXPECT_NEAR(one.denseBytes / 1e9, 1.24 + 0.025, 0.01);
  // Everything but the replicated routers and norms halves; KV heads (4)
  // split over 2 ranks.
  EXPECT_NEAR(static_cast<double>(two.total()), (one.total() - 25e6) / 2.0 + 25e6, 2e6);
}

} // namespace
} // namespace volt::model
