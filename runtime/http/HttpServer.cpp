//===- HttpServer.cpp - an event-driven HTTP/1.1 server -------------------===//
//
// Threads: one I/O thread runs the io_context; everything a Connection does
// happens on it. Workers run handlers; they reach a connection only by
// posting to the io_context through its ConnectionState (which holds the
// connection weakly, so a closed connection simply drops what is posted).
//
// A connection is in one phase at a time:
//   Idle      waiting for the first byte of a request (idle timeout);
//   Header    reading the request line and headers (header timeout);
//   Body      reading the body (body timeout);
//   Handling  a worker has the request; the socket is still read, to see the
//             client go away and to buffer a pipelined request (bounded);
//   Closing   the response is sent and the write side shut; what the client
//             still sends is read and dropped for a moment, so that closing
//             does not reset the connection before it has read the answer;
//   Closed.
// Writes queue in order; the last write of a response moves the connection
// back to Idle (keep-alive) or to Closing.
//
//===----------------------------------------------------------------------===//
#include "runtime/http/HttpServer.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <sys/socket.h>

#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace volt::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

namespace {

/// Bytes a connection buffers beyond the request being handled (the start
/// of a pipelined one); reading pauses above this.
constexpr size_t kPipelineSlack = 64 * 1024;
/// After the write side is shut: how long, and how much, the client's
/// leftovers are read and dropped before the socket is closed.
constexpr std::chrono::milliseconds kLingerTime{1000};
constexpr size_t kLingerBytes = 4 * 1024 * 1024;
constexpr size_t kReadChunk = 16 * 1024;

std::string seconds(std::chrono::milliseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", double(d.count()) / 1000.0);
  return buf;
}

} // namespace

void Response::setHeader(std::string name, std::string value) {
  std::erase_if(headers, [&](const auto &h) { return equalsIgnoreCase(h.first, name); });
  headers.emplace_back(std::move(name), std::move(value));
}

void Response::setContent(std::string content, const std::string &contentType) {
  body = std::move(content);
  stream = nullptr;
  setHeader("Content-Type", contentType);
}

void Response::setStream(const std::string &contentType, StreamProvider provider) {
  body.clear();
  stream = std::move(provider);
  setHeader("Content-Type", contentType);
}

class Connection;

/// What worker threads hold of a connection.
struct ConnectionState {
  std::atomic<bool> gone{false};
  net::io_context *io = nullptr;
  std::weak_ptr<Connection> connection;
  /// The socket's descriptor while it is open (-1 once the I/O thread has
  /// closed it, so that a worker never writes to a number the kernel has
  /// since given to another connection); both sides hold fdMu around it.
  std::mutex fdMu;
  int fd = -1;
};

bool Request::clientGone() const { return !connection || connection->gone.load(); }

namespace {

/// A write's completion, waited for by a worker.
struct WriteWait {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  bool ok = false;
  void complete(bool success) {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    ok = success;
    cv.notify_all();
  }
  bool wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
    return ok;
  }
};

struct PendingWrite {
  std::string bytes;
  /// The last bytes of a response.
  bool last = false;
  /// Close (gracefully) once it is written.
  bool closeAfter = false;
  std::function<void(bool)> done;
};

/// A fixed set of threads taking tasks in order.
class WorkerPool {
public:
  explicit WorkerPool(int threads) {
    for (int i = 0; i < threads; ++i)
      threads_.emplace_back([this] { loop(); });
  }
  ~WorkerPool() { stop(); }
  void submit(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }
  /// Runs what is queued, then joins.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread &t : threads_)
      if (t.joinable())
        t.join();
  }

private:
  void loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty())
          return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

} // namespace

struct HttpServer::Impl {
  HttpServerOptions options;
  Handler handler;
  Logger logger;
  ErrorHandler errors;

  net::io_context io;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> guard;
  tcp::acceptor acceptor{io};
  net::steady_timer acceptRetry{io};
  int port = 0;
  std::thread ioThread;
  std::unique_ptr<WorkerPool> workers;

