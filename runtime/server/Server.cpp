//===- Server.cpp - lifecycle, routing and the small endpoints ------------===//
#include "runtime/server/Server.h"

#include "runtime/server/Auth.h"
#include "runtime/server/Connection.h"
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

void Server::Impl::sendError(httplib::Response &res, const ApiError &error) {
  res.status = error.status;
  if (error.retryAfterSeconds)
    res.set_header("Retry-After", std::to_string(*error.retryAfterSeconds));
  res.set_content(error.body(), "application/json");
  currentRequest().record.error = clipForMessage(error.message, 256);
}

void Server::Impl::sendJson(httplib::Response &res, const Json &body) {
  res.status = 200;
  res.set_content(dumpJson(body), "application/json");
}

serving::Session *Server::Impl::readySession(httplib::Response &res, bool generation) {
  if (draining.load()) {
    if (generation)
      metrics.observeRejected("shutting_down");
    ApiError e = serverError(503, "shutting_down", "the server is shutting down");
    e.retryAfterSeconds = 1;
    res.set_header("Connection", "close");
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

void Server::Impl::registerRoutes() {
  http.set_pre_routing_handler([this](const httplib::Request &req, httplib::Response &res) {
    CurrentRequest &cur = currentRequest();
    cur.record = AccessRecord{};
    cur.start = engine::Clock::now();
    std::string id = req.get_header_value("X-Request-Id");
    cur.record.requestId = usableRequestId(id) ? id : randomId();
    UnknownFieldPolicy &fields = unknownFieldPolicy();
    fields.strict = options.strictFields;
    fields.ignored.clear();
    res.set_header("X-Request-Id", cur.record.requestId);
    // CORS (browser pages of other origins): off unless --allowed-origins
    // names the page's origin. A preflight carries no credentials, so it
    // is answered before the key is checked.
    const std::string origin = req.get_header_value("Origin");
    const bool anyOrigin = std::find(options.allowedOrigins.begin(), options.allowedOrigins.end(),
                                     "*") != options.allowedOrigins.end();
    const bool originAllowed =
        !origin.empty() && (anyOrigin || std::find(options.allowedOrigins.begin(),
                                                   options.allowedOrigins.end(),
                                                   origin) != options.allowedOrigins.end());
    if (originAllowed) {
      res.set_header("Access-Control-Allow-Origin", anyOrigin ? "*" : origin);
      if (!anyOrigin)
        res.set_header("Vary", "Origin");
    }
    if (req.method == "OPTIONS") {
      if (originAllowed) {
        res.status = 204;
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Request-Id");
        res.set_header("Access-Control-Max-Age", "600");
        return httplib::Server::HandlerResponse::Handled;
      }
      ApiError e;
      e.status = 403;
      e.code = "origin_not_allowed";
      e.message = origin.empty() ? std::string("cors: a preflight request needs an Origin header")
                                 : "cors: origin '" + clipForMessage(origin, 128) +
                                       "' is not allowed (--allowed-origins)";
      sendError(res, e);
      return httplib::Server::HandlerResponse::Handled;
    }
    const bool open = options.apiKey.empty() ||
                      (isOpenPath(req.path) && !options.authHealthAndMetrics) ||
                      bearerMatches(req.get_header_value("Authorization"), options.apiKey);
    if (!open) {
      ApiError e;
      e.status = 401;
      e.code = "invalid_api_key";
      e.message = "authorization: expected the header 'Authorization: Bearer <api key>' with the "
                  "server's key";
      // The body (if any) was not read; the connection cannot be reused.
      res.set_header("Connection", "close");
      res.set_header("WWW-Authenticate", "Bearer");
      sendError(res, e);
      return httplib::Server::HandlerResponse::Handled;
    }
    // Request bodies are JSON, said so: a page of any origin can make a
    // browser send a text/plain or form POST without asking (no preflight),
    // but not an application/json one. POST /ping reads no body and runs
    // nothing.
    if (req.method == "POST" && req.path != "/ping" &&
        !isJsonContentType(req.get_header_value("Content-Type"))) {
      const std::string found = req.get_header_value("Content-Type");
      ApiError e;
      e.status = 415;
      e.code = "unsupported_media_type";
      e.message = "content-type: expected application/json, found " +
                  (found.empty() ? std::string("none") : "'" + clipForMessage(found, 64) + "'");
      res.set_header("Connection", "close");
      sendError(res, e);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  http.Post("/v1/completions", [this](const httplib::Request &req, httplib::Response &res) {
    handleGeneration(req, res, Endpoint::Completions);
  });
  http.Post("/v1/chat/completions", [this](const httplib::Request &req, httplib::Response &res) {
    handleGeneration(req, res, Endpoint::ChatCompletions);
  });
  http.Post("/tokenize", [this](const httplib::Request &req, httplib::Response &res) {
    handleTokenize(req, res);
  });
  http.Post("/detokenize", [this](const httplib::Request &req, httplib::Response &res) {
    handleDetokenize(req, res);
  });

  http.Get("/health", [this](const httplib::Request &, httplib::Response &res) {
    if (readySession(res, false))
      res.status = 200;
  });
  // vLLM's (and SageMaker's) liveness check: /health's answer, GET or POST.
  auto ping = [this](const httplib::Request &, httplib::Response &res) {
    if (readySession(res, false))
      res.status = 200;
  };
  http.Get("/ping", ping);
  http.Post("/ping", ping);
  // vLLM's /load: the generation requests in flight.
  http.Get("/load", [this](const httplib::Request &, httplib::Response &res) {
    sendJson(res, Json{{"server_load", activeGenerations.load()}});
  });
  http.Get("/version", [this](const httplib::Request &, httplib::Response &res) {
    sendJson(res, Json{{"version", VOLT_VERSION}});
  });
  http.Get("/metrics", [this](const httplib::Request &, httplib::Response &res) {
    serving::Session *s = session.load();
    std::optional<engine::EngineStats> stats;
    if (s)
      stats = s->engine().stats();
    res.set_content(metrics.render(stats ? &*stats : nullptr, engineInfo),
                    "text/plain; version=0.0.4; charset=utf-8");
  });

  auto modelCard = [this](const std::string &name) {
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
  };
  http.Get("/v1/models", [this, modelCard](const httplib::Request &, httplib::Response &res) {
    if (!readySession(res, false))
      return;
    Json data = Json::array();
    for (const std::string &name : modelNames)
      data.push_back(modelCard(name));
    sendJson(res, Json{{"object", "list"}, {"data", std::move(data)}});
  });
  http.Get(R"(/v1/models/(.+))",
           [this, modelCard](const httplib::Request &req, httplib::Response &res) {
             if (!readySession(res, false))
               return;
             std::string name = req.matches[1];
             if (auto e = checkModel(name))
               return sendError(res, *e);
             sendJson(res, modelCard(name));
           });

  http.set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request &req, httplib::Response &res) {
        // 499: the client went away; nothing will be read.
        if (!res.body.empty() || res.status == 499)
          return httplib::Server::HandlerResponse::Unhandled;
        ApiError e;
        e.status = res.status;
        if (res.status == 404) {
          std::vector<std::string> allowed;
          for (const Route &r : kRoutes)
            if (req.path == r.path && req.method != r.method)
              allowed.push_back(r.method);
          if (!allowed.empty()) {
            e.status = 405;
            e.code = "method_not_allowed";
            e.message = "method " + req.method + " is not allowed on " + req.path +
                        " (allowed: " + joinList(allowed) + ")";
            res.set_header("Allow", joinList(allowed));
          } else {
            e.code = "not_found";
            e.message = "no such endpoint: " + req.method + " " + req.path;
          }
        } else if (res.status == 413) {
          e.code = "request_too_large";
          e.message = "the request body is larger than the limit of " +
                      std::to_string(options.maxBodyBytes) + " bytes (--max-body-bytes)";
          res.set_header("Connection", "close");
        } else if (res.status == 414) {
          e.message = "the request target is too long";
        } else if (res.status >= 500) {
          e = serverError(res.status, "", "internal server error");
        } else {
          e.message = "malformed HTTP request";
        }
        sendError(res, e);
        return httplib::Server::HandlerResponse::Handled;
      }));

  http.set_exception_handler(
      [this](const httplib::Request &, httplib::Response &res, const std::exception_ptr &ep) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception &e) {
          what = e.what();
        } catch (...) {
        }
        sendError(res, serverError(500, "", "internal server error: " + what));
      });

  http.set_logger([this](const httplib::Request &req, const httplib::Response &res) {
    CurrentRequest &cur = currentRequest();
    AccessRecord &r = cur.record;
    r.method = req.method;
    r.path = req.path;
    r.remote = req.remote_addr;
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
  });
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  if (impl_->listener.joinable()) {
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
  // A client that goes away makes writes fail with EPIPE; without this the
  // first such write would kill the process.
  std::signal(SIGPIPE, SIG_IGN);

  auto impl = std::make_unique<Impl>(std::move(options));
  Impl &s = *impl;
  const ServerOptions &o = s.options;
  s.createdAt = std::time(nullptr);
  size_t threads = size_t(o.httpThreads > 0 ? o.httpThreads : o.maxConcurrentRequests + 64);
  s.http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.http.set_payload_max_length(o.maxBodyBytes);
  s.http.set_keep_alive_max_count(1u << 20);
  s.http.set_keep_alive_timeout(o.keepAliveSeconds);
  s.http.set_tcp_nodelay(true);
  // cpp-httplib's default also sets SO_REUSEPORT, with which a second
  // server on the same port starts without an error and takes half of the
  // connections. SO_REUSEADDR alone lets a restart bind at once.
  s.http.set_socket_options([](int fd) {
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  });
  s.registerRoutes();

  if (o.port == 0) {
    s.port = s.http.bind_to_any_port(o.host);
  } else {
    s.port = s.http.bind_to_port(o.host, o.port) ? o.port : -1;
  }
  if (s.port <= 0)
    return Error("cannot listen on " + o.host + ":" + std::to_string(o.port) +
                 " (address in use, not an address of this machine, or not permitted)");
  s.listenFd = findListeningSocket(s.port);
  // cpp-httplib listens with a backlog of 5: a burst of clients would see
  // dropped connection attempts and one-second retries.
  if (s.listenFd >= 0)
    setListenBacklog(s.listenFd, 4096);
  s.listener = std::thread([&s] {
    s.http.listen_after_bind();
    std::lock_guard<std::mutex> lock(s.shutdownMu);
    s.listenerDone = true;
    s.shutdownCv.notify_all();
  });
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
  s.draining.store(true);
  // Started under the lock, so that wait() sees it once the listener ends.
  s.graceThread = std::thread([&s] {
    std::unique_lock<std::mutex> lock(s.shutdownMu);
    auto grace = std::chrono::duration<double>(s.options.shutdownGraceSeconds);
    if (!s.shutdownCv.wait_for(lock, grace, [&] { return s.listenerDone; })) {
      lock.unlock();
      s.cancelAll();
    }
  });
  // Once the listener has ended, its socket is closed and the descriptor
  // may name something else.
  if (s.listenerDone)
    return;
  // accept() now fails, which ends cpp-httplib's accept loop; it then
  // waits for the connections it has (and closes the listening socket).
  if (s.listenFd >= 0)
    stopAccepting(s.listenFd);
  else
    s.http.stop(); // ends streams at once too, but the listener must end
}

void Server::cancelAll() { impl_->cancelAll(); }

void Server::wait() {
  Impl &s = *impl_;
  if (s.listener.joinable())
    s.listener.join();
  std::thread grace;
  {
    std::lock_guard<std::mutex> lock(s.shutdownMu);
    grace = std::move(s.graceThread);
  }
  if (grace.joinable())
    grace.join();
  if (serving::Session *session = s.session.load()) {
    session->engine().stop();
    if (s.engineThread.joinable())
      s.engineThread.join();
  }
}

} // namespace volt::server
