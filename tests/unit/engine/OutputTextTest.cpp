//===- OutputTextTest.cpp - stop strings and held-back streaming text -----===//
#include "runtime/engine/OutputText.h"

#include "tests/unit/engine/PieceDetokenizer.h"

#include <gtest/gtest.h>

namespace volt::engine {
namespace {

using testing::PieceDetokenizer;

// Feeds tokens 0, 1, 2, ... (token i has text pieces[i]) and records the
// streamed deltas; returns the stop string that ended it, if any.
struct Fed {
  std::vector<std::string> deltas;
  std::optional<std::string> stop;
  std::string streamed;
  std::string text;
};

Fed feed(const std::vector<std::string> &pieces, std::vector<std::string> stop,
         bool include = false, const std::string &tail = "") {
  OutputText out(std::make_unique<PieceDetokenizer>(pieces, tail), std::move(stop), include);
  Fed run;
  for (size_t i = 0; i < pieces.size() && !run.stop; ++i) {
    auto m = out.addToken(int32_t(i), true);
    EXPECT_TRUE(m.ok());
    run.stop = *m;
    bool finished = run.stop.has_value() || i + 1 == pieces.size();
    if (finished && !run.stop) {
      auto f = out.finish(true);
      EXPECT_TRUE(f.ok());
      run.stop = *f;
    }
    run.deltas.push_back(out.takeDelta(finished));
    run.streamed += run.deltas.back();
  }
  run.text = out.text();
  return run;
}

TEST(OutputText, StopStringAcrossTokensIsCutAndNeverStreamed) {
  Fed r = feed({"Hel", "lo W", "or", "ld! more", "never"}, {"World"});
  ASSERT_TRUE(r.stop);
  EXPECT_EQ(*r.stop, "World");
  EXPECT_EQ(r.text, "Hello ");
  EXPECT_EQ(r.streamed, "Hello ");
  // Held back: 4 bytes (len("World") - 1) until the end.
  EXPECT_EQ(r.deltas, (std::vector<std::string>{"", "Hel", "lo", " "}));
}

TEST(OutputText, IncludeStopStrKeepsTheMatch) {
  Fed r = feed({"Hel", "lo W", "or", "ld! more"}, {"World"}, true);
  ASSERT_TRUE(r.stop);
  EXPECT_EQ(r.text, "Hello World");
  EXPECT_EQ(r.streamed, "Hello World");
  // Nothing is held back when the stop string is kept.
  EXPECT_EQ(r.deltas, (std::vector<std::string>{"Hel", "lo W", "or", "ld"}));
}

TEST(OutputText, FirstStopStringInListOrderWins) {
  // Both complete in the same piece; vLLM checks the list in order.
  Fed r = feed({"a", "bcd"}, {"cd", "b"});
  ASSERT_TRUE(r.stop);
  EXPECT_EQ(*r.stop, "cd");
  EXPECT_EQ(r.text, "ab");
}

TEST(OutputText, StopStringInsideOnePiece) {
  Fed r = feed({"x", "yySTOPzz"}, {"STOP"});
  ASSERT_TRUE(r.stop);
  EXPECT_EQ(r.text, "xyy");
  EXPECT_EQ(r.streamed, "xyy");
}

TEST(OutputText, NoStopStringsStreamsEverythingAtOnce) {
  Fed r = feed({"a", "b", "c"}, {});
  EXPECT_FALSE(r.stop);
  EXPECT_EQ(r.deltas, (std::vector<std::string>{"a", "b", "c"}));
}

TEST(OutputText, HeldBackTextIsReleasedAtTheEnd) {
  Fed r = feed({"ab", "cd", "ef"}, {"xyz"}, false, "!");
  EXPECT_FALSE(r.stop);
  EXPECT_EQ(r.deltas, (std::vector<std::string>{"", "ab", "cdef!"}));
  EXPECT_EQ(r.text, "abcdef!");
}

TEST(OutputText, StopStringCompletedByTheFinalFlush) {
  Fed r = feed({"ab", "cS"}, {"ST"}, false, "Tail");
  ASSERT_TRUE(r.stop);
  EXPECT_EQ(r.text, "abc");
}

TEST(OutputText, HoldBackNeverSplitsACharacter) {
  // "é" is two bytes; holding back 1 byte must hold back the whole character.
  Fed r = feed({"a\xC3\xA9", "b"}, {"zz"});
  EXPECT_EQ(r.deltas[0], "a");
  EXPECT_EQ(r.streamed, "a\xC3\xA9"
                        "b");
}

TEST(OutputText, StopChecksCanBeDeferred) {
  // Before min_tokens, text grows without stop checks; a later piece only
  // finds matches that it completes.
  OutputText out(
      std::make_unique<PieceDetokenizer>(std::vector<std::string>{"STOP", "x", "ST", "OP"}),
      {"STOP"}, false);
  EXPECT_FALSE(*out.addToken(0, false));
  EXPECT_FALSE(*out.addToken(1, true));
  EXPECT_FALSE(*out.addToken(2, true));
  auto m = out.addToken(3, true);
  ASSERT_TRUE(*m);
  EXPECT_EQ(out.text(), "STOPx");
}

TEST(OutputText, DetokenizerErrorsPropagate) {
  OutputText out(std::make_unique<PieceDetokenizer>(std::vector<std::string>{"a"}), {}, false);
  auto m = out.addToken(-3, true);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.message(), "unknown token -3");
}

} // namespace
} // namespace volt::engine
