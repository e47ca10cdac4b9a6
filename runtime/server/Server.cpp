//===- Server.cpp - lifecycle, routing and the small endpoints ------------===//
#include "runtime/server/Server.h"

#include "runtime/server/Auth.h"
#include "runtime/server/ServerImpl.h"
#include "runtime/support/Strings.h"

#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>

#ifndef VOLT_VERSION
#define VOLT_VERSION "unknown"
#endif

namespace volt::server {
namespace {

using Json = nlohmann::ordered_json;

/// Routes, for 405 answers and metric labels.
struct Route {
  const char *method;
  const char *path;
};
constexpr Route kRoutes[] = {
    {"POST", "/v1/completions"}, {"POST", "/v1/chat/completions"},
    {"GET", "/v1/models"},       {"GET", "/health"},
    {"GET", "/metrics"},         {"POST", "/tokenize"},
    {"POST", "/detokenize"},     {"GET", "/version"},
    {"GET", "/ping"},            {"POST", "/ping"},
    {"GET", "/load"},
};

/// The route a path belongs to, for metric labels ("other" if none).
std::string routeLabel(const std::string &path) {
  for (const Route &r : kRoutes)
    if (path == r.path)
      return r.path;
  if (path.rfind("/v1/models/", 0) == 0)
    return "/v1/models/{model}";
  return "other";
}

bool isOpenPath(const std::string &path) {
  return path == "/health" || path == "/ping" || path == "/metrics";
}

/// Whether a Content-Type header names JSON: its media type (before any
/// parameters) is application/json, in any case.
bool isJsonContentType(std::string_view value) {
  value = value.substr(0, value.find(';'));
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
    value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
    value.remove_suffix(1);
  constexpr std::string_view kJson = "application/json";
  if (value.size() != kJson.size())
    return false;
  for (size_t i = 0; i < value.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(value[i])) != kJson[i])
      return false;
  return true;
}

std::string randomId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buf;
}

/// A client-chosen X-Request-Id is kept if it is short and printable.
bool usableRequestId(const std::string &id) {
  if (id.empty() || id.size() > 128)
    return false;
  for (unsigned char c : id)
    if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\\')
      return false;
  return true;
}

} // namespace

CurrentRequest &currentRequest() {
  thread_local CurrentRequest current;
  return current;
}

Server::Impl::Impl(ServerOptions o)
    : options(std::move(o)),
      metrics(options.servedModelNames.empty() ? std::string() : options.servedModelNames.front(),
              options.metricsPrefix + ":"),
      accessLog(options.accessLog) {}

void Server::Impl::sendError(http::Response &res, const ApiError &error) {
  res.status = error.status;
  if (error.retryAfterSeconds)
    res.setHeader("Retry-After", std::to_string(*error.retryAfterSeconds));
  res.setContent(error.body(), "application/json");
  currentRequest().record.error = clipForMessage(error.message, 256);
}

void Server::Impl::sendJson(http::Response &res, const Json &body) {
  res.status = 200;
  res.setContent(dumpJson(body), "application/json");
}

serving::Session *Server::Impl::readySession(http::Response &res, bool generation) {
  if (draining.load()) {
    if (generation)
      metrics.observeRejected("shutting_down");
    ApiError e = serverError(503, "shutting_down", "the server is shutting down");
    e.retryAfterSeconds = 1;
    res.setHeader("Connection", "close");
    sendError(res, e);
    return nullptr;
  }
  serving::Session *s = session.load();
  if (!s) {
    if (generation)
      metrics.observeRejected("loading");
    ApiError e = serverError(503, "loading", "the model is still loading; retry shortly");
    e.retryAfterSeconds = 5;
    sendError(res, e);
  }
  return s;
}

MaybeError Server::Impl::checkModel(const std::string &model) const {
  if (model.empty())
    return std::nullopt;
  for (const std::string &name : modelNames)
    if (name == model)
      return std::nullopt;
  ApiError e;
  e.status = 404;
  e.param = "model";
  e.code = "model_not_found";
  e.message =
      "model: the model '" + model + "' does not exist (served: " + joinList(modelNames) + ")";
  return e;
}