  // I/O thread only.
  std::set<std::shared_ptr<Connection>> open;
  std::map<std::string, int> perClient;

  std::atomic<bool> drainingFlag{false};
  std::atomic<int> openCount{0};
  std::mutex closedMu;
  std::condition_variable closedCv;

  void accept();
  void closed(Connection &c);
  /// Runs a request on a worker: the handler, the response, the logger.
  void serve(std::shared_ptr<ConnectionState> state, Request request, bool keepAlive);
};

namespace {

std::string reason(int status) {
  std::string_view r = bhttp::obsolete_reason(bhttp::int_to_status(unsigned(status)));
  return std::string(r.empty() ? std::string_view("Unknown") : r);
}

/// The status line and headers; the layer decides the framing headers.
std::string serializeHead(const Response &res, int version, bool close, bool stream) {
  std::string out = version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  out += std::to_string(res.status) + " " + reason(res.status) + "\r\n";
  for (const auto &[k, v] : res.headers) {
    if (equalsIgnoreCase(k, "Content-Length") || equalsIgnoreCase(k, "Transfer-Encoding") ||
        equalsIgnoreCase(k, "Connection"))
      continue;
    out += k + ": " + v + "\r\n";
  }
  const bool noBody = res.status == 204 || res.status == 304 || res.status < 200;
  if (stream) {
    if (version != 10)
      out += "Transfer-Encoding: chunked\r\n";
  } else if (!noBody) {
    out += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
  }
  if (close)
    out += "Connection: close\r\n";
  out += "\r\n";
  return out;
}

void postWrite(const std::shared_ptr<ConnectionState> &state, std::string bytes, bool last,
               bool closeAfter, std::function<void(bool)> done);
void postClose(const std::shared_ptr<ConnectionState> &state);

} // namespace

class Connection : public std::enable_shared_from_this<Connection> {
public:
  Connection(HttpServer::Impl &server, tcp::socket socket)
      : server_(server), socket_(std::move(socket)), timer_(server.io),
        reader_(server.options.limits) {
    state_ = std::make_shared<ConnectionState>();
    state_->io = &server.io;
    boost::system::error_code ec;
    tcp::endpoint remote = socket_.remote_endpoint(ec);
    if (!ec) {
      remoteAddr_ = remote.address().to_string();
      remotePort_ = remote.port();
    }
    socket_.set_option(tcp::no_delay(true), ec);
    state_->fd = socket_.native_handle();
  }

  ~Connection() {
    std::lock_guard<std::mutex> lock(state_->fdMu);
    state_->fd = -1;
  }

  const std::string &remoteAddr() const { return remoteAddr_; }

  void start() {
    state_->connection = weak_from_this();
    toIdle();
    read();
  }

  /// Refuses the connection at once (over a connection limit).
  void refuse(const LayerError &e) {
    state_->connection = weak_from_this();
    layerError(e);
  }

  void queueWrite(PendingWrite w) {
    if (phase_ == Phase::Closed || phase_ == Phase::Closing) {
      if (w.done)
        w.done(false);
      return;
    }
    writes_.push_back(std::move(w));
    if (!writing_)
      writeNext();
  }

  /// Closes an idle connection now (drain); returns whether it was idle.
  bool closeIfIdle() {
    if (phase_ == Phase::Idle && buffer_.size() == 0 && !writing_) {
      close();
      return true;
    }
    return false;
  }

  void close() {
    if (phase_ == Phase::Closed)
      return;
    phase_ = Phase::Closed;
    state_->gone.store(true);
    boost::system::error_code ec;
    {
      std::lock_guard<std::mutex> lock(state_->fdMu);
      state_->fd = -1;
      socket_.shutdown(tcp::socket::shutdown_both, ec);
      socket_.close(ec);
    }
    timer_.cancel();
    std::deque<PendingWrite> pending = std::move(writes_);
    writes_.clear();
    for (PendingWrite &w : pending)
      if (w.done)
        w.done(false);
    server_.closed(*this);
  }

private:
  enum class Phase { Idle, Header, Body, Handling, Closing, Closed };

