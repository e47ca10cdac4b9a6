//===- ServerBench.cpp - the server's own work per request and per token --===//
//
// What volt-serve adds to a request besides the model: parsing the body,
// formatting each streamed token as an SSE chunk, rendering /metrics. The
// numbers go to docs/perf/server.md.
//
//===----------------------------------------------------------------------===//
#include "runtime/server/Metrics.h"
#include "runtime/server/RequestParser.h"
#include "runtime/server/ResponseBuilder.h"

#include <benchmark/benchmark.h>

namespace volt::server {
namespace {

ParseLimits limits() {
  ParseLimits l;
  l.vocabSize = 151936;
  return l;
}

void BM_ParseCompletion(benchmark::State &state) {
  const std::string body =
      R"({"model": "qwen3", "prompt": "Write a haiku about the sea and the wind.",
          "max_tokens": 128, "temperature": 0.7, "top_p": 0.95, "top_k": 20, "stream": true,
          "stream_options": {"include_usage": true}, "stop": ["\n\n"], "seed": 1})";
  ParseLimits l = limits();
  for (auto _ : state) // NOLINT(clang-analyzer-deadcode.DeadStores)
    benchmark::DoNotOptimize(parseCompletionRequest(body, l));
}
BENCHMARK(BM_ParseCompletion);

void BM_ParseChat(benchmark::State &state) {
  const std::string body =
      R"({"model": "qwen3", "messages": [{"role": "system", "content": "You are helpful."},
          {"role": "user", "content": "Write a haiku about the sea and the wind."}],
          "max_completion_tokens": 128, "temperature": 0.7, "stream": true,
          "chat_template_kwargs": {"enable_thinking": false}})";
  ParseLimits l = limits();
  for (auto _ : state) // NOLINT(clang-analyzer-deadcode.DeadStores)
    benchmark::DoNotOptimize(parseChatRequest(body, l));
}
BENCHMARK(BM_ParseChat);

/// One streamed token: the SSE chunk of a completion or chat delta.
void BM_StreamChunk(benchmark::State &state) {
  ResponseOptions o;
  o.endpoint = state.range(0) ? Endpoint::ChatCompletions : Endpoint::Completions;
  o.id = "chatcmpl-0123456789abcdef0123456789abcdef";
  o.model = "qwen3";
  o.promptTokens = {20};
  ResponseBuilder b(o, 1);
  std::vector<ChoiceEvent> events(1);
  events[0].output.token = 1234;
  events[0].output.text = " wind";
  size_t bytes = 0;
  for (auto _ : state) { // NOLINT(clang-analyzer-deadcode.DeadStores)
    std::string sse = b.streamEvents(events);
    bytes += sse.size();
    benchmark::DoNotOptimize(sse);
  }
  state.SetBytesProcessed(int64_t(bytes));
}
BENCHMARK(BM_StreamChunk)->Arg(0)->Arg(1);

void BM_MetricsRender(benchmark::State &state) {
  Metrics m("qwen3");
  for (int i = 0; i < 1000; ++i) {
    m.observeHttp("/v1/completions", "POST", 200);
    m.observeToken(i % 10 == 0, 0.02);
  }
  engine::EngineStats stats;
  EngineInfo info{4096, 16};
  for (auto _ : state) // NOLINT(clang-analyzer-deadcode.DeadStores)
    benchmark::DoNotOptimize(m.render(&stats, info));
}
BENCHMARK(BM_MetricsRender);

} // namespace
} // namespace volt::server

BENCHMARK_MAIN();
