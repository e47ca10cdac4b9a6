//===- HttpServer.h - an event-driven HTTP/1.1 server ----------*- C++ -*-===//
//
// The HTTP layer under volt-serve, on Boost.Beast's HTTP parser and Asio.
// One I/O thread reads and writes every connection without blocking, so an
// idle or slow connection costs a socket and a buffer, never a thread; a
// request is handed to a worker thread only once it has been read whole.
// Every limit an attacker could push on is enforced by the layer, before a
// handler sees anything:
//
//   - request line and headers: at most `maxHeaderBytes` (431) and
//     `maxHeaders` fields (431), within `headerTimeout` of the request's
//     first byte (408); the target at most `maxTargetBytes` (414);
//   - body: at most `maxBodyBytes` however it is framed (Content-Length or
//     chunked; 413), within `bodyTimeout` of the end of the headers (408);
//   - framing: more than one Content-Length, Content-Length with
//     Transfer-Encoding, a Transfer-Encoding other than `chunked`, or one
//     in an HTTP/1.0 request, is refused (400) and the connection closed,
//     since a proxy in front may read the message differently (request
//     smuggling);
//   - idle keep-alive connections are closed after `idleTimeout`, a write
//     the client does not take within `writeTimeout` closes the connection;
//   - connections in total and per client address are bounded (503 and
//     close beyond).
//
// Pipelined requests are read one after the other and answered in order.
// HTTP/1.0 requests get `Connection: close` responses, and streams are
// delimited by closing the connection (1.0 has no chunked encoding).
//
// Errors of the layer itself (malformed requests, limits, timeouts) are
// answered on the I/O thread by `ErrorHandler`, which gives the body and
// logs; after such an error the connection is closed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace volt::http {

