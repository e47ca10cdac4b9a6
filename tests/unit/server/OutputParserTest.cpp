// The reasoning and tool-call parsers: what each format's text gives, and
// that feeding a text in pieces, cut anywhere, gives what the whole text
// gives (a stream and a whole response agree).
#include "runtime/server/OutputParser.h"

#include <gtest/gtest.h>

#include <random>

namespace volt::server {
namespace {

using Json = nlohmann::ordered_json;

ParsedDelta whole(const OutputParserOptions &o, const std::string &text) {
  OutputParser p(o);
  ParsedDelta d = p.feed(text);
  d.append(p.finish());
  return d;
}

ParsedDelta pieces(const OutputParserOptions &o, const std::string &text,
                   const std::vector<size_t> &cuts) {
  OutputParser p(o);
  ParsedDelta d;
  size_t at = 0;
  for (size_t cut : cuts) {
    d.append(p.feed(text.substr(at, cut - at)));
    at = cut;
  }
  d.append(p.feed(text.substr(at)));
  d.append(p.finish());
  return d;
}

void expectSame(const ParsedDelta &a, const ParsedDelta &b, const std::string &what) {
  EXPECT_EQ(a.reasoning, b.reasoning) << what;
  EXPECT_EQ(a.content, b.content) << what;
  ASSERT_EQ(a.toolCalls.size(), b.toolCalls.size()) << what;
  for (size_t i = 0; i < a.toolCalls.size(); ++i) {
    EXPECT_EQ(a.toolCalls[i].name, b.toolCalls[i].name) << what;
    EXPECT_EQ(a.toolCalls[i].arguments, b.toolCalls[i].arguments) << what;
  }
}

/// Every single cut, one character at a time, and random cuts.
void expectStreamsAgree(const OutputParserOptions &o, const std::string &text) {
  const ParsedDelta ref = whole(o, text);
  for (size_t cut = 1; cut < text.size(); ++cut)
    expectSame(ref, pieces(o, text, {cut}), "cut at " + std::to_string(cut));
  std::vector<size_t> all;
  for (size_t i = 1; i < text.size(); ++i)
    all.push_back(i);
  expectSame(ref, pieces(o, text, all), "one character at a time");
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<size_t> cuts;
    for (size_t i = 1; i < text.size(); ++i)
      if (rng() % 4 == 0)
        cuts.push_back(i);
    expectSame(ref, pieces(o, text, cuts), "random cuts " + std::to_string(trial));
  }
}

OutputParserOptions qwen3() {
  OutputParserOptions o;
  o.reasoning = ReasoningParser::Qwen3;
  return o;
}

TEST(OutputParser, Qwen3ReasoningFromAThinkTagAtTheStart) {
  const std::string text = "<think>\nLet me add 2 and 2.\n</think>\n\nThe answer is 4.";
  ParsedDelta d = whole(qwen3(), text);
  EXPECT_EQ(d.reasoning, "\nLet me add 2 and 2.\n");
  EXPECT_EQ(d.content, "\n\nThe answer is 4.");
  expectStreamsAgree(qwen3(), text);
}

TEST(OutputParser, Qwen3ReasoningWhenThePromptOpenedTheThinking) {
  OutputParserOptions o = qwen3();
  o.startInReasoning = true;
  const std::string text = "I should greet.\n</think>\n\nHello!";
  ParsedDelta d = whole(o, text);
  EXPECT_EQ(d.reasoning, "I should greet.\n");
  EXPECT_EQ(d.content, "\n\nHello!");
  expectStreamsAgree(o, text);
  // Cut off while thinking: all of it is reasoning.
  d = whole(o, "still thinking </thi");
  EXPECT_EQ(d.reasoning, "still thinking </thi");
  EXPECT_EQ(d.content, "");
}

TEST(OutputParser, Qwen3WithoutThinkingIsContent) {
  for (const std::string text : {"Hello there.", "<thinking> is not a tag", " <", ""}) {
    ParsedDelta d = whole(qwen3(), text);
    EXPECT_EQ(d.reasoning, "") << text;
    EXPECT_EQ(d.content, text) << text;
    expectStreamsAgree(qwen3(), text);
  }
  EXPECT_TRUE(endsInOpenThink("<|im_start|>assistant\n<think>\n"));
  EXPECT_FALSE(endsInOpenThink("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(endsInOpenThink("<|im_start|>assistant\n"));
}

OutputParserOptions tools(ToolCallParser parser, Json defs = nullptr) {
  OutputParserOptions o;
  o.tools = parser;
  if (!defs.is_null())
    o.toolDefinitions = std::make_shared<const Json>(std::move(defs));
  return o;
}

TEST(OutputParser, HermesCalls) {
  const std::string text =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\", \"days\": 3}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", "
      "\"arguments\": {}}\n</tool_call>\n";
  ParsedDelta d = whole(tools(ToolCallParser::Hermes), text);
  EXPECT_EQ(d.content, "Let me check.\n");
  ASSERT_EQ(d.toolCalls.size(), 2u);
  EXPECT_EQ(d.toolCalls[0].name, "get_weather");
  EXPECT_EQ(Json::parse(d.toolCalls[0].arguments), Json::parse(R"({"city":"Paris","days":3})"));
  EXPECT_EQ(d.toolCalls[1].name, "get_time");
  EXPECT_EQ(d.toolCalls[1].arguments, "{}");
  expectStreamsAgree(tools(ToolCallParser::Hermes), text);
}

TEST(OutputParser, MalformedCallsArePlainText) {
  for (const std::string text :
       {"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }\n</tool_call>",
        "<tool_call>\n{\"arguments\": {}}\n</tool_call>", "<tool_call>[1, 2]</tool_call>",
        "<tool_call>\n{\"name\": \"f\", \"arguments\": 3}</tool_call>"}) {
    ParsedDelta d = whole(tools(ToolCallParser::Hermes), text);
    EXPECT_TRUE(d.toolCalls.empty()) << text;
    EXPECT_EQ(d.content, text);
    expectStreamsAgree(tools(ToolCallParser::Hermes), text);
  }
  // Cut off inside a call: parsed as it stands, else given back as text.
  ParsedDelta d = whole(tools(ToolCallParser::Hermes),
                        "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}");
  ASSERT_EQ(d.toolCalls.size(), 1u);
  EXPECT_EQ(d.toolCalls[0].arguments, R"({"x":1})");
  d = whole(tools(ToolCallParser::Hermes), "ok <tool_call>\n{\"name\": \"f\", \"argu");
  EXPECT_TRUE(d.toolCalls.empty());
  EXPECT_EQ(d.content, "ok <tool_call>\n{\"name\": \"f\", \"argu");
}

TEST(OutputParser, TextAfterACallIsKeptAndTrailingSpaceDropped) {
  const std::string text = "<tool_call>{\"name\": \"f\"}</tool_call>\n\nDone.\n<tool_call>"
                           "{\"name\": \"g\", \"arguments\": \"{\\\"k\\\": [1]}\"}</tool_call>\n";
  ParsedDelta d = whole(tools(ToolCallParser::Hermes), text);
  EXPECT_EQ(d.content, "\n\nDone.");
  ASSERT_EQ(d.toolCalls.size(), 2u);
  EXPECT_EQ(d.toolCalls[1].arguments, R"({"k":[1]})") << "arguments given as JSON text";
  expectStreamsAgree(tools(ToolCallParser::Hermes), text);
}

Json weatherTool() {
  return Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "days": {"type": "integer"}, "scale": {"type": "number"},
      "metric": {"type": "boolean"}, "hours": {"type": ["array", "null"]},
      "opts": {"type": "object"}}}}}])");
}

