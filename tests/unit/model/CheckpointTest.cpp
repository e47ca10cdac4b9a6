// Model directories: single file, sharded, config only; missing, truncated
// and escaping shards.
#include "compiler/mkmodel/MkModel.h"
#include "compiler/model/Checkpoint.h"

#include "TestFiles.h"

#include <gtest/gtest.h>

namespace volt::model {
namespace {

using testing::freshDir;
using testing::slurp;
using testing::spit;

std::filesystem::path writeTiny(const std::string &name, int shards) {
  auto dir = freshDir(name);
  mkmodel::Options o;
  o.family = "qwen3-moe";
  o.format = mkmodel::Format::ModelOpt;
  o.shards = shards;
  o.outDir = dir;
  auto st = mkmodel::writeModel(o);
  EXPECT_TRUE(st.ok()) << st.message();
  return dir;
}

TEST(Checkpoint, SingleFile) {
  auto dir = writeTiny("ck-single", 1);
  auto ckpt = Checkpoint::open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.message();
  EXPECT_TRUE(ckpt->hasWeights());
  EXPECT_EQ(ckpt->layout(), "model.safetensors");
  EXPECT_NE(ckpt->find("model.embed_tokens.weight"), nullptr);
  EXPECT_EQ(ckpt->find("nope"), nullptr);
}

TEST(Checkpoint, ShardedMatchesSingle) {
  auto single = Checkpoint::open(writeTiny("ck-one", 1));
  auto sharded = Checkpoint::open(writeTiny("ck-three", 3));
  ASSERT_TRUE(single.ok() && sharded.ok()) << sharded.message();
  EXPECT_EQ(sharded->files().size(), 3u);
  EXPECT_EQ(sharded->tensors().size(), single->tensors().size());
  EXPECT_EQ(sharded->dataBytes(), single->dataBytes());
  for (const Tensor &t : single->tensors()) {
    const Tensor *other = sharded->find(t.name());
    ASSERT_NE(other, nullptr) << t.name();
    ASSERT_EQ(other->data().size(), t.data().size());
    EXPECT_TRUE(std::equal(t.data().begin(), t.data().end(), other->data().begin())) << t.name();
  }
}

TEST(Checkpoint, ConfigOnlyDirectoryHasNoWeights) {
  auto dir = freshDir("ck-empty");
  spit(dir / "config.json", "{}");
  auto ckpt = Checkpoint::open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.message();
  EXPECT_FALSE(ckpt->hasWeights());
}

TEST(Checkpoint, MissingShardIsNamedWithATensorThatNeedsIt) {
  auto dir = writeTiny("ck-missing", 3);
  std::filesystem::remove(dir / "model-00002-of-00003.safetensors");
  auto ckpt = Checkpoint::open(dir);
  ASSERT_FALSE(ckpt.ok());
  EXPECT_NE(ckpt.message().find("model-00002-of-00003.safetensors: shard is missing"),
            std::string::npos)
      << ckpt.message();
  EXPECT_NE(ckpt.message().find("needed by tensor 'model.layers."), std::string::npos)
      << ckpt.message();
}

TEST(Checkpoint, TruncatedShardIsNamedWithTheTensor) {
  auto dir = writeTiny("ck-trunc", 3);
  auto shard = dir / "model-00003-of-00003.safetensors";
  std::filesystem::resize_file(shard, std::filesystem::file_size(shard) - 100);
  auto ckpt = Checkpoint::open(dir);
  ASSERT_FALSE(ckpt.ok());
  EXPECT_NE(ckpt.message().find("model-00003-of-00003.safetensors: truncated: tensor '"),
            std::string::npos)
      << ckpt.message();
  EXPECT_EQ(ckpt.message().find("shape"), std::string::npos)
      << "a truncated file is not reported as a shape mismatch: " << ckpt.message();
}

TEST(Checkpoint, ShardNameMustStayInsideTheModelDirectory) {
  for (const char *bad : {"../outside.safetensors", "/etc/passwd", "a/../../b.safetensors", ""}) {
    auto dir = freshDir("ck-escape");
    spit(dir / "model.safetensors.index.json",
         std::string(R"({"weight_map": {"x": ")") + bad + "\"}}");
    auto ckpt = Checkpoint::open(dir);
    ASSERT_FALSE(ckpt.ok()) << bad;
    EXPECT_NE(ckpt.message().find("inside the model directory"), std::string::npos)
        << ckpt.message();
  }
}

TEST(Checkpoint, IndexListsATensorTheShardLacks) {
  auto dir = writeTiny("ck-lacks", 2);
  std::string index = slurp(dir / "model.safetensors.index.json");
  auto pos = index.find("\"weight_map\": {");
  ASSERT_NE(pos, std::string::npos);
  index.insert(pos + 15, "\n    \"model.ghost.weight\": \"model-00001-of-00002.safetensors\",");
  spit(dir / "model.safetensors.index.json", index);
  auto ckpt = Checkpoint::open(dir);
  ASSERT_FALSE(ckpt.ok());
  EXPECT_NE(ckpt.message().find("'model.ghost.weight'"), std::string::npos) << ckpt.message();
}

TEST(Checkpoint, MalformedIndex) {
  auto dir = freshDir("ck-badindex");
  spit(dir / "model.safetensors.index.json", "{\"weight_map\": [}");
  auto ckpt = Checkpoint::open(dir);
  ASSERT_FALSE(ckpt.ok());
  EXPECT_NE(ckpt.message().find("model.safetensors.index.json:1:"), std::string::npos)
      << ckpt.message();
}

} // namespace
} // namespace volt::model