void Server::Impl::trackRun(GenerationRun *run) {
  std::lock_guard<std::mutex> lock(inflightMu);
  inflight.insert(run);
}

void Server::Impl::untrackRun(GenerationRun *run) {
  std::lock_guard<std::mutex> lock(inflightMu);
  inflight.erase(run);
}

void Server::Impl::cancelAll() {
  std::lock_guard<std::mutex> lock(inflightMu);
  for (GenerationRun *run : inflight)
    run->cancel();
}

Json Server::Impl::modelCard(const std::string &name) const {
  // The sampling defaults requests get (--generation-config), with
  // generation_config.json's names.
  const engine::GenerationDefaults &d = limits.defaults;
  // The FP32 values at their shortest (0.9, not 0.8999999761581421).
  auto number = [](float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
    for (int digits = 1; digits <= 9; ++digits) {
      std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(v));
      if (std::strtof(buf, nullptr) == v)
        break;
    }
    return std::strtod(buf, nullptr);
  };
  Json defaults = Json::object();
  if (d.temperature)
    defaults["temperature"] = number(*d.temperature);
  if (d.topP)
    defaults["top_p"] = number(*d.topP);
  if (d.topK)
    defaults["top_k"] = *d.topK;
  if (d.minP)
    defaults["min_p"] = number(*d.minP);
  if (d.repetitionPenalty)
    defaults["repetition_penalty"] = number(*d.repetitionPenalty);
  return Json{{"id", name},
              {"object", "model"},
              {"created", createdAt},
              {"owned_by", "volt"},
              {"root", options.planPath.empty() ? name : options.planPath},
              {"parent", Json()},
              {"max_model_len", maxModelLen},
              {"default_sampling_params", std::move(defaults)},
              {"permission", Json::array()}};
}

void Server::Impl::startRecord(const http::Request &req, http::Response &res) {
  CurrentRequest &cur = currentRequest();
  cur.record = AccessRecord{};
  cur.start = engine::Clock::now();
  std::string id = req.header("X-Request-Id");
  cur.record.requestId = usableRequestId(id) ? id : randomId();
  UnknownFieldPolicy &fields = unknownFieldPolicy();
  fields.strict = options.strictFields;
  fields.ignored.clear();
  res.setHeader("X-Request-Id", cur.record.requestId);
}

void Server::Impl::handleLayerError(const http::LayerError &le, const http::Request &req,
                                    http::Response &res) {
  startRecord(req, res);
  ApiError e;
  e.status = le.status;
  e.message = le.message;
  if (le.status >= 500) {
    e = serverError(le.status, le.code == "internal" ? "" : le.code, le.message);
  } else if (le.code == "body_too_large") {
    e.code = "request_too_large";
  } else if (le.code == "header_too_large" || le.code == "too_many_headers") {
    e.code = "request_header_fields_too_large";
  } else if (le.code == "header_timeout" || le.code == "body_timeout") {
    e.code = "request_timeout";
  } else if (le.code != "malformed") {
    e.code = le.code;
  }
  if (le.code == "too_many_connections" || le.code == "too_many_connections_from_client")
    e.retryAfterSeconds = 1;
  sendError(res, e);
}

