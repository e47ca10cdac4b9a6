//===- AccessLog.h - one structured line per request -----------*- C++ -*-===//
//
// Every response is logged as one JSON object on one line, so that the log
// can be grepped by eye and parsed by machines: request id, method, path,
// status, client, prompt and generated tokens, time to first token, total
// time, finish reasons, and whether the client went away.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace volt::server {

struct AccessRecord {
  std::string requestId;
  std::string method;
  std::string path;
  std::string remote;
  int status = 0;
  bool stream = false;
  std::optional<int32_t> promptTokens;
  std::optional<int32_t> completionTokens;
  std::optional<double> ttftSeconds;
  double totalSeconds = 0;
  std::string finishReasons;
  /// The error message sent, if any.
  std::string error;
  /// Request fields ignored as unknown (without --strict-fields).
  std::vector<std::string> ignoredFields;
  bool clientDisconnected = false;
};

/// The log line (no trailing newline). `now` is when the response ended.
std::string formatAccessRecord(const AccessRecord &record,
                               std::chrono::system_clock::time_point now);

/// Writes lines to a stream, one whole line per call, from any thread.
class AccessLog {
public:
  /// `out` null disables logging.
  explicit AccessLog(std::FILE *out) : out_(out) {}
  void write(const AccessRecord &record);
  bool enabled() const { return out_ != nullptr; }

private:
  std::FILE *out_;
  std::mutex mu_;
};

} // namespace volt::server
