//===- Server.h - the OpenAI-compatible HTTP server ------------*- C++ -*-===//
//
// volt-serve's library: an HTTP server (runtime/http: one I/O thread for
// every connection, handlers on a pool of workers) in front of one
// serving::Session. Workers parse, tokenize, submit to the engine and
// stream; one engine thread runs
// Engine::run(). See docs/server.md for the endpoints, limits and metrics.
//
// Lifecycle: create() binds the port and starts answering at once (503,
// "loading", until attach()); attach() starts the engine loop and makes
// /health answer 200; beginShutdown() stops accepting connections and lets
// requests in flight finish for the grace period, then cancels the rest;
// wait() returns when every connection is closed and the engine loop has
// stopped.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/GenerationDefaults.h"
#include "runtime/server/OutputParser.h"
#include "runtime/serving/Session.h"
#include "runtime/support/Status.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace volt::server {

struct ServerOptions {
  std::string host = "0.0.0.0";
  /// 0 picks a free port (see Server::port()).
  int port = 8000;
  /// When not empty, requests need `Authorization: Bearer <api_key>`.
  std::string apiKey;
  /// Whether /health and /metrics need the key too (by default they are
  /// open, as in vLLM, for load balancers and scrapers).
  bool authHealthAndMetrics = false;
  /// Unknown request fields get 400 (OpenAI's behaviour) instead of being
  /// ignored with a warning (vLLM's default).
  bool strictFields = false;
  /// --reasoning-parser: chat outputs' <think>...</think> as
  /// reasoning_content.
  ReasoningParser reasoningParser = ReasoningParser::None;
  /// --tool-call-parser: the format tool calls are read from.
  ToolCallParser toolCallParser = ToolCallParser::None;
  /// --enable-auto-tool-choice: tool_choice auto (the default when a
  /// request has tools) reads calls from the output; without it, auto is
  /// refused, as vLLM does.
  bool enableAutoToolChoice = false;
  /// The prefix of /metrics' families: "volt" (volt:...) or "vllm"
  /// (vLLM's own names, for dashboards built for vLLM).
  std::string metricsPrefix = "volt";
  /// Origins a browser page may call the API from (CORS): exact origins
  /// ("https://app.example.com"), or "*" for any. Empty: none (no CORS
  /// headers; preflights get 403).
  std::vector<std::string> allowedOrigins;
  /// Names the model is served under; empty: the plan's served_model_name.
  std::vector<std::string> servedModelNames;
  /// Largest request body (413 beyond).
  size_t maxBodyBytes = 8u << 20;
  /// Generation requests (completions, chat) being served at once; more
  /// get 429.
  int maxConcurrentRequests = 256;
  /// Sequences waiting for the engine beyond which new generation requests
  /// get 503.
  int maxQueueLen = 1024;
  /// Seconds a generation request may take (0: no limit); then it is
  /// cancelled and answered 504 (or ends its stream with an error event).
  double requestTimeoutSeconds = 600;
  /// Seconds requests in flight may run after a shutdown signal.
  double shutdownGraceSeconds = 30;
  /// Idle seconds before a keep-alive connection is closed.
  int keepAliveSeconds = 5;
  /// Threads that run handlers (a request read whole takes one until its
  /// response is written); 0 means max_concurrent_requests + 64.
  int httpThreads = 0;
  /// Request line and headers: bytes and fields (431 beyond).
  size_t maxHeaderBytes = 16 * 1024;
  int maxHeaders = 100;
  /// Seconds for the headers from a request's first byte, and for the
  /// body after them (408 beyond); a write the client does not take
  /// within writeTimeoutSeconds closes the connection.
  double headerTimeoutSeconds = 10;
  double bodyTimeoutSeconds = 60;
  double writeTimeoutSeconds = 60;
  /// Open connections, in total and from one client address (503 and
  /// close beyond; 0: no limit).
  int maxConnections = 4096;
  int maxConnectionsPerClient = 1024;
  /// Access log destination (one JSON line per request); null: none.
  std::FILE *accessLog = stderr;
  /// For /v1/models ("root").
  std::string planPath;
};

class Server {
public:
  /// Binds host:port and starts serving (503 until attach()).
  static Result<std::unique_ptr<Server>> create(ServerOptions options);
  ~Server();
  Server(const Server &) = delete;
  Server &operator=(const Server &) = delete;

  /// The bound port (the one chosen when the options said 0).
  int port() const;
  const std::string &host() const;
  /// The names the model answers to (available after attach()).
  std::vector<std::string> servedModelNames() const;

  /// Serves `session` (which must outlive the server): starts the engine
  /// loop; /health turns 200. `defaults` fill the sampling fields a request
  /// leaves unset (vLLM's --generation-config; empty: vLLM's own defaults).
  void attach(serving::Session &session, const engine::GenerationDefaults &defaults = {});
  /// Starts a graceful shutdown and returns. Thread-safe; a second call
  /// cancels the requests in flight at once.
  void beginShutdown();
  /// Cancels every generation request in flight.
  void cancelAll();
  /// Blocks until shutdown is complete.
  void wait();

  struct Impl;

private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace volt::server