void Server::Impl::handle(const http::Request &req, http::Response &res) {
  startRecord(req, res);
  // CORS (browser pages of other origins): off unless --allowed-origins
  // names the page's origin. A preflight carries no credentials, so it
  // is answered before the key is checked.
  const std::string origin = req.header("Origin");
  const bool anyOrigin = std::find(options.allowedOrigins.begin(), options.allowedOrigins.end(),
                                   "*") != options.allowedOrigins.end();
  const bool originAllowed =
      !origin.empty() && (anyOrigin || std::find(options.allowedOrigins.begin(),
                                                 options.allowedOrigins.end(),
                                                 origin) != options.allowedOrigins.end());
  if (originAllowed) {
    res.setHeader("Access-Control-Allow-Origin", anyOrigin ? "*" : origin);
    if (!anyOrigin)
      res.setHeader("Vary", "Origin");
  }
  if (req.method == "OPTIONS") {
    if (originAllowed) {
      res.status = 204;
      res.setHeader("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
      res.setHeader("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Request-Id");
      res.setHeader("Access-Control-Max-Age", "600");
      return;
    }
    ApiError e;
    e.status = 403;
    e.code = "origin_not_allowed";
    e.message = origin.empty() ? std::string("cors: a preflight request needs an Origin header")
                               : "cors: origin '" + clipForMessage(origin, 128) +
                                     "' is not allowed (--allowed-origins)";
    return sendError(res, e);
  }
  const bool open = options.apiKey.empty() ||
                    (isOpenPath(req.path) && !options.authHealthAndMetrics) ||
                    bearerMatches(req.header("Authorization"), options.apiKey);
  if (!open) {
    ApiError e;
    e.status = 401;
    e.code = "invalid_api_key";
    e.message = "authorization: expected the header 'Authorization: Bearer <api key>' with the "
                "server's key";
    res.setHeader("WWW-Authenticate", "Bearer");
    return sendError(res, e);
  }
  // Request bodies are JSON, said so: a page of any origin can make a
  // browser send a text/plain or form POST without asking (no preflight),
  // but not an application/json one. POST /ping reads no body and runs
  // nothing.
  if (req.method == "POST" && req.path != "/ping" &&
      !isJsonContentType(req.header("Content-Type"))) {
    const std::string found = req.header("Content-Type");
    ApiError e;
    e.status = 415;
    e.code = "unsupported_media_type";
    e.message = "content-type: expected application/json, found " +
                (found.empty() ? std::string("none") : "'" + clipForMessage(found, 64) + "'");
    return sendError(res, e);
  }

  const std::string &path = req.path;
  const bool get = req.method == "GET", post = req.method == "POST";
  if (post && path == "/v1/completions")
    return handleGeneration(req, res, Endpoint::Completions);
  if (post && path == "/v1/chat/completions")
    return handleGeneration(req, res, Endpoint::ChatCompletions);
  if (post && path == "/tokenize")
    return handleTokenize(req, res);
  if (post && path == "/detokenize")
    return handleDetokenize(req, res);
  // /health, and vLLM's (and SageMaker's) liveness check /ping, GET or POST.
  if ((get && path == "/health") || ((get || post) && path == "/ping")) {
    if (readySession(res, false))
      res.status = 200;
    return;
  }
  // vLLM's /load: the generation requests in flight.
  if (get && path == "/load")
    return sendJson(res, Json{{"server_load", activeGenerations.load()}});
  if (get && path == "/version")
    return sendJson(res, Json{{"version", VOLT_VERSION}});
  if (get && path == "/metrics") {
    serving::Session *s = session.load();
    std::optional<engine::EngineStats> stats;
    if (s)
      stats = s->engine().stats();
    res.setContent(metrics.render(stats ? &*stats : nullptr, engineInfo),
                   "text/plain; version=0.0.4; charset=utf-8");
    return;
  }
  const std::string modelsPrefix = "/v1/models/";
  if (get && (path == "/v1/models" ||
              (path.size() > modelsPrefix.size() && path.rfind(modelsPrefix, 0) == 0))) {
    if (!readySession(res, false))
      return;
    if (path == "/v1/models") {
      Json data = Json::array();
      for (const std::string &name : modelNames)
        data.push_back(modelCard(name));
      return sendJson(res, Json{{"object", "list"}, {"data", std::move(data)}});
    }
    std::string name = path.substr(modelsPrefix.size());
    if (auto e = checkModel(name))
      return sendError(res, *e);
    return sendJson(res, modelCard(name));
  }

  ApiError e;
  std::vector<std::string> allowed;
  for (const Route &r : kRoutes)
    if (path == r.path && req.method != r.method)
      allowed.push_back(r.method);
  if (path.rfind(modelsPrefix, 0) == 0 && path.size() > modelsPrefix.size() && !get)
    allowed.push_back("GET");
  if (!allowed.empty()) {
    e.status = 405;
    e.code = "method_not_allowed";
    e.message = "method " + clipForMessage(req.method, 64) + " is not allowed on " +
                clipForMessage(path, 512) + " (allowed: " + joinList(allowed) + ")";
    res.setHeader("Allow", joinList(allowed));
  } else {
    e.status = 404;
    e.code = "not_found";
    e.message = "no such endpoint: " + clipForMessage(req.method, 64) + " " +
                clipForMessage(path, 512);
  }
  sendError(res, e);
}

void Server::Impl::log(const http::Request &req, const http::Response &res) {
  CurrentRequest &cur = currentRequest();
  AccessRecord &r = cur.record;
  r.method = req.method;
  r.path = req.path;
  r.remote = req.remoteAddr;
  if (r.status == 0)
    r.status = res.status;
  if (cur.start != engine::Clock::time_point{})
    r.totalSeconds = std::chrono::duration<double>(engine::Clock::now() - cur.start).count();
  metrics.observeHttp(routeLabel(req.path), req.method, r.status);
  r.ignoredFields = std::move(unknownFieldPolicy().ignored);
  unknownFieldPolicy().ignored.clear();
  if (!r.ignoredFields.empty())
    std::fprintf(stderr, "volt-serve: warning: request %s: ignored unknown fields: %s\n",
                 r.requestId.c_str(), joinList(r.ignoredFields).c_str());
  accessLog.write(r);
  cur = CurrentRequest{};
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  if (impl_->http) {
    beginShutdown();
    cancelAll();
    wait();
  }
}

Result<std::unique_ptr<Server>> Server::create(ServerOptions options) {
  if (options.maxConcurrentRequests < 1)
    return Error("--max-concurrent-requests: expected at least 1, found " +
                 std::to_string(options.maxConcurrentRequests));
  if (options.maxQueueLen < 0)
    return Error("--max-queue-len: expected at least 0, found " +
                 std::to_string(options.maxQueueLen));
  if (options.port < 0 || options.port > 65535)
    return Error("--port: expected 0 to 65535, found " + std::to_string(options.port));
  auto seconds = [](const char *flag, double v) -> Result<std::chrono::milliseconds> {
    if (!(v > 0) || v > 86400)
      return Error(std::string(flag) + ": expected seconds in (0, 86400], found " +
                   std::to_string(v));
    return std::chrono::milliseconds(int64_t(v * 1000 + 0.5));
  };
  // A client that goes away makes writes fail with EPIPE; without this the
  // first such write would kill the process.
  std::signal(SIGPIPE, SIG_IGN);

  auto impl = std::make_unique<Impl>(std::move(options));
  Impl &s = *impl;
  const ServerOptions &o = s.options;
  s.createdAt = std::time(nullptr);
  http::HttpServerOptions h;
  h.host = o.host;
  h.port = o.port;
  h.workerThreads = o.httpThreads > 0 ? o.httpThreads : o.maxConcurrentRequests + 64;
  http::HttpLimits &l = h.limits;
  l.maxBodyBytes = o.maxBodyBytes;
  l.maxHeaderBytes = o.maxHeaderBytes;
  if (o.maxHeaders < 1)
    return Error("--max-headers: expected at least 1, found " + std::to_string(o.maxHeaders));
  l.maxHeaders = size_t(o.maxHeaders);
  VOLT_ASSIGN_OR_RETURN(l.headerTimeout, seconds("--header-timeout", o.headerTimeoutSeconds));
  VOLT_ASSIGN_OR_RETURN(l.bodyTimeout, seconds("--body-timeout", o.bodyTimeoutSeconds));
  VOLT_ASSIGN_OR_RETURN(l.writeTimeout, seconds("--write-timeout", o.writeTimeoutSeconds));
  VOLT_ASSIGN_OR_RETURN(l.idleTimeout,
                        seconds("--keep-alive-timeout", double(o.keepAliveSeconds)));
  if (o.maxConnections < 0 || o.maxConnectionsPerClient < 0)
    return Error("--max-connections, --max-connections-per-client: expected 0 (no limit) or "
                 "more");
  l.maxConnections = o.maxConnections;
  l.maxConnectionsPerClient = o.maxConnectionsPerClient;
  auto server = http::HttpServer::start(
      h, [&s](const http::Request &req, http::Response &res) { s.handle(req, res); },
      [&s](const http::Request &req, const http::Response &res) { s.log(req, res); },
      [&s](const http::LayerError &e, const http::Request &req, http::Response &res) {
        s.handleLayerError(e, req, res);
      });
  if (!server)
    return Error(server.message() +
                 " (address in use, not an address of this machine, or not permitted)");
  s.http = std::move(*server);
  s.port = s.http->port();
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

int Server::port() const { return impl_->port; }
const std::string &Server::host() const { return impl_->options.host; }
std::vector<std::string> Server::servedModelNames() const { return impl_->modelNames; }

void Server::attach(serving::Session &session, const engine::GenerationDefaults &defaults) {
  Impl &s = *impl_;
  if (s.draining.load() || s.session.load())
    return;
  s.modelNames = s.options.servedModelNames;
  if (s.modelNames.empty())
    s.modelNames.push_back(session.servedModelName());
  s.metrics.setModelName(s.modelNames.front());
  const engine::EngineConfig &config = session.engine().config();
  s.limits.vocabSize = config.vocabSize;
  s.limits.maxLogprobs = config.maxLogprobs;
  s.limits.defaults = defaults;
  s.engineInfo.numKvBlocks = config.numKvBlocks;
  s.engineInfo.blockSize = config.blockSize;
  s.engineInfo.numSpeculativeTokens = config.numSpeculativeTokens;
  s.maxModelLen = config.maxModelLen;
  {
    // FNV-1a over the version, the plan file's checksum and each rank's
    // pack checksum.
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) {
      for (int i = 0; i < 8; ++i) {
        h ^= (v >> (8 * i)) & 0xFF;
        h *= 1099511628211ull;
      }
    };
    for (char c : std::string(VOLT_VERSION))
      mix(static_cast<unsigned char>(c));
    mix(session.planChecksum());
    const plan::Plan &p = session.plan();
    if (p.ranks())
      for (const plan::Rank *r : *p.ranks())
        if (r->pack())
          mix(r->pack()->checksum());
    char buf[24];
    std::snprintf(buf, sizeof buf, "fp_%016llx", static_cast<unsigned long long>(h));
    s.systemFingerprint = buf;
  }
  engine::Engine &engine = session.engine();
  s.engineThread = std::thread([&engine] { engine.run(); });
  s.session.store(&session);
}

void Server::beginShutdown() {
  Impl &s = *impl_;
  std::unique_lock<std::mutex> lock(s.shutdownMu);
  if (s.shutdownStarted) {
    lock.unlock();
    s.cancelAll();
    return;
  }
  s.shutdownStarted = true;
  s.shutdownCv.notify_all();
  s.draining.store(true);
  // New connections are refused and idle ones closed at once; the others
  // close after their response. The grace period is a hard deadline: what
  // is still running shortly before it is cancelled (so that streams end
  // with their error event and non-streaming requests get their 503), and
  // at the deadline every connection is closed.
  s.http->drain();
  s.graceThread = std::thread([&s] {
    const auto grace = std::chrono::milliseconds(
        int64_t(std::max(0.0, s.options.shutdownGraceSeconds) * 1000 + 0.5));
    const auto margin = std::min(std::chrono::milliseconds(500), grace / 4);
    if (!s.http->waitClosed(grace - margin)) {
      s.cancelAll();
      if (!s.http->waitClosed(margin))
        s.http->closeAll();
    }
    std::lock_guard<std::mutex> lock(s.shutdownMu);
    s.closed = true;
    s.shutdownCv.notify_all();
  });
}

void Server::cancelAll() { impl_->cancelAll(); }

void Server::wait() {
  Impl &s = *impl_;
  {
    std::unique_lock<std::mutex> lock(s.shutdownMu);
    s.shutdownCv.wait(lock, [&] { return s.shutdownStarted; });
  }
  std::thread grace;
  {
    std::lock_guard<std::mutex> lock(s.shutdownMu);
    grace = std::move(s.graceThread);
  }
  if (grace.joinable())
    grace.join();
  // Joins the workers (their connections are closed, their runs done or
  // cancelled) and the I/O thread, then stops the engine.
  s.http.reset();
  if (serving::Session *session = s.session.load()) {
    session->engine().stop();
    if (s.engineThread.joinable())
      s.engineThread.join();
  }
}

} // namespace volt::server
