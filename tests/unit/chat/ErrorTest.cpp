//===- ErrorTest.cpp - parse errors, render errors, undefined, limits -----===//
#include "runtime/chat/ChatTemplate.h"

#include <gtest/gtest.h>

namespace volt::chat {
namespace {

std::string parseError(const std::string &source) {
  auto t = ChatTemplate::parse(source, "chat template");
  return t.ok() ? "(parsed)" : t.message();
}

std::string renderError(const std::string &source,
                        const nlohmann::ordered_json &ctx = nlohmann::ordered_json::object()) {
  auto t = ChatTemplate::parse(source, "chat template");
  if (!t.ok())
    return "(parse error) " + t.message();
  auto out = t->render(ctx);
  return out.ok() ? "(rendered) " + *out : out.message();
}

std::string render(const std::string &source,
                   const nlohmann::ordered_json &ctx = nlohmann::ordered_json::object()) {
  auto t = ChatTemplate::parse(source, "chat template");
  if (!t.ok())
    return "(parse error) " + t.message();
  auto out = t->render(ctx);
  return out.ok() ? *out : "(error) " + out.message();
}

TEST(ChatParse, UnsupportedAndUnknownNamesAreFoundWithTheirPlace) {
  EXPECT_EQ(parseError("line one\n{{ text | wordwrap }}"),
            "chat template:2:11: unsupported filter 'wordwrap'");
  EXPECT_EQ(parseError("{{ x|upperr }}"),
            "chat template:1:6: unknown filter 'upperr' (did you mean 'upper'?)");
  EXPECT_EQ(parseError("{% if x is escaped %}{% endif %}"),
            "chat template:1:12: unsupported test 'escaped'");
  EXPECT_EQ(parseError("{{ x is strng }}"),
            "chat template:1:9: unknown test 'strng' (did you mean 'string'?)");
  EXPECT_EQ(parseError("{{ 'a'.zfill(3) }}"), "chat template:1:13: unsupported method 'zfill'");
  EXPECT_EQ(parseError("{{ cycler('a') }}"), "chat template:1:10: unsupported function 'cycler'");
  // Filters in a branch never taken are still checked: the template is
  // rejected when it is compiled, not when a request reaches the branch.
  EXPECT_EQ(parseError("{% if false %}\n  {{ x|batch(2) }}\n{% endif %}"),
            "chat template:2:8: unsupported filter 'batch'");
}

TEST(ChatParse, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(parseError("{% include 'x' %}"), "chat template:1:4: unsupported tag 'include'");
  EXPECT_EQ(parseError("a\n{% frobnicate %}"), "chat template:2:4: unknown tag 'frobnicate'");
  EXPECT_EQ(parseError("{% for x in y %}\n{{ x }}"),
            "chat template:2:8: unexpected end of template: expected 'endfor' or 'else' to close "
            "the 'for' opened at 1:4");
  EXPECT_EQ(parseError("{% endif %}"),
            "chat template:1:4: unexpected 'endif' (no open block that it closes)");
  EXPECT_EQ(parseError("{{ 1 + }}"), "chat template:1:8: unexpected '}}'");
  EXPECT_EQ(parseError("{{ (1 }}"), "chat template:1:7: unexpected '}', expected ')'");
  EXPECT_EQ(parseError("{# never closed"), "chat template:1:1: missing end of comment tag");
  EXPECT_EQ(parseError("{{ 'open }}"), "chat template:1:4: unterminated string literal");
  EXPECT_EQ(parseError("{% break %}"), "chat template:1:4: 'break' outside of a for loop");
  EXPECT_EQ(parseError("{{ x is defined is defined }}"),
            "chat template:1:17: tests cannot be chained with 'is'");
  EXPECT_EQ(parseError("{% set 1 = 2 %}"),
            "chat template:1:8: can only assign to names, found number");
  EXPECT_EQ(parseError("{{ $ }}"), "chat template:1:4: unexpected character '$' in a tag");
  EXPECT_EQ(parseError(std::string("{{ 'bad \xff' }}")),
            "chat template: the template is not valid UTF-8");
}

TEST(ChatRender, ErrorsNameTheExpression) {
  EXPECT_EQ(renderError("ok\n{{ missing.attr }}"), "chat template:2:11: 'missing' is undefined");
  EXPECT_EQ(renderError("{{ m.role.x }}", {{"m", {{"content", "c"}}}}),
            "chat template:1:10: 'dict object' has no attribute 'role'");
  EXPECT_EQ(renderError("{{ 'a' + 1 }}"),
            "chat template:1:8: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(renderError("{{ 1 / 0 }}"), "chat template:1:6: division by zero");
  EXPECT_EQ(renderError("{{ 1 in 5 }}"),
            "chat template:1:4: argument of type 'int' is not iterable");
  EXPECT_EQ(renderError("{{ [1, 2].append(3) }}"),
            "chat template:1:17: access to attribute 'append' of 'list' object is unsafe.");
  EXPECT_EQ(renderError("{{ none < 1 }}"),
            "chat template:1:4: '<' not supported between instances of 'NoneType' and 'int'");
  EXPECT_EQ(renderError("{% set ns = 1 %}{% set ns.x = 2 %}"),
            "chat template:1:20: cannot assign attribute on non-namespace object");
  EXPECT_EQ(renderError("{{ x|tojson }}"),
            "chat template:1:6: Object of type Undefined is not JSON serializable");
}

TEST(ChatRender, RaiseExceptionCarriesTheTemplatesMessage) {
  EXPECT_EQ(
      renderError("{% if true %}\n  {{ raise_exception('roles must alternate') }}\n{% endif %}"),
      "chat template:2:21: the template raised an error: roles must alternate");
}

TEST(ChatRender, UndefinedFollowsJinja2) {
  // Printing, testing, iterating, comparing and defaulting an undefined
  // value work; using it in arithmetic, as an object or a callee fails.
  EXPECT_EQ(render("[{{ missing }}]"), "[]");
  EXPECT_EQ(render("{{ missing is defined }}{{ missing is undefined }}"), "FalseTrue");
  EXPECT_EQ(render("{% for x in missing %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{{ missing == other }}{{ missing == none }}{{ not missing }}"),
            "TrueFalseTrue");
  EXPECT_EQ(render("{{ missing | length }}{{ missing | default('d') }}{{ missing ~ 'x' }}"), "0dx");
  EXPECT_EQ(render("{{ m.nope is defined }}{{ m.nope | default('z') }}", {{"m", {{"a", 1}}}}),
            "Falsez");
  EXPECT_EQ(render("{{ 'a' in missing }}"), "False");
  EXPECT_EQ(renderError("{{ missing + 1 }}"), "chat template:1:12: 'missing' is undefined");
  EXPECT_EQ(renderError("{{ missing['k'] }}"), "chat template:1:11: 'missing' is undefined");
  EXPECT_EQ(renderError("{{ missing() }}"), "chat template:1:11: 'missing' is undefined");
  EXPECT_EQ(renderError("{{ -missing }}"), "chat template:1:4: 'missing' is undefined");
  EXPECT_EQ(renderError("{{ l[9].x }}", {{"l", {1}}}),
            "chat template:1:8: list object has no element 9");
  EXPECT_EQ(renderError("{{ missing | float }}"), "chat template:1:14: 'missing' is undefined");
  EXPECT_EQ(renderError("{{ missing | int }}"), "chat template:1:14: 'missing' is undefined");
  EXPECT_EQ(renderError("{{ [1] | indent }}"),
            "chat template:1:10: 'list' object has no attribute 'splitlines'");
  // An if-expression without else is undefined when false.
  EXPECT_EQ(render("[{{ 'x' if false }}]"), "[]");
}

TEST(ChatRender, ObjectsKeepTheirKeyOrder) {
  auto ctx = nlohmann::ordered_json::parse(R"({"t": {"zeta": 1, "alpha": {"y": 2, "b": 3}}})");
  EXPECT_EQ(render("{{ t | tojson }}", ctx), R"({"zeta": 1, "alpha": {"y": 2, "b": 3}})");
  EXPECT_EQ(render("{% for k in t %}{{ k }} {% endfor %}", ctx), "zeta alpha ");
}

TEST(ChatLimits, HostileTemplatesEndInErrors) {
  std::string deep(2000, '(');
  EXPECT_NE(parseError("{{ " + deep + "1" + std::string(2000, ')') + " }}").find("nests deeper"),
            std::string::npos);
  std::string blocks;
  for (int i = 0; i < 300; ++i)
    blocks += "{% if true %}";
  EXPECT_NE(parseError(blocks).find("nests deeper"), std::string::npos);
  EXPECT_EQ(renderError("{{ range(100001) | length }}"),
            "chat template:1:9: Range too big. The sandbox blocks ranges larger than MAX_RANGE "
            "(100000).");
  EXPECT_NE(renderError("{{ 'x' * 100000000 }}").find("bytes"), std::string::npos);
  EXPECT_NE(renderError("{% set ns = namespace(s='xxxxxxxxxx') %}{% for i in range(40) %}"
                        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}")
                .find("bytes"),
            std::string::npos);
  EXPECT_NE(renderError("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("nest"),
            std::string::npos);
  EXPECT_NE(renderError("{% set ns = namespace(v=[]) %}{% for i in range(1000) %}"
                        "{% set ns.v = [ns.v] %}{% endfor %}")
                .find("nested deeper"),
            std::string::npos);
  EXPECT_NE(renderError("{% set ns = namespace() %}{% set ns.self = ns %}").find("namespace"),
            std::string::npos);
  EXPECT_EQ(renderError("{{ 9223372036854775807 + 1 }}"), "chat template:1:24: integer overflow");
}

TEST(ChatLimits, BudgetsAreConfigurable) {
  RenderLimits small;
  small.maxOutputBytes = 5000;
  small.maxSteps = 100000;
  auto t = ChatTemplate::parse("{% for i in range(1000) %}xxxxxxxxxx{% endfor %}", "t");
  ASSERT_TRUE(t.ok());
  t->setLimits(small);
  auto out = t->render(nlohmann::ordered_json::object());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.message(), "t:1:27: the template's output exceeds 5000 bytes");
  // Nested loops that would run 10^10 times stop at the step budget.
  t = ChatTemplate::parse("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}"
                          "{% endfor %}",
                          "t");
  ASSERT_TRUE(t.ok());
  t->setLimits(small);
  out = t->render(nlohmann::ordered_json::object());
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.message().find("exceeded its budget of 100000 evaluation steps"), std::string::npos)
      << out.message();
}

TEST(ChatApply, PassesHfsVariables) {
  auto t = ChatTemplate::parse(
      "{{ messages | length }}|{{ tools is none }}|{{ documents is none }}|"
      "{{ add_generation_prompt }}|{{ bos_token }}|{{ enable_thinking is defined }}",
      "t");
  ASSERT_TRUE(t.ok());
  auto messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  auto out = t->apply(messages, true, nullptr, {{"bos_token", "<s>"}});
  ASSERT_TRUE(out.ok()) << out.message();
  EXPECT_EQ(*out, "1|True|True|True|<s>|False");
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  out = t->apply(messages, false, &tools, {{"enable_thinking", false}});
  ASSERT_TRUE(out.ok()) << out.message();
  EXPECT_EQ(*out, "1|False|True|False||True");
  out = t->apply(messages, false, nullptr, {{"messages", 1}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.message(),
            "the extra template variables must not set 'messages', which apply() passes itself");
  out = t->apply(nlohmann::ordered_json::object(), false, nullptr, nullptr);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.message(), "chat messages must be a list, found object");
}

TEST(ChatApply, RejectsOverDeepInput) {
  auto t = ChatTemplate::parse("{{ messages | length }}", "t");
  ASSERT_TRUE(t.ok());
  nlohmann::ordered_json deep = nlohmann::ordered_json::array();
  for (int i = 0; i < 400; ++i)
    deep = nlohmann::ordered_json::array({deep});
  auto out = t->apply(deep, false, nullptr, nullptr);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.message(), "the template variable 'messages' nests deeper than 256 levels");
}

} // namespace
} // namespace volt::chat
