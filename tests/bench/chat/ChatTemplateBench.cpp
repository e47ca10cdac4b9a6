//===- ChatTemplateBench.cpp - parse and render times of real templates ---===//
//
// Parses each conformance template, and renders a short chat, a tool-calling
// exchange and a 100-turn conversation with it. Results go in
// docs/chat-templates.md (Performance); nothing here is asserted.
//
//   ./build/bin/chat_bench
//
//===----------------------------------------------------------------------===//
#include "runtime/chat/ChatTemplate.h"

#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

namespace {

using volt::chat::ChatTemplate;
using Json = nlohmann::ordered_json;

const char *kTemplates[] = {"Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja",
                            "meta-llama-Llama-3.1-8B-Instruct.jinja",
                            "mistralai-Mistral-7B-Instruct-v0.3.jinja"};

std::string source(int index) {
  std::ifstream in(std::string(VOLT_SOURCE_DIR) + "/tests/conformance/chat/templates/" +
                   kTemplates[index]);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Json conversation(int turns, bool withToolCall) {
  Json messages = Json::array();
  messages.push_back({{"role", "system"}, {"content", "You are a helpful assistant."}});
  for (int i = 0; i < turns; ++i) {
    messages.push_back({{"role", "user"}, {"content", "Question number " + std::to_string(i)}});
    messages.push_back(
        {{"role", "assistant"}, {"content", "An answer of moderate length, " + std::to_string(i)}});
  }
  messages.push_back({{"role", "user"}, {"content", "What's the weather in Paris?"}});
  if (withToolCall) {
    messages.push_back(Json::parse(R"({"role": "assistant", "content": "",
      "tool_calls": [{"id": "call00001", "type": "function", "function":
      {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]})"));
    messages.push_back(Json::parse(
        R"({"role": "tool", "content": "{\"temperature\": 21}", "tool_call_id": "call00001"})"));
  }
  return messages;
}

const Json &tools() {
  static const Json t = Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "description": "Get the current weather in a city.", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string",
    "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}])");
  return t;
}

void benchParse(benchmark::State &state) {
  std::string text = source(static_cast<int>(state.range(0)));
  for (auto _ : state) { // NOLINT(clang-analyzer-deadcode.DeadStores)
    auto t = ChatTemplate::parse(text, "bench");
    benchmark::DoNotOptimize(t);
  }
  state.SetLabel(kTemplates[state.range(0)]);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(benchParse)->DenseRange(0, 3);

void render(benchmark::State &state, int turns, bool tooling) {
  auto t = ChatTemplate::parse(source(static_cast<int>(state.range(0))), "bench");
  if (!t.ok()) {
    state.SkipWithError(t.message().c_str());
    return;
  }
  Json messages = conversation(turns, tooling);
  Json extra = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  size_t bytes = 0;
  for (auto _ : state) { // NOLINT(clang-analyzer-deadcode.DeadStores)
    auto out = t->apply(messages, true, tooling ? &tools() : nullptr, extra);
    if (!out.ok()) {
      state.SkipWithError(out.message().c_str());
      return;
    }
    bytes = out->size();
    benchmark::DoNotOptimize(out);
  }
  state.SetLabel(std::string(kTemplates[state.range(0)]) + ", " + std::to_string(bytes) +
                 " bytes out");
}

void benchRenderShortChat(benchmark::State &state) { render(state, 1, false); }
BENCHMARK(benchRenderShortChat)->DenseRange(0, 3);

void benchRenderToolCall(benchmark::State &state) { render(state, 1, true); }
BENCHMARK(benchRenderToolCall)->DenseRange(0, 3);

void benchRender100Turns(benchmark::State &state) { render(state, 50, false); }
BENCHMARK(benchRender100Turns)->DenseRange(0, 3);

} // namespace

BENCHMARK_MAIN();
