// The guards in front of yaml-cpp: nesting pre-scan, size cap, file reading.
#include "compiler/spec/YamlDocument.h"

#include "tests/unit/spec/TestSupport.h"

#include <gtest/gtest.h>

namespace volt::spec {
namespace {

TEST(YamlDocument, OrdinaryFilesAreNotDeep) {
  for (const std::string &name : builtinSkuNames())
    EXPECT_FALSE(findExcessiveNesting(*builtinSkuText(name), 8)) << name;
  EXPECT_FALSE(findExcessiveNesting("a: {b: [1, 2, {c: d}]}\n", 8));
}

TEST(YamlDocument, NestingBoundCountsEveryKind) {
  auto at = findExcessiveNesting("a: [[[[[[x]]]]]]\n", 5);
  ASSERT_TRUE(at);
  EXPECT_EQ(at->line, 1);
  EXPECT_EQ(at->column, 7) << "indentation, ':' and three brackets make 5; the fourth [ exceeds";
  EXPECT_TRUE(findExcessiveNesting("- - - - - - - x\n", 5));
  EXPECT_TRUE(findExcessiveNesting("a:\n b:\n  c:\n   d:\n    e:\n     f: 1\n", 5));
  EXPECT_FALSE(findExcessiveNesting("a:\n b: 1\na2:\n b: 1\na3:\n b: 1\n", 3))
      << "indentation levels are popped when a line dedents";
}

TEST(YamlDocument, QuotesAndCommentsAreSkipped) {
  EXPECT_FALSE(findExcessiveNesting("a: \"[[[[[[[[[[\"\n", 3));
  EXPECT_FALSE(findExcessiveNesting("a: '[[[[''[[[[[['\n", 3));
  EXPECT_FALSE(findExcessiveNesting("a: 1 # [[[[[[[[[[\n", 3));
  EXPECT_FALSE(findExcessiveNesting("a: !!str \"[[[[[[[[\"\n", 3));
  // A quote that closes brackets cannot hide real ones that follow.
  EXPECT_TRUE(findExcessiveNesting("a: [[\"]]]]]]\", [[[[[[x]]]]]]]]\n", 5));
  // An apostrophe inside a plain scalar does not start a quoted one.
  EXPECT_TRUE(findExcessiveNesting("a: it's [[[[[[[[\n", 5));
}

TEST(YamlDocument, ParserErrorsCarryPlaces) {
  Diagnostics d("f.yaml");
  EXPECT_FALSE(parseYamlDocument("a: [1,\nb", d));
  ASSERT_EQ(d.errorCount(), 1u);
  EXPECT_EQ(d.errors()[0].rfind("f.yaml:", 0), 0u) << d.errors()[0];
  EXPECT_NE(d.errors()[0].find("invalid yaml"), std::string::npos);
}

TEST(YamlDocument, ReadTextFileLimits) {
  testing::TempWorkspace ws;
  std::filesystem::path big = ws.write("big.yaml", std::string(2000, 'x'));
  Result<std::string> r = readTextFile(big, 1000);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("larger than 1000 bytes"), std::string::npos) << r.message();
  EXPECT_TRUE(readTextFile(big, 2000).ok());
  Result<std::string> dev = readTextFile("/dev/zero", 1000);
  ASSERT_FALSE(dev.ok());
  EXPECT_NE(dev.message().find("not a regular file"), std::string::npos) << dev.message();
}

TEST(YamlDocument, DescribeNodes) {
  EXPECT_EQ(describeNode(YAML::Load("abc")), "'abc'");
  EXPECT_EQ(describeNode(YAML::Load("\"abc\"")), "the string \"abc\"");
  EXPECT_EQ(describeNode(YAML::Load("[1]")), "a sequence");
  EXPECT_EQ(describeNode(YAML::Load("{a: 1}")), "a mapping");
  EXPECT_EQ(describeNode(YAML::Load("~")), "an empty value");
  EXPECT_EQ(quoteForMessage(std::string("a\x01\nb")), "'a\\x01\\nb'");
  EXPECT_EQ(quoteForMessage(std::string(100, 'x')), "'" + std::string(60, 'x') + "...'");
}

} // namespace
} // namespace volt::spec
