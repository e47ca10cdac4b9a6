//===- TokenizerTest.cpp - the Tokenizer API end to end -----------------===//
//
// A small tokenizer.json exercises added-token flags, unknown-token fusing
// and decode; the expected ids were computed by HF `tokenizers` 0.23.3 on
// the same JSON. The real tokenizers under tests/conformance/tokenizer/
// exercise streaming, special tokens and large inputs.
//
//===----------------------------------------------------------------------===//
#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/tokenizer/AddedVocabulary.h"
#include "runtime/tokenizer/Unicode.h"
#include "tests/unit/tokenizer/ConformanceData.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>

namespace volt::tok {
namespace {

using Ids = std::vector<int32_t>;

const char *kMiniJson = R"({"version": "1.0", "truncation": null, "padding": null,
 "added_tokens": [
  {"id": 13, "content": "<sp>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
  {"id": 14, "content": "[L]", "single_word": false, "lstrip": true, "rstrip": false, "normalized": false, "special": false},
  {"id": 15, "content": "[R]", "single_word": false, "lstrip": false, "rstrip": true, "normalized": false, "special": false},
  {"id": 16, "content": "word", "single_word": true, "lstrip": false, "rstrip": false, "normalized": false, "special": false},
  {"id": 17, "content": "<sp>long", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
 "normalizer": null,
 "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
 "post_processor": {"type": "TemplateProcessing",
   "single": [{"SpecialToken": {"id": "<sp>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
   "pair": [], "special_tokens": {"<sp>": {"id": "<sp>", "ids": [13], "tokens": ["<sp>"]}}},
 "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
 "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "continuing_subword_prefix": null,
   "end_of_word_suffix": null, "fuse_unk": true, "byte_fallback": false, "ignore_merges": false,
   "vocab": {"a": 0, "b": 1, "c": 2, "d": 3, "ab": 4, "bc": 5, "abc": 6, "cd": 7, "\u0120": 8, "\u0120a": 9,
             "x": 10, "y": 11, "<unk>": 12},
   "merges": ["b c", "a b", "ab c", "c d", "\u0120 a"]}})";

std::unique_ptr<Tokenizer> mini() {
  auto t = Tokenizer::fromJson(kMiniJson, "mini.json");
  EXPECT_TRUE(t.ok()) << t.message();
  return t.ok() ? std::move(*t) : nullptr;
}

std::unique_ptr<Tokenizer> real(const std::string &name) {
  auto json = testing::readXz(testing::conformanceDir() + name + ".tokenizer.json.xz");
  EXPECT_TRUE(json) << "cannot read " << name << ".tokenizer.json.xz (is xz installed?)";
  if (!json)
    return nullptr;
  auto t = Tokenizer::fromJson(*json, name);
  EXPECT_TRUE(t.ok()) << t.message();
  return t.ok() ? std::move(*t) : nullptr;
}

TEST(Tokenizer, EncodesLikeHuggingFace) {
  auto t = mini();
  ASSERT_TRUE(t);
  // Pairs of (text, ids) from HF tokenizers on kMiniJson.
  const std::vector<std::pair<std::string, Ids>> cases = {
      {"abc", {0, 5}},
      {"abcd", {0, 5, 3}},
      {"ab", {4}},
      {"a b", {0, 8, 1}},
      {"xyz", {10, 11, 12}},
      {"qqq a", {12, 9}}, // unknowns fused
      {"<sp>a", {13, 0}},
      {"<sp>longa", {17, 0}}, // longest added token wins
      {"a  [L]b", {0, 14, 1}},
      {"a[R]  b", {0, 15, 1}}, // lstrip, rstrip
      {" [L]  [R] ", {14, 8, 8, 15}},
      {"word", {16}},
      {"aword", {0, 12, 3}},
      {"word b", {16, 8, 1}}, // single_word
      {"a word!", {0, 8, 16, 12}},
      {"<sp><sp>", {13, 13}},
      {"", {}},
  };
  for (const auto &[text, ids] : cases)
    EXPECT_EQ(t->encode(text, false), ids) << "text: \"" << text << "\"";
  EXPECT_EQ(t->encode("ab", true), (Ids{13, 4}));
  EXPECT_EQ(t->encode("", true), (Ids{13}));
}

TEST(Tokenizer, DecodeSkipsOnlySpecialAddedTokens) {
  auto t = mini();
  ASSERT_TRUE(t);
  EXPECT_EQ(*t->decode(Ids{13, 0}, false), "<sp>a");
  EXPECT_EQ(*t->decode(Ids{13, 0}, true), "a");
  EXPECT_EQ(*t->decode(Ids{14, 8, 8, 15}, true), "[L]  [R]"); // [L], [R] are not special
  EXPECT_EQ(*t->decode(Ids{12, 9}, true), "<unk> a");
  EXPECT_TRUE(t->isSpecial(13));
  EXPECT_FALSE(t->isSpecial(14));
  EXPECT_FALSE(t->isSpecial(0));
}

TEST(Tokenizer, DecodeOfAnUnknownIdNamesIt) {
  auto t = mini();
  ASSERT_TRUE(t);
  auto r = t->decode(Ids{0, 999}, false);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("id 999"), std::string::npos) << r.message();
  EXPECT_FALSE(t->decode(Ids{-1}, false).ok());
}

TEST(Tokenizer, VocabularyLookups) {
  auto t = mini();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->vocabSize(), 18u);
  EXPECT_EQ(t->tokenToId("abc"), 6);
  EXPECT_EQ(t->tokenToId("<sp>long"), 17);
  EXPECT_EQ(t->tokenToId("nope"), std::nullopt);
  EXPECT_EQ(t->idToToken(9), "\u0120a");
  EXPECT_EQ(t->idToToken(15), "[R]");
  EXPECT_EQ(t->idToToken(18), std::nullopt);
}

TEST(Tokenizer, InvalidUtf8IsReplacedBeforeEncoding) {
  auto t = real("qwen3");
  ASSERT_TRUE(t);
  std::string bad = "caf\xC3 \xFF\xFE ok \xF0\x9F\x98";
  EXPECT_EQ(t->encode(bad, false), t->encode(repairUtf8(bad), false));
  EXPECT_EQ(*t->decode(t->encode(bad, false), false), repairUtf8(bad));
}

TEST(Tokenizer, SpecialTokensAndTemplates) {
  auto qwen = real("qwen3");
  auto llama = real("llama3");
  auto mistral = real("mistral-v1");
  ASSERT_TRUE(qwen && llama && mistral);
  Ids chat = qwen->encode("<|im_start|>user\nhi<|im_end|>", true); // Qwen adds nothing
  ASSERT_GE(chat.size(), 3u);
  EXPECT_EQ(chat.front(), 151644);
  EXPECT_EQ(chat.back(), 151645);
  EXPECT_EQ(*qwen->decode(chat, true), "user\nhi");
  EXPECT_EQ(llama->encode("hi", true).front(), 128000); // <|begin_of_text|>
  EXPECT_EQ(mistral->encode("hi", true).front(), 1);    // <s>
  EXPECT_EQ(*mistral->decode(mistral->encode(" hi  there", true), true), " hi  there");
  // <think> is an added token in Qwen3 but not a special one.
  int32_t think = *qwen->tokenToId("<think>");
  EXPECT_FALSE(qwen->isSpecial(think));
  EXPECT_EQ(*qwen->decode(Ids{think}, true), "<think>");
}

std::vector<std::string> streamSteps(const Tokenizer &t, const Ids &ids, bool skip,
                                     std::string &rest) {
  IncrementalDecoder d(t, skip);
  std::vector<std::string> steps;
  for (int32_t id : ids) {
    auto s = d.step(id);
    EXPECT_TRUE(s.ok()) << s.message();
    steps.push_back(s.ok() ? *s : "");
  }
  rest = *d.finish();
  return steps;
}

TEST(IncrementalDecoder, EmojiSplitAcrossByteLevelTokensComesOutWhole) {
  auto t = real("qwen3");
  ASSERT_TRUE(t);
  std::string text = "ok 🧑🏿‍🚀 done";
  Ids ids = t->encode(text, false);
  std::string rest, all;
  auto steps = streamSteps(*t, ids, false, rest);
  size_t heldBack = 0;
  for (const std::string &s : steps) {
    EXPECT_TRUE(isValidUtf8(s));
    EXPECT_EQ(s.find("\xEF\xBF\xBD"), std::string::npos) << "a step emitted a partial character";
    heldBack += s.empty();
    all += s;
  }
  EXPECT_GT(heldBack, 0u) << "the emoji should span several tokens";
  EXPECT_EQ(all + rest, text);
}

TEST(IncrementalDecoder, ByteFallbackRunIsHeldUntilItEnds) {
  auto t = real("mistral-v1");
  ASSERT_TRUE(t);
  Ids ids = t->encode("a\U0001FAE0", false); // U+1FAE0 is four <0x..> tokens
  ASSERT_EQ(ids.size(), 5u);
  std::string rest;
  auto steps = streamSteps(*t, ids, false, rest);
  std::string all;
  for (const std::string &s : steps)
    all += s;
  EXPECT_EQ(all + rest, "a\U0001FAE0");
  EXPECT_EQ(steps.back(), "");
  EXPECT_EQ(rest, "\U0001FAE0");
}

TEST(IncrementalDecoder, TrailingIncompleteCharacterComesOutOnFinish) {
  auto t = real("llama3");
  ASSERT_TRUE(t);
  Ids ids = t->encode("x😀", false);
  Ids cut(ids.begin(), ids.end() - 1); // drop the emoji's last token
  std::string rest;
  auto steps = streamSteps(*t, cut, false, rest);
  std::string all;
  for (const std::string &s : steps)
    all += s;
  EXPECT_EQ(all + rest, *t->decode(cut, false));
}

TEST(Tokenizer, LargeInputsEncodeAndRoundTrip) {
  auto t = real("llama3");
  ASSERT_TRUE(t);
  std::string noSpaces(1 << 20, 'x');
  Ids ids = t->encode(noSpaces, false);
  EXPECT_FALSE(ids.empty());
  EXPECT_EQ(*t->decode(ids, false), noSpaces);
  std::mt19937 rng(7);
  std::string random(1 << 20, '\0');
  for (char &c : random)
    c = static_cast<char>(rng());
  Ids r = t->encode(random, false);
  EXPECT_EQ(*t->decode(r, false), repairUtf8(random));
}

TEST(Tokenizer, ConcurrentEncodesAgreeWithSequentialOnes) {
  // encode shares a word cache between threads.
  auto t = real("qwen3");
  ASSERT_TRUE(t);
  std::vector<std::string> texts;
  for (int i = 0; i < 400; ++i)
    texts.push_back("item " + std::to_string(i * 7919) + " 中文 word" + std::to_string(i % 13) +
                    " 😀");
  std::vector<Ids> expected;
  for (const std::string &s : texts)
    expected.push_back(t->encode(s, true));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (int round = 0; round < 5; ++round)
        for (size_t i = 0; i < texts.size(); ++i)
          mismatches[k] += t->encode(texts[(i + k * 97) % texts.size()], true) !=
                           expected[(i + k * 97) % texts.size()];
    });
  for (std::thread &th : threads)
    th.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

struct LoadError {
  std::string json;
  std::string message;
};

TEST(TokenizerJson, UnsupportedOrMalformedFilesAreRejectedNamingThePath) {
  const std::string model = R"("model": {"type": "BPE", "vocab": {"a": 0}, "merges": []})";
  const std::vector<LoadError> cases = {
      {R"({"model": {"type": "WordPiece", "vocab": {}}})",
       "tokenizer.json: model.type: unsupported 'WordPiece' (supported: BPE)"},
      {R"({"model": {"type": "Unigram", "vocab": []}})",
       "tokenizer.json: model.type: unsupported 'Unigram' (supported: BPE)"},
      {"{" + model +
           R"(, "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Precompiled"}]}})",
       "tokenizer.json: normalizer.normalizers[1].type: unsupported 'Precompiled' (supported: NFC, "
       "NFD, NFKC, NFKD, "
       "Lowercase, Strip, Prepend, Replace, Sequence)"},
      {"{" + model + R"(, "pre_tokenizer": {"type": "BertPreTokenizer"}})",
       "tokenizer.json: pre_tokenizer.type: unsupported 'BertPreTokenizer' (supported: ByteLevel, "
       "Digits, "
       "Metaspace, Sequence, Split)"},
      {"{" + model + R"(, "decoder": {"type": "WordPiece"}})",
       "tokenizer.json: decoder.type: unsupported 'WordPiece' (supported: ByteFallback, ByteLevel, "
       "Fuse, "
       "Metaspace, Replace, Sequence, Strip)"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})",
       "tokenizer.json: model.merges[0]: token 'b' is not in model.vocab"},
      {R"({"model": {"type": "BPE", "vocab": {"a": "zero"}}})",
       "tokenizer.json: model.vocab[\"a\"]: expected a non-negative integer id, found \"zero\""},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]}})",
       "tokenizer.json: model.merges[0]: expected \"left right\" (one space), found \"ab\""},
      {"{" + model + R"(, "added_tokens": [{"id": 1, "content": "<s>", "special": "yes"}]})",
       "tokenizer.json: added_tokens[0].special: expected a boolean, found a string"},
      {"{" + model +
           R"(, "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}], "special_tokens": {}}})",
       "tokenizer.json: post_processor.single[0]: special token '<s>' is not in "
       "post_processor.special_tokens"},
      // An added token's id indexes a table too: an absurd one is refused
      // before it allocates gigabytes.
      {"{" + model + R"(, "added_tokens": [{"id": 999999917, "content": "<s>"}]})",
       "tokenizer.json: added_tokens[0].id: 999999917 is above the largest supported id "
       "4194303"},
      {R"({"normalizer": null})", "tokenizer.json: (root): missing field 'model'"},
      {"[1, 2]", "tokenizer.json: (root): expected an object, found an array"},
  };
  for (const LoadError &c : cases) {
    auto t = Tokenizer::fromJson(c.json, "tokenizer.json");
    ASSERT_FALSE(t.ok()) << c.json;
    EXPECT_EQ(t.message(), c.message);
  }
  auto bad = Tokenizer::fromJson("{\"model\": ", "x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.message().rfind("x.json: invalid JSON", 0), 0u) << bad.message();
  auto regex = Tokenizer::fromJson(
      "{" + model +
          R"(, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(x"}, "behavior": "Isolated"}})",
      "t.json");
  ASSERT_FALSE(regex.ok());
  EXPECT_EQ(regex.message().rfind(
                "t.json: pre_tokenizer.pattern.Regex: invalid regular expression '(x'", 0),
            0u)
      << regex.message();
  auto missing = Tokenizer::fromFile("/nonexistent/tokenizer.json");
  EXPECT_FALSE(missing.ok());
}

} // namespace
} // namespace volt::tok
