//===- ComponentsTest.cpp - the tokenizer's parts, one at a time ---------===//
#include "runtime/tokenizer/Bpe.h"
#include "runtime/tokenizer/Decoding.h"
#include "runtime/tokenizer/Pipeline.h"
#include "runtime/tokenizer/Regex.h"
#include "runtime/tokenizer/Unicode.h"

#include <gtest/gtest.h>

namespace volt::tok {
namespace {

const char *kQwenPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::vector<std::string> texts(const std::vector<Piece> &pieces) {
  std::vector<std::string> out;
  for (const Piece &p : pieces)
    out.push_back(p.text);
  return out;
}

TEST(Utf8, RepairReplacesEachMaximalSubpartLikePython) {
  // Expected values are Python's bytes.decode('utf-8', 'replace').
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(repairUtf8("\xE4\xB8"
                       "a"),
            fffd + "a");
  EXPECT_EQ(repairUtf8("\xED\xA0\x80"), fffd + fffd + fffd);            // a surrogate
  EXPECT_EQ(repairUtf8("\xF0\x9F\x98"), fffd);                          // truncated emoji
  EXPECT_EQ(repairUtf8("\xC0\xAF"), fffd + fffd);                       // overlong
  EXPECT_EQ(repairUtf8("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd); // above U+10FFFF
  EXPECT_EQ(repairUtf8("\xFF"
                       "b\x80"),
            fffd + "b" + fffd);
  EXPECT_EQ(repairUtf8("ok \xE4\xB8\xAD"), "ok \xE4\xB8\xAD");
  EXPECT_TRUE(isValidUtf8("plain ascii text, long enough for the fast path"));
  EXPECT_FALSE(isValidUtf8("plain ascii text, then \xC3"));
}

TEST(ByteLevel, AlphabetMapsEveryByteToOnePrintableCharacter) {
  const ByteLevelAlphabet &a = byteLevelAlphabet();
  EXPECT_EQ(a.byteToChar[' '], U'\u0120');  // 'Ġ'
  EXPECT_EQ(a.byteToChar['\n'], U'\u010A'); // 'Ċ'
  EXPECT_EQ(a.byteToChar['a'], U'a');
  EXPECT_EQ(a.byteToChar[0xAD], U'\u0143');
  EXPECT_EQ(a.byteToChar[0xFF], U'\u00FF');
  for (int b = 0; b < 256; ++b)
    EXPECT_EQ(a.charToByte(a.byteToChar[b]), b);
  EXPECT_EQ(a.charToByte(U'\u0144'), -1);
}

TEST(ByteLevel, PreTokenizerMapsBytesAndDecoderMapsThemBack) {
  std::vector<Piece> pieces{{"héllo wörld", true, false}};
  auto gpt2 = Regex::compile(
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
  ASSERT_TRUE(gpt2.ok()) << gpt2.message();
  ByteLevelPreTokenizer(/*addPrefixSpace=*/true, *gpt2).split(pieces);
  ASSERT_EQ(pieces.size(), 2u);
  materialize(pieces[0]);
  materialize(pieces[1]);
  EXPECT_EQ(pieces[0].text, "\u0120h\u00C3\u00A9llo"); // " héllo": é is bytes C3 A9
  EXPECT_EQ(pieces[1].text, "\u0120w\u00C3\u00B6rld");
  std::vector<std::string> tokens{pieces[0].text, pieces[1].text};
  ByteLevelDecoder().decodeChain(tokens);
  EXPECT_EQ(tokens, std::vector<std::string>{" héllo wörld"});
}

TEST(Regex, QwenSplitPatternSplitsLikeOniguruma) {
  // Expected splits from Python's `regex` module with the same pattern.
  auto re = Regex::compile(kQwenPattern);
  ASSERT_TRUE(re.ok()) << re.message();
  std::vector<Piece> pieces{{"Hello world's  123\n\n  x!!", true, false}};
  splitPieces(pieces, **re, SplitBehavior::Isolated, false);
  EXPECT_EQ(texts(pieces), (std::vector<std::string>{"Hello", " world", "'s", " ", " ", "1", "2",
                                                     "3", "\n\n", " ", " x", "!!"}));
  pieces = {{"I'M OK\u00A0中文  ", true, false}};
  splitPieces(pieces, **re, SplitBehavior::Isolated, false);
  EXPECT_EQ(texts(pieces), (std::vector<std::string>{"I", "'M", " OK", "\u00A0中文", "  "}));
  EXPECT_TRUE(pieces[0].atOrigin);
  EXPECT_FALSE(pieces[1].atOrigin);
}

TEST(Regex, InvalidPatternIsAnErrorNamingTheProblem) {
  auto re = Regex::compile("(unclosed");
  ASSERT_FALSE(re.ok());
  EXPECT_NE(re.message().find("'(unclosed'"), std::string::npos) << re.message();
  EXPECT_NE(re.message().find("offset"), std::string::npos) << re.message();
}

TEST(Split, BehaviorsArrangeDelimitersAsHuggingFaceDoes) {
  auto dash = Regex::literal("-");
  ASSERT_TRUE(dash.ok());
  auto run = [&](SplitBehavior b, bool invert) {
    std::vector<Piece> pieces{{"a-b--c-", true, false}};
    splitPieces(pieces, **dash, b, invert);
    return texts(pieces);
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(run(SplitBehavior::Removed, false), (V{"a", "b", "c"}));
  EXPECT_EQ(run(SplitBehavior::Isolated, false), (V{"a", "-", "b", "-", "-", "c", "-"}));
  EXPECT_EQ(run(SplitBehavior::MergedWithPrevious, false), (V{"a-", "b-", "-", "c-"}));
  EXPECT_EQ(run(SplitBehavior::MergedWithNext, false), (V{"a", "-b", "-", "-c", "-"}));
  EXPECT_EQ(run(SplitBehavior::Contiguous, false), (V{"a", "-", "b", "--", "c", "-"}));
  EXPECT_EQ(run(SplitBehavior::Removed, true), (V{"-", "-", "-", "-"}));
}

TEST(Metaspace, ReplacesSpacesAndPrependsPerScheme) {
  const std::string m = "\u2581";
  std::vector<Piece> pieces{{"hi there", true, false}, {"again", false, false}};
  MetaspacePreTokenizer(m, PrependScheme::First, /*splitWords=*/true).split(pieces);
  EXPECT_EQ(texts(pieces), (std::vector<std::string>{m + "hi", m + "there", "again"}));
  pieces = {{"x", false, false}};
  MetaspacePreTokenizer(m, PrependScheme::Always, false).split(pieces);
  EXPECT_EQ(texts(pieces), std::vector<std::string>{m + "x"});
}

TEST(Normalizers, NfcPrependReplaceAndSequence) {
  std::string s = "e\u0301 \u212B"; // e + combining acute, Angstrom sign
  UnicodeNormalizer(NormalForm::NFC).normalize(s);
  EXPECT_EQ(s, "\u00E9 \u00C5");
  std::vector<std::unique_ptr<Normalizer>> seq;
  seq.push_back(std::make_unique<PrependNormalizer>("\u2581"));
  seq.push_back(std::make_unique<ReplaceNormalizer>(" ", nullptr, "\u2581"));
  SequenceNormalizer spm(std::move(seq));
  std::string t = "a b";
  spm.normalize(t);
  EXPECT_EQ(t, "\u2581a\u2581b");
  std::string empty;
  spm.normalize(empty);
  EXPECT_EQ(empty, ""); // Prepend leaves empty text alone
  std::string lower = "ÀB Σ";
  LowercaseNormalizer().normalize(lower);
  EXPECT_EQ(lower, "àb σ");
}

TEST(Bpe, MergesApplyByRankNotByPosition) {
  Vocab v{{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}, {"abc", 5}};
  // "b c" outranks "a b", so "abc" becomes a + bc (no "a bc" merge).
  auto m = BpeModel::create(v, {{"b", "c"}, {"a", "b"}, {"ab", "c"}}, {});
  ASSERT_TRUE(m.ok()) << m.message();
  std::vector<int32_t> ids;
  (*m)->tokenize(Piece{"abc", true, false}, ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 4}));
  ids.clear();
  (*m)->tokenize(Piece{"ab", true, false}, ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{3}));
}

TEST(Bpe, AnAbsurdIdIsRefusedNotAllocated) {
  Vocab v{{"a", 0}, {"b", 2000000000}};
  auto m = BpeModel::create(v, {}, {});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.message().find("model.vocab: token 'b' has id 2000000000, above the largest "
                             "supported id 4194303"),
            std::string::npos)
      << m.message();
  Vocab last{{"a", 0}, {"b", kMaxTokenId}};
  EXPECT_TRUE(BpeModel::create(last, {}, {}).ok());
}

TEST(Bpe, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  Vocab v{{"a", 0}, {"b", 1}, {"c", 2}, {"abc", 3}};
  BpeOptions o;
  o.ignoreMerges = true;
  auto m = BpeModel::create(v, {}, o);
  ASSERT_TRUE(m.ok());
  std::vector<int32_t> ids;
  (*m)->tokenize(Piece{"abc", true, false}, ids);
  EXPECT_EQ(ids, std::vector<int32_t>{3});
}

TEST(Bpe, ByteFallbackSpellsUnknownCharactersInByteTokens) {
  Vocab v{{"<unk>", 0}, {"a", 1}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    v.emplace(name, 2 + b);
  }
  BpeOptions o;
  o.unkToken = "<unk>";
  o.byteFallback = true;
  auto m = BpeModel::create(v, {}, o);
  ASSERT_TRUE(m.ok());
  std::vector<int32_t> ids;
  (*m)->tokenize(Piece{"a\u00E9", true, false}, ids); // é = C3 A9
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 2 + 0xC3, 2 + 0xA9}));

  std::vector<std::string> tokens{"a", "<0xC3>", "<0xA9>", "b", "<0xE4>"};
  ByteFallbackDecoder().decodeChain(tokens);
  EXPECT_EQ(tokens, (std::vector<std::string>{"a", "\u00E9", "b", "\uFFFD"}));
  // A run that is not valid UTF-8 as a whole gives one U+FFFD per byte.
  tokens = {"<0xC3>", "<0xA9>", "<0xE4>"};
  ByteFallbackDecoder().decodeChain(tokens);
  EXPECT_EQ(tokens, (std::vector<std::string>{"\uFFFD", "\uFFFD", "\uFFFD"}));
}

