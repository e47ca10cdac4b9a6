//===- RequestReader.cpp - HTTP/1.x requests from bytes --------------------===//
//
// Beast's parser does the grammar, the size limits and most framing checks
// (two different Content-Lengths, Content-Length with chunked); what it
// accepts and a proxy might read differently is refused here.
//
//===----------------------------------------------------------------------===//
#include "runtime/http/HttpServer.h"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>

namespace volt::http {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;

namespace {

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t'))
    v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t'))
    v.remove_suffix(1);
  return v;
}

} // namespace

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::string findHeader(const Headers &headers, std::string_view name) {
  for (const auto &[k, v] : headers)
    if (equalsIgnoreCase(k, name))
      return v;
  return std::string();
}

struct RequestReader::Impl {
  explicit Impl(const HttpLimits &l) : limits(l) {}
  HttpLimits limits;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser;
  bool headerChecked = false;
  bool continueWanted = false;
  /// The header section as checked. A chunked body's trailer fields, which
  /// Beast adds to the message's fields, are read and dropped: they are not
  /// in here.
  Headers headers;
  bool keepAlive = false;
  LayerError error;

  void reset() {
    parser.emplace();
    parser->header_limit(static_cast<std::uint32_t>(
        std::min<size_t>(limits.maxHeaderBytes, std::numeric_limits<std::uint32_t>::max())));
    parser->body_limit(limits.maxBodyBytes);
    // The header section alone first (eager once it is checked), so that
    // nothing after it, trailers included, is in the message when it is.
    parser->eager(false);
    headerChecked = false;
    continueWanted = false;
    headers.clear();
    keepAlive = false;
  }

  Step fail(int status, std::string code, std::string message) {
    error = LayerError{status, std::move(code), std::move(message)};
    return Step::Failed;
  }

  Step parseError(const boost::system::error_code &ec) {
    if (ec == bhttp::error::header_limit)
      return fail(431, "header_too_large",
                  "the request line and headers are larger than the limit of " +
                      std::to_string(limits.maxHeaderBytes) + " bytes (--max-header-bytes)");
    if (ec == bhttp::error::body_limit)
      return fail(413, "body_too_large",
                  "the request body is larger than the limit of " +
                      std::to_string(limits.maxBodyBytes) + " bytes (--max-body-bytes)");
    if (ec == bhttp::error::bad_content_length || ec == bhttp::error::bad_transfer_encoding ||
        ec == bhttp::error::multiple_content_length)
      return fail(400, "bad_framing",
                  "conflicting message framing: " + ec.message() +
                      " (send one Content-Length, or Transfer-Encoding: chunked, not both)");
    return fail(400, "malformed", "malformed HTTP request: " + ec.message());
  }

  /// What Beast leaves to the server. `bodyBegun`: bytes after the header
  /// section arrived with it.
  Step checkHeader(bool bodyBegun) {
    const auto &msg = parser->get();
    if (msg.version() != 10 && msg.version() != 11)
      return fail(505, "bad_version", "only HTTP/1.0 and HTTP/1.1 are supported");
    if (msg.target().size() > limits.maxTargetBytes)
      return fail(414, "target_too_long",
                  "the request target is longer than " + std::to_string(limits.maxTargetBytes) +
                      " bytes");
    size_t fields = 0, lengths = 0;
    for (const auto &f : msg) {
      ++fields;
      if (equalsIgnoreCase(f.name_string(), "Content-Length")) {
        ++lengths;
        std::string_view v = trim(f.value());
        if (v.empty() || v.find_first_not_of("0123456789") != std::string_view::npos)
          return fail(400, "bad_framing", "Content-Length: expected one decimal number");
      }
    }
    if (fields > limits.maxHeaders)
      return fail(431, "too_many_headers",
                  "the request has " + std::to_string(fields) + " header fields, more than " +
                      std::to_string(limits.maxHeaders) + " (--max-headers)");
    if (lengths > 1)
      return fail(400, "bad_framing", "the request has more than one Content-Length");
    auto te = msg.find(bhttp::field::transfer_encoding);
    if (te != msg.end()) {
      if (msg.version() == 10)
        return fail(400, "bad_framing", "Transfer-Encoding is not allowed in HTTP/1.0");
      if (!equalsIgnoreCase(trim(te->value()), "chunked") ||
          msg.count(bhttp::field::transfer_encoding) > 1)
        return fail(400, "bad_framing", "Transfer-Encoding: only 'chunked' is supported");
    }
    auto expect = msg.find(bhttp::field::expect);
    // A server may omit 100 Continue once the body has begun (RFC 9110
    // 10.1.1).
    continueWanted = msg.version() == 11 && expect != msg.end() &&
                     equalsIgnoreCase(trim(expect->value()), "100-continue") &&
                     !parser->is_done() && !bodyBegun;
    for (const auto &f : msg)
      headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    keepAlive = msg.version() == 11 && msg.keep_alive();
    headerChecked = true;
    parser->eager(true);
    return Step::Headers;
  }
};

