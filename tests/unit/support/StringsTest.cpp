#include "runtime/support/CheckedMath.h"
#include "runtime/support/Strings.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

namespace volt {
namespace {

TEST(Strings, EditDistance) {
  EXPECT_EQ(editDistance("", ""), 0u);
  EXPECT_EQ(editDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(editDistance("max_model_len", "max_modl_len"), 1u);
}

TEST(Strings, ClosestMatchSuggestsTyposOnly) {
  std::vector<std::string> keys = {"max_model_len", "max_num_seqs", "target"};
  EXPECT_EQ(closestMatch("max_modle_len", keys), "max_model_len");
  EXPECT_EQ(closestMatch("taget", keys), "target");
  EXPECT_FALSE(closestMatch("completely_different", keys).has_value());
  EXPECT_FALSE(closestMatch("target", keys).has_value()) << "an exact match is not a typo";
}

// Suggestions cost nothing for absurd input: an 8 MB word is not compared.
TEST(Strings, ClosestMatchIsCheapForHugeWords) {
  std::vector<std::string> keys = {"max_model_len", "max_num_seqs", "target"};
  const std::string huge(8u << 20, 'x');
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(closestMatch(huge, keys).has_value());
  EXPECT_FALSE(closestMatch(std::string(257, 't'), keys).has_value());
  // (a correctness check, not a timing assertion: the old code ran an 8 M x
  // 13 edit distance per key; printed for the record only)
  std::printf("closestMatch(8 MB): %.3f ms\n",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count());
  // Length alone rules a candidate out, but not a near one.
  EXPECT_EQ(closestMatch("max_model_lenn", keys), "max_model_len");
}

TEST(Strings, ClipForMessage) {
  EXPECT_EQ(clipForMessage("short", 10), "short");
  EXPECT_EQ(clipForMessage("0123456789abc", 10), "0123456789… (13 bytes)");
  // A UTF-8 character is not cut in half: "é" is 2 bytes at 9-10.
  EXPECT_EQ(clipForMessage("012345678\xc3\xa9xyz", 10), "012345678… (14 bytes)");
  EXPECT_EQ(clipForMessage(std::string(1 << 20, 'k'), 64).size(), 64 + std::string("… (1048576 bytes)").size());
}

TEST(Strings, FormatBytesAndCounts) {
  EXPECT_EQ(formatBytes(12), "12 B");
  EXPECT_EQ(formatBytes(17ull << 30), "17.00 GiB");
  EXPECT_EQ(formatBytes(1536), "1.50 KiB");
  EXPECT_EQ(formatCount(0), "0");
  EXPECT_EQ(formatCount(1234567), "1,234,567");
}

TEST(Strings, WildcardMatch) {
  EXPECT_TRUE(wildcardMatch("lm_head", "lm_head"));
  EXPECT_TRUE(wildcardMatch("*mlp.gate", "model.layers.0.mlp.gate"));
  EXPECT_FALSE(wildcardMatch("*mlp.gate", "model.layers.0.mlp.gate_proj"));
  EXPECT_TRUE(wildcardMatch("model.layers.?.mlp*", "model.layers.3.mlp.experts.1.up_proj"));
  EXPECT_FALSE(wildcardMatch("model.layers.?.mlp*", "model.layers.13.mlp"));
  EXPECT_TRUE(wildcardMatch("*", ""));
  EXPECT_FALSE(wildcardMatch("a*b*c", "aXbX"));
}

TEST(CheckedMath, DetectsOverflow) {
  EXPECT_EQ(checkedMul(1ull << 32, 1ull << 31), 1ull << 63);
  EXPECT_FALSE(checkedMul(1ull << 32, 1ull << 32).has_value());
  EXPECT_FALSE(checkedAdd(~0ull, 1).has_value());
  std::vector<int64_t> dims = {1 << 20, 1 << 20, 1 << 20, 1 << 20};
  EXPECT_FALSE(checkedProduct(dims).has_value());
  std::vector<int64_t> negative = {4, -1};
  EXPECT_FALSE(checkedProduct(negative).has_value());
  EXPECT_EQ(checkedProduct({}), 1u);
}

} // namespace
} // namespace volt
