//===- RequestReaderFuzzer.cpp - bytes through the HTTP request reader ----===//
//
// The first byte picks how the rest arrives (in pieces of 1 to 256 bytes);
// the rest is what a client sends on one connection, read as a connection
// reads it: appended to a buffer, fed to the reader, requests taken one
// after another until it asks for more or refuses. Small limits, so that
// every limit is reached. Checked: the reader never takes more than it is
// given, a refusal has a 4xx/5xx status, a message and a code, and a taken
// request stays within the limits.
//
//===----------------------------------------------------------------------===//
#include "runtime/http/HttpServer.h"

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace volt::http;

namespace {

void check(bool ok) {
  if (!ok)
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const size_t piece = size_t(data[0]) + 1;
  std::string_view input(reinterpret_cast<const char *>(data + 1), size - 1);
  HttpLimits limits;
  limits.maxHeaderBytes = 1024;
  limits.maxHeaders = 16;
  limits.maxTargetBytes = 256;
  limits.maxBodyBytes = 2048;
  RequestReader reader(limits);
  std::string buffer;
  size_t sent = 0;
  for (;;) {
    size_t n = std::min(piece, input.size() - sent);
    buffer.append(input.substr(sent, n));
    sent += n;
    for (;;) {
      size_t used = 0;
      RequestReader::Step step = reader.feed(buffer, used);
      check(used <= buffer.size());
      buffer.erase(0, used);
      if (step == RequestReader::Step::Failed) {
        const LayerError &e = reader.error();
        check(e.status >= 400 && e.status < 600);
        check(!e.message.empty() && !e.code.empty());
        return 0; // the connection is closed after a refusal
      }
      if (step == RequestReader::Step::Complete) {
        bool keepAlive = false;
        Request r = reader.take(keepAlive);
        check(r.body.size() <= limits.maxBodyBytes);
        check(r.target.size() <= limits.maxTargetBytes);
        check(r.headers.size() <= limits.maxHeaders);
        check(!r.method.empty());
        if (!keepAlive)
          return 0;
        continue;
      }
      if (step == RequestReader::Step::NeedMore)
        break;
      check(reader.headerDone());
    }
    if (n == 0) {
      RequestReader::Step end = reader.finish();
      check(end != RequestReader::Step::Headers);
      return 0;
    }
  }
}