TEST(Bpe, MergeNamingAnUnknownTokenIsAnError) {
  auto m = BpeModel::create(Vocab{{"a", 0}}, {{"a", "z"}}, {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.message(), "model.merges[0]: token 'z' is not in model.vocab");
}

TEST(Bpe, LongWordWithoutSpacesStaysFast) {
  // 1 MB with no split points: the heap-based merge is O(n log n).
  Vocab v{{"a", 0}, {"aa", 1}, {"aaaa", 2}};
  auto m = BpeModel::create(v, {{"a", "a"}, {"aa", "aa"}}, {});
  ASSERT_TRUE(m.ok());
  std::vector<int32_t> ids;
  (*m)->tokenize(Piece{std::string(1 << 20, 'a'), true, false}, ids);
  EXPECT_EQ(ids.size(), (1u << 20) / 4);
}

TEST(Decoders, StripAndMetaspaceFollowHuggingFace) {
  std::vector<std::string> t{" a", " b "};
  StripDecoder(U' ', 1, 0).decodeChain(t);
  EXPECT_EQ(t, (std::vector<std::string>{"a", "b "}));
  std::vector<std::string> m{"\u2581hi", "\u2581there"};
  MetaspaceDecoder("\u2581", true).decodeChain(m);
  EXPECT_EQ(m, (std::vector<std::string>{"hi", " there"}));
}

} // namespace
} // namespace volt::tok