  const HttpLimits &limits() const { return server_.options.limits; }

  void arm(std::chrono::milliseconds after) {
    timer_.expires_after(after);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code &ec) {
      if (!ec)
        self->timedOut();
    });
  }

  void toIdle() {
    phase_ = Phase::Idle;
    arm(limits().idleTimeout);
    if (buffer_.size() > 0)
      startRequest();
  }

  void startRequest() {
    phase_ = Phase::Header;
    arm(limits().headerTimeout);
    parse();
  }

  void read() {
    if (reading_ || phase_ == Phase::Closed)
      return;
    // While a request is handled, buffer at most a little of the next.
    if (phase_ == Phase::Handling && buffer_.size() >= limits().maxHeaderBytes + kPipelineSlack)
      return;
    reading_ = true;
    socket_.async_read_some(
        buffer_.prepare(kReadChunk),
        [self = shared_from_this()](const boost::system::error_code &ec, size_t n) {
          self->onRead(ec, n);
        });
  }

  void onRead(const boost::system::error_code &ec, size_t n) {
    reading_ = false;
    if (phase_ == Phase::Closed)
      return;
    if (phase_ == Phase::Closing) {
      buffer_.consumeAll();
      lingered_ += n;
      if (ec || lingered_ > kLingerBytes)
        return close();
      return read();
    }
    if (ec) {
      // The client closed (or reset) its side. A request being handled is
      // abandoned: its worker sees clientGone() and stops.
      state_->gone.store(true);
      if (phase_ == Phase::Handling && writing_)
        return; // the write fails and closes
      if (phase_ == Phase::Handling)
        return close();
      return close(); // idle, or a request cut short
    }
    buffer_.commit(n);
    if (phase_ == Phase::Idle)
      startRequest();
    else if (phase_ == Phase::Header || phase_ == Phase::Body)
      parse();
    read();
  }

  void parse() {
    while (phase_ == Phase::Header || phase_ == Phase::Body) {
      size_t used = 0;
      auto data = buffer_.data();
      RequestReader::Step step = reader_.feed(
          std::string_view(static_cast<const char *>(data.data()), data.size()), used);
      buffer_.consume(used);
      switch (step) {
      case RequestReader::Step::NeedMore:
        return;
      case RequestReader::Step::Headers:
        phase_ = Phase::Body;
        arm(limits().bodyTimeout);
        // curl and others wait for this before sending a body.
        if (reader_.expectsContinue())
          queueWrite(PendingWrite{"HTTP/1.1 100 Continue\r\n\r\n", false, false, nullptr});
        break;
      case RequestReader::Step::Complete:
        return dispatch();
      case RequestReader::Step::Failed:
        return layerError(reader_.error());
      }
    }
  }

  Request partialRequest() const {
    Request r = reader_.partial();
    r.remoteAddr = remoteAddr_;
    r.remotePort = remotePort_;
    r.connection = state_;
    return r;
  }

  void dispatch() {
    phase_ = Phase::Handling;
    timer_.cancel();
    bool keepAlive = false;
    Request r = reader_.take(keepAlive);
    r.remoteAddr = remoteAddr_;
    r.remotePort = remotePort_;
    r.connection = state_;
    server_.workers->submit([&server = server_, state = state_, r = std::move(r),
                             keepAlive]() mutable {
      server.serve(std::move(state), std::move(r), keepAlive);
    });
  }

  /// Answers a request the layer refuses, then closes.
  void layerError(const LayerError &e) {
    Request r = partialRequest();
    phase_ = Phase::Handling;
    timer_.cancel();
    Response res;
    res.status = e.status;
    if (server_.errors)
      server_.errors(e, r, res);
    if (server_.logger)
      server_.logger(r, res);
    std::string bytes = serializeHead(res, r.version == 10 ? 10 : 11, true, false) + res.body;
    queueWrite(PendingWrite{std::move(bytes), true, true, nullptr});
  }

  void writeNext() {
    writing_ = true;
    arm(limits().writeTimeout);
    net::async_write(socket_, net::buffer(writes_.front().bytes),
                     [self = shared_from_this()](const boost::system::error_code &ec, size_t) {
                       self->onWrite(ec);
                     });
  }

  void onWrite(const boost::system::error_code &ec) {
    writing_ = false;
    if (phase_ == Phase::Closed)
      return;
    PendingWrite w = std::move(writes_.front());
    writes_.pop_front();
    if (ec) {
      if (w.done)
        w.done(false);
      return close();
    }
    if (w.done)
      w.done(true);
    if (w.last) {
      if (w.closeAfter || state_->gone.load() || server_.drainingFlag.load())
        return closeGracefully();
      toIdle();
      read();
      return;
    }
    if (!writes_.empty())
      return writeNext();
    timer_.cancel(); // no deadline while the worker produces the next piece
  }

  void closeGracefully() {
    phase_ = Phase::Closing;
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    if (ec)
      return close();
    buffer_.consumeAll();
    arm(kLingerTime);
    read();
  }

  void timedOut() {
    switch (phase_) {
    case Phase::Header:
      if (!writing_)
        return layerError({408, "header_timeout",
                           "the request line and headers did not arrive within " +
                               seconds(limits().headerTimeout) +
                               " s (--header-timeout)"});
      return close();
    case Phase::Body:
      return layerError({408, "body_timeout",
                         "the request body did not arrive within " +
                             seconds(limits().bodyTimeout) +
                             " s (--body-timeout)"});
    default:
      // Idle keep-alive, a write the client did not take, the linger.
      return close();
    }
  }

  HttpServer::Impl &server_;
  tcp::socket socket_;
  net::steady_timer timer_;
  struct Buffer : beast::flat_buffer {
    void consumeAll() { consume(size()); }
  } buffer_;
  RequestReader reader_;
  std::shared_ptr<ConnectionState> state_;
  std::string remoteAddr_;
  int remotePort_ = 0;
  Phase phase_ = Phase::Idle;
  bool reading_ = false;
  bool writing_ = false;
  size_t lingered_ = 0;
  std::deque<PendingWrite> writes_;
};

