//===- ServerImpl.h - the server's state, shared by its handlers -*- C++ -*-===//
//
// Private to runtime/server: Server.cpp (lifecycle, routing, the small
// endpoints) and GenerationHandler.cpp (completions and chat) both work on
// this state.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/server/AccessLog.h"
#include "runtime/server/ApiError.h"
#include "runtime/server/Generation.h"
#include "runtime/server/JsonFields.h"
#include "runtime/server/Metrics.h"
#include "runtime/server/RequestParser.h"
#include "runtime/server/ResponseBuilder.h"
#include "runtime/server/Server.h"

#include "runtime/http/HttpServer.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

namespace volt::server {

/// How often a waiting HTTP thread looks for a closed client connection
/// and the request's deadline.
inline constexpr std::chrono::milliseconds kPollInterval{20};

/// What the access log says about the request this HTTP thread is serving.
/// A worker thread serves one request at a time, and the handler, the
/// streaming content provider and the logger all run on it (a request the
/// layer refuses is answered and logged on the I/O thread).
struct CurrentRequest {
  AccessRecord record;
  engine::Clock::time_point start{};
};
CurrentRequest &currentRequest();

/// The prompt text of a conversation (chat template; continue_final_message
/// cut); errors name the field.
ApiResult<std::string> renderChatPrompt(const serving::Session &session,
                                        const nlohmann::ordered_json &messages,
                                        bool addGenerationPrompt, bool continueFinalMessage,
                                        const nlohmann::ordered_json &tools,
                                        const nlohmann::ordered_json &templateKwargs);

struct Server::Impl {
  explicit Impl(ServerOptions o);

  ServerOptions options;
  std::unique_ptr<http::HttpServer> http;
  int port = 0;
  std::thread engineThread;
  std::thread graceThread;

  std::atomic<serving::Session *> session{nullptr};
  std::atomic<bool> draining{false};
  // Written once by attach(), before `session` is published.
  std::vector<std::string> modelNames;
  ParseLimits limits;
  EngineInfo engineInfo;
  int32_t maxModelLen = 0;
  /// "fp_" and 16 hex digits of a hash of the runtime version, the plan
  /// file and its weight packs' checksums: changes when any does.
  std::string systemFingerprint;
  int64_t createdAt = 0;

  Metrics metrics;
  AccessLog accessLog;

  std::atomic<int> activeGenerations{0};
  std::mutex inflightMu;
  std::set<GenerationRun *> inflight;

  std::mutex shutdownMu;
  std::condition_variable shutdownCv;
  bool shutdownStarted = false;
  bool closed = false;

  /// Every request the layer has read: CORS, auth, content type, routing.
  void handle(const http::Request &req, http::Response &res);
  /// A request the layer refused (limits, malformed, timeouts).
  void handleLayerError(const http::LayerError &e, const http::Request &req,
                        http::Response &res);
  /// The access-log line and metrics, once the response is written.
  void log(const http::Request &req, const http::Response &res);
  void startRecord(const http::Request &req, http::Response &res);
  /// One entry of /v1/models.
  nlohmann::ordered_json modelCard(const std::string &name) const;
  /// The session, or null after answering 503 (loading / shutting down).
  serving::Session *readySession(http::Response &res, bool generation);
  void sendError(http::Response &res, const ApiError &error);
  void sendJson(http::Response &res, const nlohmann::ordered_json &body);
  /// 404 unless `model` is empty or one of the served names.
  MaybeError checkModel(const std::string &model) const;

  void handleGeneration(const http::Request &req, http::Response &res, Endpoint endpoint);
  void handleTokenize(const http::Request &req, http::Response &res);
  void handleDetokenize(const http::Request &req, http::Response &res);

  void trackRun(GenerationRun *run);
  void untrackRun(GenerationRun *run);
  void cancelAll();
};

} // namespace volt::server