TEST(OutputParser, Qwen3CoderCallsTakeTheirParametersTypesFromTheTools) {
  const std::string text = "I'll look it up.\n<tool_call>\n<function=get_weather>\n"
                           "<parameter=city>\nSan Francisco, CA\n</parameter>\n"
                           "<parameter=days>\n3\n</parameter>\n<parameter=scale>\n1.5\n"
                           "</parameter>\n<parameter=metric>\nTrue\n</parameter>\n"
                           "<parameter=hours>\n[6, 12]\n</parameter>\n<parameter=opts>\n"
                           "{\"a\": null}\n</parameter>\n<parameter=note>\nline 1\nline 2\n"
                           "</parameter>\n</function>\n</tool_call>";
  OutputParserOptions o = tools(ToolCallParser::Qwen3Coder, weatherTool());
  ParsedDelta d = whole(o, text);
  EXPECT_EQ(d.content, "I'll look it up.\n");
  ASSERT_EQ(d.toolCalls.size(), 1u);
  EXPECT_EQ(d.toolCalls[0].name, "get_weather");
  EXPECT_EQ(Json::parse(d.toolCalls[0].arguments),
            Json::parse(R"({"city": "San Francisco, CA", "days": 3, "scale": 1.5,
                            "metric": true, "hours": [6, 12], "opts": {"a": null},
                            "note": "line 1\nline 2"})"));
  expectStreamsAgree(o, text);
  // A value that does not read as its type stays text; no tools: text.
  d = whole(o, "<tool_call>\n<function=get_weather>\n<parameter=days>\nthree\n</parameter>\n"
               "</function>\n</tool_call>");
  ASSERT_EQ(d.toolCalls.size(), 1u);
  EXPECT_EQ(d.toolCalls[0].arguments, R"({"days":"three"})");
  d = whole(tools(ToolCallParser::Qwen3Coder),
            "<tool_call>\n<function=f>\n<parameter=days>\n3\n</parameter>\n</function>\n"
            "</tool_call>");
  ASSERT_EQ(d.toolCalls.size(), 1u);
  EXPECT_EQ(d.toolCalls[0].arguments, R"({"days":"3"})");
}