namespace {

void postWrite(const std::shared_ptr<ConnectionState> &state, std::string bytes, bool last,
               bool closeAfter, std::function<void(bool)> done) {
  net::post(*state->io, [state, bytes = std::move(bytes), last, closeAfter,
                         done = std::move(done)]() mutable {
    std::shared_ptr<Connection> c = state->connection.lock();
    if (!c) {
      if (done)
        done(false);
      return;
    }
    c->queueWrite(PendingWrite{std::move(bytes), last, closeAfter, std::move(done)});
  });
}

void postClose(const std::shared_ptr<ConnectionState> &state) {
  net::post(*state->io, [state] {
    if (std::shared_ptr<Connection> c = state->connection.lock())
      c->close();
  });
}

/// Sends what the socket takes now from the calling worker, without
/// blocking (a stream's pieces then reach the client without a hop through
/// the I/O thread, which on a busy machine may wait for a core); returns
/// the bytes sent, or nothing once the connection is closed or broken.
/// Only the worker serving the connection writes while it is handled, and
/// only when none of its writes is queued on the I/O thread, so the bytes
/// keep their order.
std::optional<size_t> sendNow(ConnectionState &state, const std::string &bytes) {
  std::lock_guard<std::mutex> lock(state.fdMu);
  if (state.fd < 0)
    return std::nullopt;
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n =
        ::send(state.fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0)
      sent += static_cast<size_t>(n);
    else if (n < 0 && errno == EINTR)
      continue;
    else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      break;
    else
      return std::nullopt;
  }
  return sent;
}

