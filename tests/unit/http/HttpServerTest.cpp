//===- HttpServerTest.cpp - the HTTP layer, over loopback sockets ---------===//
//
// Each test starts an HttpServer on a free loopback port with short limits
// and talks to it with raw sockets, so that malformed, slow, pipelined and
// abandoned requests can be sent exactly. RequestReader is also tested on
// its own (no sockets).
//
//===----------------------------------------------------------------------===//
#include "runtime/http/HttpServer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace volt::http {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

/// A blocking loopback client socket.
class Client {
public:
  explicit Client(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0;
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~Client() { close(); }
  bool connected() const { return connected_; }
  void close() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }
  /// Sends everything; false once the server has closed or reset.
  bool send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0)
        return false;
      data.remove_prefix(size_t(n));
    }
    return true;
  }
  /// Reads until `pred(received)` holds, the server closes, or `timeout`.
  template <typename Pred>
  std::string readUntil(Pred pred, std::chrono::milliseconds timeout = 5000ms) {
    auto end = Clock::now() + timeout;
    while (!pred(buffer_) && !eof_) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
      if (left.count() <= 0)
        break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, int(left.count())) <= 0)
        break;
      char buf[65536];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        eof_ = true;
        break;
      }
      buffer_.append(buf, size_t(n));
    }
    return buffer_;
  }
  /// Reads until the server closes the connection.
  std::string readAll(std::chrono::milliseconds timeout = 5000ms) {
    return readUntil([](const std::string &) { return false; }, timeout);
  }
  /// Reads `count` complete responses with Content-Length bodies.
  std::string readResponses(int count, std::chrono::milliseconds timeout = 5000ms) {
    return readUntil([count](const std::string &b) { return completeResponses(b) >= count; },
                     timeout);
  }
  bool eof() const { return eof_; }
  static int completeResponses(const std::string &b) {
    int n = 0;
    size_t at = 0;
    for (;;) {
      size_t head = b.find("\r\n\r\n", at);
      if (head == std::string::npos)
        return n;
      size_t len = 0;
      size_t cl = b.find("Content-Length: ", at);
      if (cl != std::string::npos && cl < head)
        len = std::stoul(b.substr(cl + 16));
      if (b.size() < head + 4 + len)
        return n;
      at = head + 4 + len;
      ++n;
    }
  }

private:
  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string buffer_;
};

class HttpServerTest : public ::testing::Test {
protected:
  void start(HttpLimits limits = shortLimits()) {
    HttpServerOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.workerThreads = 8;
    o.limits = limits;
    auto s = HttpServer::start(
        o, [this](const Request &req, Response &res) { handle(req, res); },
        [this](const Request &, const Response &res) {
          logged_.fetch_add(1);
          lastStatus_.store(res.status);
        },
        [](const LayerError &e, const Request &, Response &res) {
          res.setContent("{\"code\":\"" + e.code + "\"}", "application/json");
        });
    ASSERT_TRUE(s.ok()) << s.message();
    server_ = std::move(*s);
  }
  static HttpLimits shortLimits() {
    HttpLimits l;
    l.maxHeaderBytes = 4096;
    l.maxHeaders = 20;
    l.maxTargetBytes = 1024;
    l.maxBodyBytes = 64 * 1024;
    l.headerTimeout = 400ms;
    l.bodyTimeout = 400ms;
    l.idleTimeout = 300ms;
    l.writeTimeout = 1000ms;
    l.maxConnections = 64;
    l.maxConnectionsPerClient = 48;
    return l;
  }

  void handle(const Request &req, Response &res) {
    if (req.path == "/echo") {
      res.setContent(req.method + " " + req.target + " " + std::to_string(req.body.size()) + " " +
                         req.header("X-Tag"),
                     "text/plain");
    } else if (req.path == "/stream") {
      auto n = std::make_shared<int>(0);
      res.setStream("text/event-stream", [n](StreamSink &sink) {
        std::string piece = "data: " + std::to_string(*n) + "\n\n";
        if (!sink.write(piece.data(), piece.size()))
          return false;
        if (++*n == 3)
          sink.done();
        return true;
      });
    } else if (req.path == "/wait-for-close") {
      // As a generation handler: waits, looking at the connection.
      auto end = Clock::now() + 5s;
      while (!req.clientGone() && Clock::now() < end)
        std::this_thread::sleep_for(5ms);
      sawGone_.store(req.clientGone());
      res.status = 499;
    } else if (req.path == "/endless") {
      res.setStream("text/plain", [](StreamSink &sink) {
        std::string piece(16384, 'x');
        std::this_thread::sleep_for(1ms);
        return sink.write(piece.data(), piece.size());
      });
    } else if (req.path == "/throw") {
      throw std::runtime_error("boom");
    } else {
      res.status = 404;
      res.setContent("no", "text/plain");
    }
  }

