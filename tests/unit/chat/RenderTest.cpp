//===- RenderTest.cpp - interpreter pieces against jinja2's output --------===//
//
// Small templates, one construct each (whitespace control, operators,
// filters, tests, loops, scopes, methods), rendered over
// render_context.json; the expected text is what Python jinja2 rendered
// (RenderCases.inc, written by gen_render_cases.py).
//
//===----------------------------------------------------------------------===//
#include "runtime/chat/ChatTemplate.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace volt::chat {
namespace {

struct RenderCase {
  const char *source;
  const char *expected;
};

// GoogleTest finds this by name to print a case.
void PrintTo(const RenderCase &c, std::ostream *os) { *os << c.source; } // NOLINT

const RenderCase kCases[] = {
#include "tests/unit/chat/RenderCases.inc"
};

nlohmann::ordered_json context() {
  std::ifstream in(std::string(VOLT_SOURCE_DIR) + "/tests/unit/chat/render_context.json");
  std::ostringstream s;
  s << in.rdbuf();
  return nlohmann::ordered_json::parse(s.str());
}

std::tm fixedNow() {
  std::tm tm{};
  tm.tm_year = 125;
  tm.tm_mon = 2;
  tm.tm_mday = 14;
  tm.tm_hour = 9;
  tm.tm_min = 26;
  tm.tm_sec = 53;
  tm.tm_wday = 5;
  tm.tm_yday = 72;
  return tm;
}

class Render : public testing::TestWithParam<RenderCase> {};

TEST_P(Render, MatchesJinja2) {
  const RenderCase &c = GetParam();
  auto t = ChatTemplate::parse(c.source, "case");
  ASSERT_TRUE(t.ok()) << t.message();
  t->setFixedTime(fixedNow());
  auto out = t->render(context());
  ASSERT_TRUE(out.ok()) << c.source << "\n" << out.message();
  EXPECT_EQ(*out, c.expected) << c.source;
}

INSTANTIATE_TEST_SUITE_P(Chat, Render, testing::ValuesIn(kCases));

TEST(Render, CaseTableIsPopulated) { EXPECT_GE(std::size(kCases), 80u); }

} // namespace
} // namespace volt::chat