/// Writes and waits for the bytes to reach the kernel: at once from this
/// thread where the socket takes them, the rest through the I/O thread
/// (whose write deadline then holds).
bool writeAndWait(const std::shared_ptr<ConnectionState> &state, std::string bytes, bool last,
                  bool closeAfter) {
  if (state->gone.load())
    return false;
  if (!last && !closeAfter) {
    const std::optional<size_t> sent = sendNow(*state, bytes);
    if (!sent)
      return false;
    if (*sent == bytes.size())
      return true;
    bytes.erase(0, *sent);
  }
  auto wait = std::make_shared<WriteWait>();
  postWrite(state, std::move(bytes), last, closeAfter, [wait](bool ok) { wait->complete(ok); });
  return wait->wait();
}

} // namespace

bool StreamSink::write(const char *data, size_t size) {
  if (size == 0)
    return !c_->gone.load();
  std::string frame;
  if (chunked_) {
    char hex[24];
    std::snprintf(hex, sizeof hex, "%zx\r\n", size);
    frame.reserve(size + 32);
    frame += hex;
    frame.append(data, size);
    frame += "\r\n";
  } else {
    frame.assign(data, size);
  }
  return writeAndWait(c_, std::move(frame), false, false);
}

void HttpServer::Impl::serve(std::shared_ptr<ConnectionState> state, Request request,
                             bool keepAlive) {
  Response res;
  try {
    handler(request, res);
  } catch (const std::exception &e) {
    res = Response{};
    res.status = 500;
    if (errors)
      errors(LayerError{500, "internal", std::string("internal server error: ") + e.what()},
             request, res);
  } catch (...) {
    res = Response{};
    res.status = 500;
    if (errors)
      errors(LayerError{500, "internal", "internal server error"}, request, res);
  }
  const int version = request.version == 10 ? 10 : 11;
  bool close = !keepAlive || drainingFlag.load() ||
               equalsIgnoreCase(res.header("Connection"), "close");
  if (state->gone.load()) {
    // The client left: nothing is written.
    postClose(state);
  } else if (!res.stream) {
    postWrite(state, serializeHead(res, version, close, false) + res.body, true, close, nullptr);
  } else {
    // HTTP/1.0 has no chunks: the end of the stream is the end of the
    // connection.
    const bool chunked = version == 11;
    close = close || !chunked;
    StreamSink sink(state, chunked);
    bool ok = writeAndWait(state, serializeHead(res, version, close, true), false, false);
    while (ok && !sink.isDone())
      ok = res.stream(sink) && !state->gone.load();
    if (ok && sink.isDone())
      postWrite(state, chunked ? std::string("0\r\n\r\n") : std::string(), true, close, nullptr);
    else
      postClose(state);
  }
  if (logger)
    logger(request, res);
}

void HttpServer::Impl::accept() {
  acceptor.async_accept([this](const boost::system::error_code &ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor.is_open())
      return;
    if (ec) {
      // Out of descriptors, most likely: try again shortly, without
      // spinning.
      acceptRetry.expires_after(std::chrono::milliseconds(50));
      acceptRetry.async_wait([this](const boost::system::error_code &e) {
        if (!e && acceptor.is_open())
          accept();
      });
      return;
    }
    auto c = std::make_shared<Connection>(*this, std::move(socket));
    open.insert(c);
    openCount.fetch_add(1);
    int &fromClient = perClient[c->remoteAddr()];
    ++fromClient;
    const HttpLimits &l = options.limits;
    if (l.maxConnections > 0 && int(open.size()) > l.maxConnections)
      c->refuse({503, "too_many_connections",
                 "the server has " + std::to_string(l.maxConnections) +
                     " connections open, its limit (--max-connections)"});
    else if (l.maxConnectionsPerClient > 0 && fromClient > l.maxConnectionsPerClient)
      c->refuse({503, "too_many_connections_from_client",
                 "this client address has " + std::to_string(l.maxConnectionsPerClient) +
                     " connections open, the limit per client (--max-connections-per-client)"});
    else
      c->start();
    accept();
  });
}