  std::string get(const std::string &path) {
    Client c(server_->port());
    c.send("GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    return c.readAll();
  }

  std::unique_ptr<HttpServer> server_;
  std::atomic<int> logged_{0};
  std::atomic<int> lastStatus_{0};
  std::atomic<bool> sawGone_{false};
};

TEST_F(HttpServerTest, AnswersAndKeepsTheConnectionAlive) {
  start();
  Client c(server_->port());
  ASSERT_TRUE(c.connected());
  c.send("GET /echo?a=1 HTTP/1.1\r\nHost: x\r\nX-Tag: one\r\n\r\n");
  std::string r = c.readResponses(1);
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Content-Length: 19\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find("GET /echo?a=1 0 one"), std::string::npos) << r;
  EXPECT_EQ(r.find("Connection: close"), std::string::npos);
  c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
  r = c.readResponses(2);
  EXPECT_NE(r.find("POST /echo 5 "), std::string::npos) << r;
  EXPECT_FALSE(c.eof());
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  start();
  Client c(server_->port());
  std::string both;
  for (const char *tag : {"first", "second", "third"})
    both += std::string("GET /echo HTTP/1.1\r\nHost: x\r\nX-Tag: ") + tag + "\r\n\r\n";
  c.send(both); // one packet
  std::string r = c.readResponses(3);
  ASSERT_EQ(Client::completeResponses(r), 3) << r;
  size_t a = r.find("first"), b = r.find("second"), d = r.find("third");
  EXPECT_TRUE(a < b && b < d) << r;
}

