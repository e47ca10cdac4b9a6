//===- ServerLifecycleTest.cpp - the server before a plan is attached -----===//
//
// The listener answers from the moment the port is bound: 503 (with
// Retry-After) while the plan loads, metrics already, errors in OpenAI's
// shape; a shutdown before the plan arrives ends cleanly.
//
//===----------------------------------------------------------------------===//
#include "runtime/server/Server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

namespace volt::server {
namespace {

ServerOptions loopback() {
  ServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.accessLog = nullptr;
  o.maxConcurrentRequests = 4;
  return o;
}

TEST(ServerLifecycle, LoadingAnswers503) {
  auto server = Server::create(loopback());
  ASSERT_TRUE(server.ok()) << server.message();
  int port = (*server)->port();
  ASSERT_GT(port, 0);
  httplib::Client cli("127.0.0.1", port);

  auto health = cli.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  auto body = nlohmann::json::parse(health->body);
  EXPECT_EQ(body["error"]["code"], "loading");
  EXPECT_EQ(health->get_header_value("Retry-After"), "5");

  auto completion = cli.Post("/v1/completions", R"({"prompt": "x"})", "application/json");
  ASSERT_TRUE(completion);
  EXPECT_EQ(completion->status, 503);
  EXPECT_FALSE(completion->get_header_value("X-Request-Id").empty());

  auto models = cli.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 503);

  auto metrics = cli.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(
      metrics->body.find("volt:requests_rejected_total{model_name=\"\",reason=\"loading\"} 1"),
      std::string::npos)
      << metrics->body;

  auto missing = cli.Get("/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(nlohmann::json::parse(missing->body)["error"]["code"], "not_found");

  (*server)->beginShutdown();
  (*server)->wait();
  // No longer accepting.
  httplib::Client after("127.0.0.1", port);
  after.set_connection_timeout(1);
  EXPECT_FALSE(after.Get("/health"));
}

TEST(ServerLifecycle, BadOptionsAndBusyPort) {
  ServerOptions o = loopback();
  o.maxConcurrentRequests = 0;
  auto bad = Server::create(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("--max-concurrent-requests"), std::string::npos);

  auto first = Server::create(loopback());
  ASSERT_TRUE(first.ok());
  ServerOptions same = loopback();
  same.port = (*first)->port();
  auto second = Server::create(same);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.message().find("cannot listen on 127.0.0.1:" + std::to_string(same.port)),
            std::string::npos);
}

TEST(ServerLifecycle, ApiKeyIsCheckedBeforeAnythingElse) {
  ServerOptions o = loopback();
  o.apiKey = "k";
  auto server = Server::create(o);
  ASSERT_TRUE(server.ok());
  httplib::Client cli("127.0.0.1", (*server)->port());
  auto denied = cli.Post("/v1/completions", R"({"prompt": "x"})", "application/json");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 401);
  EXPECT_EQ(nlohmann::json::parse(denied->body)["error"]["code"], "invalid_api_key");
  httplib::Headers key = {{"Authorization", "Bearer k"}};
  auto allowed = cli.Post("/v1/completions", key, R"({"prompt": "x"})", "application/json");
  ASSERT_TRUE(allowed);
  EXPECT_EQ(allowed->status, 503); // through auth, then: still loading
  auto health = cli.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503); // open, and loading
}

} // namespace
} // namespace volt::server