TEST(OutputParser, Qwen3CoderMalformedAndCutOff) {
  OutputParserOptions o = tools(ToolCallParser::Qwen3Coder, weatherTool());
  for (const std::string text :
       {"<tool_call>\n<parameter=city>\nParis\n</parameter>\n</tool_call>",
        "<tool_call>\n<function=get_weather>\njunk\n</function>\n</tool_call>",
        "<tool_call>\n<function=>\n</function>\n</tool_call>",
        "<tool_call>\n<function=get_weather>\n</function>\nmore\n</tool_call>"}) {
    ParsedDelta d = whole(o, text);
    EXPECT_TRUE(d.toolCalls.empty()) << text;
    EXPECT_EQ(d.content, text);
  }
  // Cut off after a parameter's value, and with no parameters yet.
  ParsedDelta d = whole(o, "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar");
  ASSERT_EQ(d.toolCalls.size(), 1u);
  EXPECT_EQ(d.toolCalls[0].arguments, R"({"city":"Par"})");
  d = whole(o, "<tool_call>\n<function=get_weather>\n\n\n");
  ASSERT_EQ(d.toolCalls.size(), 1u);
  EXPECT_EQ(d.toolCalls[0].arguments, "{}");
}

TEST(OutputParser, ForcedOpeningsAreParsedButNotReturned) {
  OutputParserOptions o = tools(ToolCallParser::Hermes);
  o.forcedPrefix = forcedCallOpening(ToolCallParser::Hermes, "get_weather");
  EXPECT_EQ(o.forcedPrefix, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ");
  ParsedDelta d = whole(o, "{\"city\": \"Oslo\"}}\n</tool_call>");
  ASSERT_EQ(d.toolCalls.size(), 1u);
  EXPECT_EQ(d.toolCalls[0].name, "get_weather");
  EXPECT_EQ(d.toolCalls[0].arguments, R"({"city":"Oslo"})");
  EXPECT_EQ(d.content, "");
  // Thinking closed by the opening, then a qwen3_coder call.
  OutputParserOptions r = tools(ToolCallParser::Qwen3Coder, weatherTool());
  r.reasoning = ReasoningParser::Qwen3;
  r.startInReasoning = true;
  r.forcedPrefix = "</think>\n\n" + forcedCallOpening(ToolCallParser::Qwen3Coder, "get_weather");
  d = whole(r, "<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "");
  ASSERT_EQ(d.toolCalls.size(), 1u);
  EXPECT_EQ(d.toolCalls[0].arguments, R"({"days":2})");
  EXPECT_EQ(forcedCallOpening(ToolCallParser::Hermes, ""), "<tool_call>\n");
}

TEST(OutputParser, ReasoningThenCalls) {
  OutputParserOptions o = tools(ToolCallParser::Hermes);
  o.reasoning = ReasoningParser::Qwen3;
  const std::string text = "<think>\nNeed the weather.\n</think>\n\n<tool_call>\n{\"name\": "
                           "\"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>";
  ParsedDelta d = whole(o, text);
  EXPECT_EQ(d.reasoning, "\nNeed the weather.\n");
  EXPECT_EQ(d.content, "\n\n");
  ASSERT_EQ(d.toolCalls.size(), 1u);
  expectStreamsAgree(o, text);
  EXPECT_EQ(reasoningParserByName("qwen3"), ReasoningParser::Qwen3);
  EXPECT_FALSE(reasoningParserByName("deepseek_r1"));
  EXPECT_EQ(toolCallParserByName("qwen3_coder"), ToolCallParser::Qwen3Coder);
  EXPECT_FALSE(toolCallParserByName("mistral"));
}

} // namespace
} // namespace volt::server