TEST_F(HttpServerTest, StreamsAreChunkedInHttp11AndCloseDelimitedInHttp10) {
  start();
  {
    Client c(server_->port());
    c.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
    std::string r = c.readUntil([](const std::string &b) { return b.find("0\r\n\r\n") != b.npos; });
    EXPECT_NE(r.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << r;
    EXPECT_NE(r.find("9\r\ndata: 0\n\n\r\n9\r\ndata: 1\n\n\r\n9\r\ndata: 2\n\n\r\n0\r\n\r\n"),
              std::string::npos)
        << r;
    // Still usable afterwards.
    c.send("GET /echo HTTP/1.1\r\nHost: x\r\n\r\n");
    r = c.readUntil([](const std::string &b) { return b.find("GET /echo 0") != b.npos; });
    EXPECT_NE(r.find("GET /echo 0"), std::string::npos);
  }
  {
    Client c(server_->port());
    c.send("GET /stream HTTP/1.0\r\n\r\n");
    std::string r = c.readAll();
    EXPECT_TRUE(c.eof());
    EXPECT_EQ(r.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << r;
    EXPECT_EQ(r.find("chunked"), std::string::npos) << r;
    EXPECT_NE(r.find("Connection: close\r\n"), std::string::npos) << r;
    EXPECT_NE(r.find("\r\n\r\ndata: 0\n\ndata: 1\n\ndata: 2\n\n"), std::string::npos) << r;
  }
}

TEST_F(HttpServerTest, HeaderAndTargetLimits) {
  start();
  std::string r = get("/echo?" + std::string(2000, 'a'));
  EXPECT_EQ(r.rfind("HTTP/1.1 414 ", 0), 0u) << r.substr(0, 80);
  EXPECT_NE(r.find("target_too_long"), std::string::npos);

  Client big(server_->port());
  big.send("GET /echo HTTP/1.1\r\nX-Big: " + std::string(8000, 'b') + "\r\n\r\n");
  r = big.readAll();
  EXPECT_EQ(r.rfind("HTTP/1.1 431 ", 0), 0u) << r.substr(0, 80);
  EXPECT_NE(r.find("header_too_large"), std::string::npos);
  EXPECT_TRUE(big.eof());

  std::string many = "GET /echo HTTP/1.1\r\n";
  for (int i = 0; i < 30; ++i)
    many += "X-" + std::to_string(i) + ": v\r\n";
  Client m(server_->port());
  m.send(many + "\r\n");
  r = m.readAll();
  EXPECT_EQ(r.rfind("HTTP/1.1 431 ", 0), 0u) << r.substr(0, 80);
  EXPECT_NE(r.find("too_many_headers"), std::string::npos);
  EXPECT_EQ(lastStatus_.load(), 431); // layer errors are logged too
}

TEST_F(HttpServerTest, BodyLimitHoldsForChunkedBodies) {
  start();
  Client c(server_->port());
  c.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  // Far more than the limit, in chunks: refused once the limit is passed,
  // long before all of it is sent (the client sees the connection end).
  std::string chunk = "4000\r\n" + std::string(0x4000, 'z') + "\r\n";
  size_t sent = 0;
  for (int i = 0; i < 4096 && c.send(chunk); ++i)
    sent += 0x4000;
  std::string r = c.readAll();
  EXPECT_EQ(r.rfind("HTTP/1.1 413 ", 0), 0u) << r.substr(0, 80);
  EXPECT_NE(r.find("body_too_large"), std::string::npos);
  EXPECT_LT(sent, size_t(64) << 20);

  Client cl(server_->port());
  cl.send("POST /echo HTTP/1.1\r\nContent-Length: 100000\r\n\r\n");
  r = cl.readAll();
  EXPECT_EQ(r.rfind("HTTP/1.1 413 ", 0), 0u) << r.substr(0, 80);
}

TEST_F(HttpServerTest, ConflictingFramingIsRefusedAndTheConnectionClosed) {
  start();
  const char *bad[] = {
      "POST /echo HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc",
      "POST /echo HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab",
      "POST /echo HTTP/1.1\r\nContent-Length: 2, 2\r\n\r\nab",
      "POST /echo HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n0\r\n\r\n",
      "POST /echo HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\nab",
      "POST /echo HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
      "POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
  };
  for (const char *req : bad) {
    Client c(server_->port());
    // A second request after it must not be served (smuggling shape).
    c.send(std::string(req) + "GET /echo HTTP/1.1\r\nX-Tag: smuggled\r\n\r\n");
    std::string r = c.readAll();
    EXPECT_NE(r.find(" 400 "), std::string::npos) << req << "\n" << r;
    EXPECT_NE(r.find("bad_framing"), std::string::npos) << req;
    EXPECT_EQ(r.find("smuggled"), std::string::npos) << req;
    EXPECT_TRUE(c.eof()) << req;
  }
  std::string r = get(" garbage");
  EXPECT_NE(r.find(" 400 "), std::string::npos) << r;
}

TEST_F(HttpServerTest, SlowClientsTimeOutWithoutStarvingOthers) {
  start();
  // Trickling headers on many connections: each costs no thread.
  std::vector<std::unique_ptr<Client>> slow;
  for (int i = 0; i < 40; ++i) {
    slow.push_back(std::make_unique<Client>(server_->port()));
    slow.back()->send("GET /echo HTTP/1.1\r\nX-Slow: ");
  }
  auto t0 = Clock::now();
  std::string r = get("/echo");
  EXPECT_NE(r.find(" 200 "), std::string::npos);
  EXPECT_LT(Clock::now() - t0, 300ms);
  // The header deadline (400 ms from the first byte) answers 408.
  for (auto &c : slow) {
    c->send("a");
    std::string s = c->readAll(3000ms);
    EXPECT_NE(s.find(" 408 "), std::string::npos) << s;
    EXPECT_NE(s.find("header_timeout"), std::string::npos);
  }
  // A body that stops coming: 408 too.
  Client body(server_->port());
  body.send("POST /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
  r = body.readAll(3000ms);
  EXPECT_NE(r.find(" 408 "), std::string::npos) << r;
  EXPECT_NE(r.find("body_timeout"), std::string::npos);
  // An idle keep-alive connection is closed after the idle timeout.
  Client idle(server_->port());
  t0 = Clock::now();
  idle.readAll(3000ms);
  EXPECT_TRUE(idle.eof());
  EXPECT_LT(Clock::now() - t0, 2000ms);
}

TEST_F(HttpServerTest, ConnectionsPerClientAreBounded) {
  start();
  std::vector<std::unique_ptr<Client>> held;
  for (int i = 0; i < 48; ++i)
    held.push_back(std::make_unique<Client>(server_->port()));
  for (int i = 0; i < 200 && server_->connections() < 48; ++i)
    std::this_thread::sleep_for(5ms);
  Client extra(server_->port());
  std::string r = extra.readAll();
  EXPECT_NE(r.find(" 503 "), std::string::npos) << r;
  EXPECT_NE(r.find("too_many_connections_from_client"), std::string::npos);
  held.clear();
  for (int i = 0; i < 200 && server_->connections() > 0; ++i)
    std::this_thread::sleep_for(5ms);
  EXPECT_NE(get("/echo").find(" 200 "), std::string::npos);
}

TEST_F(HttpServerTest, HandlersSeeTheClientGo) {
  start();
  {
    Client c(server_->port());
    c.send("GET /wait-for-close HTTP/1.1\r\n\r\n");
    std::this_thread::sleep_for(50ms);
  } // closed
  for (int i = 0; i < 400 && logged_.load() == 0; ++i)
    std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(sawGone_.load());
  EXPECT_EQ(lastStatus_.load(), 499);
}

TEST_F(HttpServerTest, AClientThatDoesNotReadIsCutAtTheWriteTimeout) {
  start();
  Client c(server_->port());
  c.send("GET /endless HTTP/1.1\r\n\r\n");
  // Never read: the kernel buffers fill, the write times out (1 s), and
  // the stream's worker is let go.
  for (int i = 0; i < 600 && logged_.load() == 0; ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(logged_.load(), 1);
  EXPECT_NE(get("/echo").find(" 200 "), std::string::npos);
}

TEST_F(HttpServerTest, ExpectContinueAndHandlerExceptions) {
  start();
  Client c(server_->port());
  c.send("POST /echo HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
  std::string r = c.readUntil([](const std::string &b) { return b.find("\r\n\r\n") != b.npos; });
  EXPECT_EQ(r, "HTTP/1.1 100 Continue\r\n\r\n");
  c.send("abc");
  r = c.readUntil([](const std::string &b) { return b.find("POST /echo 3") != b.npos; });
  EXPECT_NE(r.find("POST /echo 3"), std::string::npos) << r;

  r = get("/throw");
  EXPECT_NE(r.find(" 500 "), std::string::npos) << r;
  EXPECT_NE(r.find("internal"), std::string::npos);
}

TEST_F(HttpServerTest, DrainClosesIdleConnectionsAtOnce) {
  start();
  Client idle(server_->port());
  idle.send("GET /echo HTTP/1.1\r\n\r\n");
  idle.readResponses(1);
  Client streaming(server_->port());
  streaming.send("GET /wait-for-close HTTP/1.1\r\n\r\n");
  std::this_thread::sleep_for(50ms);
  auto t0 = Clock::now();
  server_->drain();
  idle.readAll(2000ms);
  EXPECT_TRUE(idle.eof());
  EXPECT_LT(Clock::now() - t0, 200ms);
  // New connections are refused.
  Client late(server_->port());
  EXPECT_FALSE(late.connected() && late.send("GET /echo HTTP/1.1\r\n\r\n") &&
               late.readAll(500ms).find(" 200 ") != std::string::npos);
  EXPECT_FALSE(server_->waitClosed(50ms)); // the handler still holds one
  server_->closeAll();
  EXPECT_TRUE(server_->waitClosed(2000ms));
}

TEST(RequestReader, ReadsPiecesOfAnySize) {
  const std::string text = "POST /v1/x?q HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                           "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n";
  for (size_t piece : {size_t(1), size_t(7), text.size()}) {
    // As a connection feeds it: what arrives is appended to a buffer, the
    // reader takes what it can, the rest waits for more.
    RequestReader r{HttpLimits{}};
    std::string buffer;
    size_t sent = 0;
    bool headers = false, complete = false;
    while (!complete && (sent < text.size() || !buffer.empty())) {
      size_t n = std::min(piece, text.size() - sent);
      buffer += text.substr(sent, n);
      sent += n;
      for (;;) {
        size_t used = 0;
        RequestReader::Step s = r.feed(buffer, used);
        buffer.erase(0, used);
        ASSERT_NE(s, RequestReader::Step::Failed) << r.error().message;
        headers |= s == RequestReader::Step::Headers;
        complete = s == RequestReader::Step::Complete;
        if (s == RequestReader::Step::NeedMore || complete)
          break;
      }
      if (n == 0 && !complete)
        break;
    }
    ASSERT_TRUE(complete) << piece;
    EXPECT_TRUE(headers);
    bool keepAlive = false;
    Request req = r.take(keepAlive);
    EXPECT_EQ(req.method, "POST");
    EXPECT_EQ(req.path, "/v1/x");
    EXPECT_EQ(req.target, "/v1/x?q");
    EXPECT_EQ(req.body, "abcde");
    EXPECT_TRUE(keepAlive);
    EXPECT_EQ(buffer + text.substr(sent), "GET / HTTP/1.1\r\n\r\n");
  }
}

TEST(RequestReader, FinishMidRequestIsAnError) {
  RequestReader r{HttpLimits{}};
  size_t used = 0;
  EXPECT_EQ(r.feed("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", used),
            RequestReader::Step::Headers);
  EXPECT_EQ(r.finish(), RequestReader::Step::Failed);
  RequestReader fresh{HttpLimits{}};
  EXPECT_EQ(fresh.finish(), RequestReader::Step::NeedMore);
}

// Feeds `text` in pieces of `piece` bytes as a connection does; returns the
// last step and leaves the reader where that step left it.
RequestReader::Step feedInPieces(RequestReader &r, const std::string &text, size_t piece) {
  std::string buffer;
  size_t sent = 0;
  RequestReader::Step s = RequestReader::Step::NeedMore;
  while (sent < text.size()) {
    size_t n = std::min(piece, text.size() - sent);
    buffer += text.substr(sent, n);
    sent += n;
    for (;;) {
      size_t used = 0;
      s = r.feed(buffer, used);
      buffer.erase(0, used);
      if (s == RequestReader::Step::Failed || s == RequestReader::Step::Complete)
        return s;
      if (s == RequestReader::Step::NeedMore)
        break;
    }
  }
  return s;
}

TEST(RequestReader, TrailersAreNotHeaders) {
  // A chunked body's trailer fields are read and dropped (as h11 and
  // uvicorn do): they are not headers, so they can neither add to the
  // header count after it was checked nor stand in for a header such as
  // Host or Authorization. The same however the bytes arrive.
  std::string text = "POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "3\r\nabc\r\n0\r\nHost: evil\r\nAuthorization: Bearer t\r\n";
  for (int i = 0; i < 20; ++i)
    text += "X-T" + std::to_string(i) + ": v\r\n";
  text += "\r\n";
  HttpLimits limits;
  limits.maxHeaders = 16;
  for (size_t piece : {size_t(1), size_t(60), text.size()}) {
    RequestReader r{limits};
    ASSERT_EQ(feedInPieces(r, text, piece), RequestReader::Step::Complete)
        << piece << ": " << r.error().message;
    bool keepAlive = false;
    Request req = r.take(keepAlive);
    EXPECT_EQ(req.body, "abc");
    EXPECT_TRUE(keepAlive);
    ASSERT_EQ(req.headers.size(), 2u) << piece;
    EXPECT_EQ(findHeader(req.headers, "Host"), "h");
    EXPECT_EQ(findHeader(req.headers, "Authorization"), "");
    // A framing field in the trailers is refused (RFC 9110 6.5.1), also
    // however the bytes arrive.
    RequestReader framing{limits};
    std::string withLength = text;
    withLength.insert(withLength.size() - 2, "Content-Length: 99\r\n");
    ASSERT_EQ(feedInPieces(framing, withLength, piece), RequestReader::Step::Failed) << piece;
    EXPECT_EQ(framing.error().code, "bad_framing");
  }
}

TEST(RequestReader, ChunkLinesAndTrailersAreBoundedByTheHeaderLimit) {
  // A chunk-size line (its extensions) and the trailer section are read
  // whole before any of it is taken, so without a bound a client could
  // make the connection buffer without end until the body timeout.
  HttpLimits limits;
  limits.maxHeaderBytes = 1024;
  const std::string head = "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (const std::string &open : {head + "3;ext=", head + "3\r\nabc\r\n0\r\nX-A: "}) {
    RequestReader r{limits};
    std::string text = open + std::string(8192, 'a');
    ASSERT_EQ(feedInPieces(r, text, 100), RequestReader::Step::Failed) << open;
    EXPECT_EQ(r.error().status, 431);
    EXPECT_EQ(r.error().code, "header_too_large");
  }
  // Within the bound both are fine.
  RequestReader r{limits};
  std::string text = head + "3;ext=" + std::string(500, 'e') + "\r\nabc\r\n0\r\nX-A: " +
                     std::string(500, 'a') + "\r\n\r\n";
  ASSERT_EQ(feedInPieces(r, text, 100), RequestReader::Step::Complete) << r.error().message;
}

TEST(RequestReader, ContinueIsNotAskedForWhenTheBodyHasBegun) {
  RequestReader waiting{HttpLimits{}};
  size_t used = 0;
  EXPECT_EQ(waiting.feed("POST / HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n",
                         used),
            RequestReader::Step::Headers);
  EXPECT_TRUE(waiting.expectsContinue());
  RequestReader sending{HttpLimits{}};
  EXPECT_EQ(sending.feed("POST / HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nab",
                         used),
            RequestReader::Step::Headers);
  EXPECT_FALSE(sending.expectsContinue());
}

} // namespace
} // namespace volt::http
