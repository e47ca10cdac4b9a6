//===- ConformanceTest.cpp - volt's tokenizer against HF tokenizers ------===//
//
// For four real tokenizers (tests/conformance/tokenizer/, see
// docs/tokenizer.md) and every string of the committed corpus: the ids with
// and without special tokens, and the decodes, must equal what HF
// `tokenizers` gave; streaming decode must add up to the full decode.
//
//===----------------------------------------------------------------------===//
#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/tokenizer/Unicode.h"
#include "tests/unit/tokenizer/ConformanceData.h"

#include <gtest/gtest.h>

#include <sstream>

namespace volt::tok {
namespace {

using testing::ExpectationReader;

std::string show(const std::vector<int32_t> &ids) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < ids.size() && i < 40; ++i)
    os << (i ? " " : "") << ids[i];
  if (ids.size() > 40)
    os << " ... (" << ids.size() << ")";
  os << "]";
  return os.str();
}

std::string quote(const std::string &s) {
  std::string out;
  for (unsigned char c : s.substr(0, 200)) {
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return "\"" + out + (s.size() > 200 ? "...\"" : "\"");
}

const std::vector<std::string> &corpus() {
  static const std::vector<std::string> items = [] {
    auto blob = testing::readXz(testing::conformanceDir() + "corpus.bin.xz");
    return blob ? testing::parseCorpus(*blob) : std::vector<std::string>();
  }();
  return items;
}

std::string streamed(const Tokenizer &t, const std::vector<int32_t> &ids, bool skip,
                     std::string &error) {
  IncrementalDecoder stream(t, skip);
  std::string out;
  for (int32_t id : ids) {
    auto piece = stream.step(id);
    if (!piece.ok()) {
      error = piece.message();
      return out;
    }
    if (!isValidUtf8(*piece))
      error = "a step returned invalid UTF-8";
    out += *piece;
  }
  auto rest = stream.finish();
  if (!rest.ok())
    error = rest.message();
  else
    out += *rest;
  return out;
}

class Conformance : public ::testing::TestWithParam<const char *> {};

TEST_P(Conformance, MatchesHuggingFaceOnTheWholeCorpus) {
  std::string name = GetParam();
  const auto &items = corpus();
  ASSERT_GE(items.size(), 10000u) << "corpus.bin.xz is missing or short (is xz installed?)";
  auto json = testing::readXz(testing::conformanceDir() + name + ".tokenizer.json.xz");
  ASSERT_TRUE(json) << "cannot read " << name << ".tokenizer.json.xz";
  auto tokenizer = Tokenizer::fromJson(*json, name + ".tokenizer.json");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.message();
  const Tokenizer &t = **tokenizer;
  auto blob = testing::readXz(testing::conformanceDir() + name + ".expect.bin.xz");
  ASSERT_TRUE(blob) << "cannot read " << name << ".expect.bin.xz";
  ExpectationReader reader(*blob);

  size_t idsOk = 0, decodesOk = 0, streamOk = 0, reported = 0;
  auto report = [&](size_t i, const std::string &what) {
    if (++reported <= 12)
      ADD_FAILURE() << name << " string " << i << " " << quote(items[i]) << ": " << what;
  };
  for (size_t i = 0; i < items.size(); ++i) {
    std::string text = repairUtf8(items[i]);
    testing::Expectation e = reader.next(text);
    std::vector<int32_t> plain = t.encode(items[i], false);
    std::vector<int32_t> special = t.encode(items[i], true);
    bool ok = true;
    if (plain != e.plain) {
      report(i, "ids " + show(plain) + ", HF " + show(e.plain));
      ok = false;
    }
    if (special != e.special) {
      report(i, "ids with special tokens " + show(special) + ", HF " + show(e.special));
      ok = false;
    }
    idsOk += ok;

    auto d1 = t.decode(e.plain, false);
    auto d2 = t.decode(e.special, false);
    auto d3 = t.decode(e.special, true);
    bool dok = d1.ok() && d2.ok() && d3.ok() && *d1 == e.decodePlain && *d2 == e.decodeSpecial &&
               *d3 == e.decodeSpecialSkipped;
    if (!dok)
      report(i, "decode " + (d1.ok() ? quote(*d1) : d1.message()) + " / " +
                    (d3.ok() ? quote(*d3) : d3.message()) + ", HF " + quote(e.decodePlain) + " / " +
                    quote(e.decodeSpecialSkipped));
    decodesOk += dok;

    std::string error;
    std::string s1 = streamed(t, e.plain, false, error);
    std::string s2 = streamed(t, e.special, true, error);
    bool sok = error.empty() && s1 == e.decodePlain && s2 == e.decodeSpecialSkipped;
    if (!sok)
      report(i, "streamed decode " + quote(s1) + " / " + quote(s2) +
                    (error.empty() ? "" : " (" + error + ")") + ", decode " + quote(e.decodePlain) +
                    " / " + quote(e.decodeSpecialSkipped));
    streamOk += sok;
  }
  EXPECT_TRUE(reader.done()) << "expectations hold more records than the corpus";
  double n = static_cast<double>(items.size());
  std::printf(
      "%s: ids match %zu/%zu (%.3f%%), decodes %zu/%zu (%.3f%%), streaming %zu/%zu (%.3f%%)\n",
      name.c_str(), idsOk, items.size(), 100.0 * idsOk / n, decodesOk, items.size(),
      100.0 * decodesOk / n, streamOk, items.size(), 100.0 * streamOk / n);
  EXPECT_EQ(idsOk, items.size());
  EXPECT_EQ(decodesOk, items.size());
  EXPECT_EQ(streamOk, items.size());
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, Conformance,
                         ::testing::Values("qwen3", "llama3", "mistral-v1", "mistral-v3"),
                         [](const auto &info) {
                           std::string s = info.param;
                           for (char &c : s)
                             if (c == '-')
                               c = '_';
                           return s;
                         });

} // namespace
} // namespace volt::tok
