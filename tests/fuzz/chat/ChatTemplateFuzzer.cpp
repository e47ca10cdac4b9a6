//===- ChatTemplateFuzzer.cpp - parse and render arbitrary template text --===//
//
// The input is template text. It is parsed, and when it parses it is
// rendered over a conversation with tools, tool calls and reasoning, so
// that the fuzzer reaches the interpreter with realistic values. Budgets are
// small so that each input runs quickly; exceeding them is an error, which
// is a fine outcome.
//
//===----------------------------------------------------------------------===//
#include "runtime/chat/ChatTemplate.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

const nlohmann::ordered_json &conversation() {
  static const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Weather in Zürich? <tool_response>x</tool_response>"},
    {"role": "assistant", "content": "<think>\nplan\n</think>\n\nLet me check.",
     "reasoning_content": "I should call a tool.",
     "tool_calls": [{"id": "call00001", "type": "function",
                     "function": {"name": "get_weather",
                                  "arguments": {"city": "Zürich", "days": 2, "ok": true,
                                                "ratio": 0.5, "none": null}}}]},
    {"role": "tool", "content": "{\"temp\": 3}", "tool_call_id": "call00001"},
    {"role": "assistant", "content": ""}
  ])");
  return messages;
}

const nlohmann::ordered_json &tools() {
  static const nlohmann::ordered_json t = nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather — now",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                    "required": ["city"]}}}
  ])");
  return t;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string source(reinterpret_cast<const char *>(data), size);
  auto parsed = volt::chat::ChatTemplate::parse(std::move(source), "fuzz");
  if (!parsed.ok())
    return 0;
  volt::chat::RenderLimits limits;
  limits.maxSteps = 200000;
  limits.maxOutputBytes = 1u << 20;
  limits.maxValueBytes = 1u << 20;
  limits.maxListItems = 1u << 16;
  limits.maxRange = 10000;
  parsed->setLimits(limits);
  std::tm now{};
  now.tm_year = 125;
  now.tm_mday = 1;
  parsed->setFixedTime(now);
  nlohmann::ordered_json extra = {
      {"bos_token", "<s>"}, {"eos_token", "</s>"}, {"enable_thinking", false}};
  (void)parsed->apply(conversation(), true, &tools(), extra);
  (void)parsed->apply(conversation(), false, nullptr, nlohmann::ordered_json::object());
  return 0;
}