RequestReader::RequestReader(const HttpLimits &limits) : impl_(std::make_unique<Impl>(limits)) {
  impl_->reset();
}
RequestReader::~RequestReader() = default;

RequestReader::Step RequestReader::feed(std::string_view data, size_t &used) {
  Impl &r = *impl_;
  used = 0;
  while (used < data.size()) {
    if (r.parser->is_done()) // the headers' step returned first
      break;
    boost::system::error_code ec;
    size_t n = r.parser->put(net::buffer(data.data() + used, data.size() - used), ec);
    used += n;
    if (ec == bhttp::error::need_more) {
      if (n == 0) {
        // Beast bounds the header section itself; after it, what it waits
        // for whole is a chunk-size line or the trailer section.
        if (r.headerChecked && data.size() - used > r.limits.maxHeaderBytes)
          return r.fail(431, "header_too_large",
                        "a chunk-size line or the trailer section is larger than the limit of " +
                            std::to_string(r.limits.maxHeaderBytes) +
                            " bytes (--max-header-bytes)");
        return Step::NeedMore;
      }
      ec = {};
    }
    if (ec)
      return r.parseError(ec);
    if (!r.headerChecked && r.parser->is_header_done())
      return r.checkHeader(used < data.size()); // Headers, or Failed
    if (r.parser->is_done())
      return Step::Complete;
    if (n == 0)
      return Step::NeedMore;
  }
  if (!r.headerChecked && r.parser->is_header_done())
    return r.checkHeader(false);
  if (r.headerChecked && r.parser->is_done())
    return Step::Complete;
  return Step::NeedMore;
}

RequestReader::Step RequestReader::finish() {
  Impl &r = *impl_;
  if (r.parser->is_done())
    return Step::Complete;
  if (!r.parser->got_some())
    return Step::NeedMore;
  return r.fail(400, "malformed", "malformed HTTP request: the connection closed mid-request");
}

bool RequestReader::started() const { return impl_->parser->got_some(); }
bool RequestReader::headerDone() const { return impl_->headerChecked; }
bool RequestReader::expectsContinue() const { return impl_->continueWanted; }
const LayerError &RequestReader::error() const { return impl_->error; }

Request RequestReader::partial() const {
  Request r;
  const Impl &i = *impl_;
  if (i.parser && i.parser->is_header_done()) {
    const auto &msg = i.parser->get();
    r.method = std::string(msg.method_string());
    r.target = std::string(msg.target());
    r.path = r.target.substr(0, r.target.find('?'));
    r.version = int(msg.version());
    if (i.headerChecked)
      r.headers = i.headers;
    else // refused at the header check: what was read, for the log
      for (const auto &f : msg)
        r.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
  }
  return r;
}

Request RequestReader::take(bool &keepAlive) {
  Request r = partial();
  bhttp::request<bhttp::string_body> msg = impl_->parser->release();
  r.body = std::move(msg.body());
  keepAlive = impl_->keepAlive;
  impl_->reset();
  return r;
}

} // namespace volt::http
