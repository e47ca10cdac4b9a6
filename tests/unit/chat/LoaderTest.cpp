//===- LoaderTest.cpp - finding the chat template of a model directory ----===//
#include "runtime/chat/ChatTemplate.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace volt::chat {
namespace {

namespace fs = std::filesystem;

class ModelDir : public testing::Test {
protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("volt-chat-" + std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string &name, const std::string &text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  std::string renderWith(const Result<ChatTemplate> &t) {
    if (!t.ok())
      return "error: " + t.message();
    auto out = t->apply(nlohmann::ordered_json::parse(R"([{"role":"user","content":"hi"}])"), true,
                        nullptr, nlohmann::ordered_json::object());
    return out.ok() ? *out : "render error: " + out.message();
  }
  fs::path dir_;
};

TEST_F(ModelDir, ReadsTheTokenizerConfigString) {
  write("tokenizer_config.json", R"({"chat_template": "{{ messages[0].content }}!"})");
  EXPECT_EQ(renderWith(loadFromModelDir(dir_.string())), "hi!");
}

TEST_F(ModelDir, PicksANamedTemplateFromAList) {
  write("tokenizer_config.json", R"({"chat_template": [
    {"name": "tool_use", "template": "tools"},
    {"name": "default", "template": "default {{ add_generation_prompt }}"}]})");
  EXPECT_EQ(renderWith(loadFromModelDir(dir_.string())), "default True");
  EXPECT_EQ(renderWith(loadFromModelDir(dir_.string(), "tool_use")), "tools");
  auto missing = loadFromModelDir(dir_.string(), "rag");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.message(), (dir_ / "tokenizer_config.json").string() +
                                   ": field 'chat_template' has no template named 'rag' (it has "
                                   "'tool_use', 'default')");
}

TEST_F(ModelDir, PrefersChatTemplateJinja) {
  write("tokenizer_config.json", R"({"chat_template": "old"})");
  write("chat_template.jinja", "new {{ messages | length }}\n");
  EXPECT_EQ(renderWith(loadFromModelDir(dir_.string())), "new 1");
}

TEST_F(ModelDir, ExplainsWhatIsMissingOrMalformed) {
  auto none = loadFromModelDir(dir_.string());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.message(), dir_.string() + ": no chat template found (expected "
                                            "chat_template.jinja or tokenizer_config.json with a "
                                            "'chat_template' field)");
  write("tokenizer_config.json", R"({"bos_token": "<s>"})");
  auto noField = loadFromModelDir(dir_.string());
  ASSERT_FALSE(noField.ok());
  EXPECT_EQ(noField.message(),
            (dir_ / "tokenizer_config.json").string() +
                ": no 'chat_template' field, and no chat_template.jinja beside it");
  write("tokenizer_config.json", R"({"chat_template": 3})");
  auto wrongType = loadFromModelDir(dir_.string());
  ASSERT_FALSE(wrongType.ok());
  EXPECT_NE(
      wrongType.message().find("expected a string or a list of {name, template}, found number"),
      std::string::npos);
  write("tokenizer_config.json", R"({"chat_template": "{{ x | wordwrap }}"})");
  auto unsupported = loadFromModelDir(dir_.string());
  ASSERT_FALSE(unsupported.ok());
  EXPECT_EQ(unsupported.message(), (dir_ / "tokenizer_config.json").string() +
                                       " chat_template:1:8: unsupported filter 'wordwrap'");
  write("tokenizer_config.json", "{not json");
  auto bad = loadFromModelDir(dir_.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("not valid JSON"), std::string::npos);
}

TEST_F(ModelDir, ReadsSpecialTokens) {
  write("tokenizer_config.json", R"({"bos_token": {"content": "<s>", "lstrip": false},
    "eos_token": "</s>", "pad_token": null, "unk_token": "<unk>"})");
  auto tokens = loadSpecialTokens(dir_.string());
  ASSERT_TRUE(tokens.ok()) << tokens.message();
  EXPECT_EQ(tokens->dump(), R"({"bos_token":"<s>","eos_token":"</s>","unk_token":"<unk>"})");
}

} // namespace
} // namespace volt::chat
