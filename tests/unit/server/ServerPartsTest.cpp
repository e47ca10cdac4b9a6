//===- ServerPartsTest.cpp - errors, auth, metrics, access log, sockets ---===//
#include "runtime/server/AccessLog.h"
#include "runtime/server/ApiError.h"
#include "runtime/server/Auth.h"
#include "runtime/server/Metrics.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace volt::server {
namespace {

TEST(ApiError, OpenAIShape) {
  ApiError e = badRequest("top_p", "top_p: expected a value in (0, 1], found 2");
  EXPECT_EQ(e.body(), R"({"error":{"message":"top_p: expected a value in (0, 1], found 2",)"
                      R"("type":"invalid_request_error","param":"top_p","code":null}})");
  ApiError s = serverError(503, "queue_full", "full");
  EXPECT_EQ(s.toJson()["error"]["type"], "server_error");
  EXPECT_EQ(s.toJson()["error"]["param"], nullptr);
}

TEST(ApiError, ParamFromEngineMessages) {
  EXPECT_EQ(badRequestFromMessage("min_tokens: expected at most max_tokens (2), found 5").param,
            "min_tokens");
  // A message that does not start with a field name has no param.
  EXPECT_EQ(badRequestFromMessage("request needs 9 KV-cache blocks: too many").param, "");
}

TEST(ApiError, InvalidUtf8IsReplacedNotThrown) {
  ApiError e = badRequest("", std::string("bad \xff byte"));
  EXPECT_NE(e.body().find("bad \xef\xbf\xbd byte"), std::string::npos);
}

TEST(Auth, ConstantTimeEquals) {
  EXPECT_TRUE(constantTimeEquals("secret", "secret"));
  EXPECT_FALSE(constantTimeEquals("secreT", "secret"));
  EXPECT_FALSE(constantTimeEquals("secret2", "secret"));
  EXPECT_FALSE(constantTimeEquals("secre", "secret"));
  EXPECT_FALSE(constantTimeEquals("", "secret"));
  EXPECT_TRUE(constantTimeEquals("", ""));
  EXPECT_FALSE(constantTimeEquals(std::string_view("sec\0et", 6), "secret"));
}

TEST(Auth, BearerHeader) {
  EXPECT_TRUE(bearerMatches("Bearer k-1", "k-1"));
  EXPECT_TRUE(bearerMatches("bearer   k-1 ", "k-1"));
  EXPECT_FALSE(bearerMatches("Bearer k-2", "k-1"));
  EXPECT_FALSE(bearerMatches("Basic k-1", "k-1"));
  EXPECT_FALSE(bearerMatches("Bearerk-1", "k-1"));
  EXPECT_FALSE(bearerMatches("Bearer", "k-1"));
  EXPECT_FALSE(bearerMatches("", "k-1"));
}

TEST(Metrics, HistogramIsCumulative) {
  Histogram h({0.1, 1.0});
  h.observe(0.05);
  h.observe(0.1); // on the bound: counted in le="0.1"
  h.observe(0.5);
  h.observe(7);
  std::string out;
  h.render(out, "x", "m=\"a\"");
  EXPECT_EQ(out, "x_bucket{m=\"a\",le=\"0.1\"} 2\n"
                 "x_bucket{m=\"a\",le=\"1\"} 3\n"
                 "x_bucket{m=\"a\",le=\"+Inf\"} 4\n"
                 "x_sum{m=\"a\"} 7.65\n"
                 "x_count{m=\"a\"} 4\n");
}

TEST(Metrics, RenderHasVllmNamesAndCounts) {
  Metrics m("tiny \"model\"");
  m.observeHttp("/v1/completions", "POST", 200);
  m.observeHttp("/v1/completions", "POST", 200);
  m.observeHttp("/health", "GET", 503);
  m.observeRejected("queue_full");
  m.observeToken(true, 0.02);
  m.observeToken(false, 0.01);
  engine::RequestTimes times;
  times.arrival = engine::Clock::now();
  times.firstScheduled = times.arrival + std::chrono::milliseconds(5);
  times.finished = times.arrival + std::chrono::milliseconds(400);
  m.observeFinished(engine::FinishReason::Length, times, 12, 2);
  engine::EngineStats stats;
  stats.numRunning = 3;
  stats.numWaiting = 4;
  stats.kvCache.usage = 0.25;
  stats.generationTokens = 99;
  EngineInfo info{128, 16};
  std::string text = m.render(&stats, info);
  const std::string label = "model_name=\"tiny \\\"model\\\"\"";
  for (const std::string &line : {
           "volt:num_requests_running{" + label + "} 3",
           "volt:num_requests_waiting{" + label + "} 4",
           "volt:kv_cache_usage_perc{" + label + "} 0.25",
           "volt:generation_tokens_total{" + label + "} 99",
           "volt:request_success_total{" + label + ",finished_reason=\"length\"} 1",
           "volt:request_success_total{" + label + ",finished_reason=\"abort\"} 0",
           "volt:request_prompt_tokens_total{" + label + "} 12",
           "volt:requests_rejected_total{" + label + ",reason=\"queue_full\"} 1",
           "volt:http_requests_total{" + label +
               ",handler=\"/v1/completions\",method=\"POST\",status=\"200\"} 2",
           "volt:http_requests_total{" + label +
               ",handler=\"/health\",method=\"GET\",status=\"503\"} 1",
           "volt:time_to_first_token_seconds_count{" + label + "} 1",
           "volt:inter_token_latency_seconds_count{" + label + "} 1",
           "volt:e2e_request_latency_seconds_bucket{" + label + ",le=\"0.5\"} 1",
           "volt:e2e_request_latency_seconds_bucket{" + label + ",le=\"0.3\"} 0",
           "volt:cache_config_info{" + label + ",block_size=\"16\",num_gpu_blocks=\"128\"} 1",
           std::string("# TYPE volt:time_to_first_token_seconds histogram"),
       })
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line;
}

TEST(Metrics, RendersBeforeTheEngineExists) {
  Metrics m("");
  std::string text = m.render(nullptr, EngineInfo{});
  EXPECT_NE(text.find("volt:num_requests_running{model_name=\"\"} 0\n"), std::string::npos);
}

TEST(AccessLog, OneJsonLine) {
  AccessRecord r;
  r.requestId = "abc";
  r.method = "POST";
  r.path = "/v1/completions";
  r.remote = "127.0.0.1";
  r.status = 200;
  r.stream = true;
  r.promptTokens = 5;
  r.completionTokens = 7;
  r.ttftSeconds = 0.01234;
  r.totalSeconds = 0.5;
  r.finishReasons = "stop";
  std::string line = formatAccessRecord(r, std::chrono::system_clock::from_time_t(0));
  EXPECT_EQ(line, R"({"time":"1970-01-01T00:00:00.000Z","request_id":"abc","method":"POST",)"
                  R"("path":"/v1/completions","status":200,"remote":"127.0.0.1",)"
                  R"("prompt_tokens":5,"completion_tokens":7,"ttft_ms":12.3,"total_ms":500.0,)"
                  R"("stream":true,"finish_reasons":"stop"})");
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

// Client-chosen fields are clipped: one line of bounded size.
TEST(AccessLog, ClipsWhatTheClientChose) {
  AccessRecord r;
  r.requestId = std::string(10000, 'i');
  r.method = "POST";
  r.path = "/v1/" + std::string(100000, 'p');
  r.error = std::string(8u << 20, 'e');
  r.status = 400;
  std::string line = formatAccessRecord(r, std::chrono::system_clock::from_time_t(0));
  EXPECT_LT(line.size(), 1400u);
  EXPECT_NE(line.find("(100004 bytes)"), std::string::npos);
  EXPECT_NE(line.find("(8388608 bytes)"), std::string::npos);
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

} // namespace
} // namespace volt::server