void HttpServer::Impl::closed(Connection &c) {
  auto it = perClient.find(c.remoteAddr());
  if (it != perClient.end() && --it->second <= 0)
    perClient.erase(it);
  // The set's reference goes last: `c` may be destroyed when this returns,
  // after the handler that called close() is done with it.
  for (auto i = open.begin(); i != open.end(); ++i)
    if (i->get() == &c) {
      std::shared_ptr<Connection> keep = *i;
      open.erase(i);
      net::post(io, [keep] {});
      break;
    }
  {
    std::lock_guard<std::mutex> lock(closedMu);
    openCount.fetch_sub(1);
  }
  closedCv.notify_all();
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(HttpServerOptions options, Handler handler,
                                                      Logger logger, ErrorHandler errors) {
  auto impl = std::make_unique<Impl>();
  Impl &s = *impl;
  s.options = std::move(options);
  s.handler = std::move(handler);
  s.logger = std::move(logger);
  s.errors = std::move(errors);
  const std::string where = s.options.host + ":" + std::to_string(s.options.port);
  boost::system::error_code ec;
  net::ip::address address = net::ip::make_address(s.options.host, ec);
  if (ec) {
    // A name: resolve it (localhost and the like).
    tcp::resolver resolver(s.io);
    auto results = resolver.resolve(s.options.host, std::to_string(s.options.port), ec);
    if (ec || results.empty())
      return Error("cannot listen on " + where + ": cannot resolve '" + s.options.host + "'");
    address = results.begin()->endpoint().address();
  }
  tcp::endpoint endpoint(address, static_cast<unsigned short>(s.options.port));
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec)
    // SO_REUSEADDR lets a restart bind at once; without SO_REUSEPORT a
    // second server on the same port fails instead of sharing it.
    s.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec)
    s.acceptor.bind(endpoint, ec);
  if (!ec)
    s.acceptor.listen(s.options.backlog, ec);
  if (ec)
    return Error("cannot listen on " + where + " (" + ec.message() + ")");
  s.port = s.acceptor.local_endpoint().port();
  s.workers = std::make_unique<WorkerPool>(std::max(1, s.options.workerThreads));
  s.guard.emplace(s.io.get_executor());
  s.accept();
  s.ioThread = std::thread([&s] { s.io.run(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  Impl &s = *impl_;
  drain();
  closeAll();
  waitClosed(std::chrono::milliseconds(5000));
  // Workers finish (their connections are closed, so their writes fail at
  // once) before the I/O thread stops.
  s.workers->stop();
  s.guard.reset();
  net::post(s.io, [&s] { s.io.stop(); });
  if (s.ioThread.joinable())
    s.ioThread.join();
}

int HttpServer::port() const { return impl_->port; }

void HttpServer::drain() {
  Impl &s = *impl_;
  if (s.drainingFlag.exchange(true))
    return;
  s.closedCv.notify_all();
  net::post(s.io, [&s] {
    boost::system::error_code ec;
    s.acceptor.close(ec);
    s.acceptRetry.cancel();
    std::vector<std::shared_ptr<Connection>> all(s.open.begin(), s.open.end());
    for (const auto &c : all)
      c->closeIfIdle();
  });
}

void HttpServer::closeAll() {
  Impl &s = *impl_;
  net::post(s.io, [&s] {
    std::vector<std::shared_ptr<Connection>> all(s.open.begin(), s.open.end());
    for (const auto &c : all)
      c->close();
  });
}

bool HttpServer::waitClosed(std::chrono::milliseconds timeout) {
  Impl &s = *impl_;
  std::unique_lock<std::mutex> lock(s.closedMu);
  return s.closedCv.wait_for(lock, timeout, [&] {
    return s.drainingFlag.load() && s.openCount.load() == 0;
  });
}

bool HttpServer::draining() const { return impl_->drainingFlag.load(); }

int HttpServer::connections() const { return impl_->openCount.load(); }

} // namespace volt::http