struct HttpLimits {
  size_t maxHeaderBytes = 16 * 1024;
  size_t maxHeaders = 100;
  size_t maxTargetBytes = 8 * 1024;
  size_t maxBodyBytes = 8 * 1024 * 1024;
  std::chrono::milliseconds headerTimeout{10'000};
  std::chrono::milliseconds bodyTimeout{60'000};
  std::chrono::milliseconds idleTimeout{5'000};
  std::chrono::milliseconds writeTimeout{60'000};
  int maxConnections = 4096;
  int maxConnectionsPerClient = 1024;
};

using Headers = std::vector<std::pair<std::string, std::string>>;

/// ASCII case-insensitive equality (header names, tokens).
bool equalsIgnoreCase(std::string_view a, std::string_view b);
/// The value of the first header named `name` (ASCII case-insensitive), or "".
std::string findHeader(const Headers &headers, std::string_view name);

struct ConnectionState;

struct Request {
  std::string method;
  /// The request target as sent, and its path (before any '?').
  std::string target, path;
  /// 10 for HTTP/1.0, 11 for HTTP/1.1.
  int version = 11;
  Headers headers;
  std::string body;
  std::string remoteAddr;
  int remotePort = 0;

  std::string header(std::string_view name) const { return findHeader(headers, name); }
  /// Whether the client has closed its connection (or the server has):
  /// nothing more can be sent. Safe to call from any thread.
  bool clientGone() const;

  std::shared_ptr<ConnectionState> connection;
};

/// Where a streaming response writes. `write` blocks until the I/O thread
/// has handed the bytes to the kernel; it returns false once the client is
/// gone (or did not read within the write timeout).
class StreamSink {
public:
  StreamSink(std::shared_ptr<ConnectionState> c, bool chunked)
      : c_(std::move(c)), chunked_(chunked) {}
  bool write(const char *data, size_t size);
  /// The stream is complete (the last chunk is written by the layer).
  void done() { done_ = true; }
  bool isDone() const { return done_; }

private:
  std::shared_ptr<ConnectionState> c_;
  bool chunked_;
  bool done_ = false;
};

/// Called until it calls `sink.done()` or returns false (the client is
/// gone: the connection is closed).
using StreamProvider = std::function<bool(StreamSink &sink)>;

struct Response {
  int status = 200;
  Headers headers;
  std::string body;
  StreamProvider stream;

  /// Replaces any header of that name.
  void setHeader(std::string name, std::string value);
  std::string header(std::string_view name) const { return findHeader(headers, name); }
  void setContent(std::string content, const std::string &contentType);
  /// A body written as it is produced (chunked in HTTP/1.1).
  void setStream(const std::string &contentType, StreamProvider provider);
};

/// A request read whole: runs on a worker thread. It may block (waiting
/// for generation) and should look at `Request::clientGone()` meanwhile.
using Handler = std::function<void(const Request &, Response &)>;
/// After the response (the stream included) is written or abandoned, on
/// the same worker thread as the handler.
using Logger = std::function<void(const Request &, const Response &)>;

/// A request the layer refuses: `request` holds what was read of it (at
/// least the remote address; the method, target and headers when the
/// request line and headers were read). Runs on the I/O thread and must
/// not block; fills `response` (the layer adds `Connection: close`).
struct LayerError {
  int status = 400;
  /// A machine-readable reason: "malformed", "header_too_large",
  /// "too_many_headers", "target_too_long", "body_too_large",
  /// "header_timeout", "body_timeout", "bad_framing", "bad_version",
  /// "too_many_connections", "too_many_connections_from_client".
  std::string code;
  std::string message;
};
using ErrorHandler = std::function<void(const LayerError &, const Request &, Response &)>;

/// Reads requests from bytes, with the limits and framing rules above (no
/// sockets, no timeouts): the connection feeds it what arrives, and the
/// fuzz target feeds it anything.
class RequestReader {
public:
  explicit RequestReader(const HttpLimits &limits);
  ~RequestReader();
  RequestReader(const RequestReader &) = delete;
  RequestReader &operator=(const RequestReader &) = delete;

  enum class Step {
    NeedMore, ///< every byte given was used (or none could be yet)
    Headers,  ///< the request line and headers are complete and valid
    Complete, ///< the request is complete: take() it
    Failed,   ///< refused: error()
  };
  /// Reads from `data`; `used` is set to the bytes taken (the rest belongs
  /// to what comes after the step).
  Step feed(std::string_view data, size_t &used);
  /// The client closed its side: a request in progress is incomplete.
  Step finish();

  bool started() const;
  bool headerDone() const;
  /// The headers ask for `100 Continue` before the body.
  bool expectsContinue() const;
  const LayerError &error() const;
  /// The complete request (body included); the reader is then ready for
  /// the next one. `keepAlive`: the connection may serve another after it.
  Request take(bool &keepAlive);
  /// What is known of the request so far (method, target, headers once
  /// the headers are read).
  Request partial() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct HttpServerOptions {
  std::string host = "0.0.0.0";
  /// 0 picks a free port.
  int port = 0;
  int backlog = 4096;
  /// Threads that run handlers.
  int workerThreads = 64;
  HttpLimits limits;
};

class HttpServer {
public:
  /// Binds and listens (a busy port is an error); serving starts at once.
  static Result<std::unique_ptr<HttpServer>> start(HttpServerOptions options, Handler handler,
                                                   Logger logger, ErrorHandler errors);
  ~HttpServer();
  HttpServer(const HttpServer &) = delete;
  HttpServer &operator=(const HttpServer &) = delete;

  int port() const;

  /// Stops accepting (new connections are refused), closes idle
  /// keep-alive connections now and every other one after its current
  /// response, which is sent with `Connection: close`.
  void drain();
  /// Closes every connection now: streams and writes in progress fail,
  /// requests being read are dropped.
  void closeAll();
  /// Blocks until drain() was called and every connection is closed, or
  /// until `timeout`; returns whether that happened.
  bool waitClosed(std::chrono::milliseconds timeout);
  /// Whether drain() has been called.
  bool draining() const;
  /// Open connections (for tests and metrics).
  int connections() const;

  struct Impl;

private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace volt::http
