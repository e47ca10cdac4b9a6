//===- AccessLog.cpp ------------------------------------------------------===//
#include "runtime/server/AccessLog.h"

#include "runtime/server/ApiError.h"
#include "runtime/support/Strings.h"

#include <cmath>
#include <ctime>

namespace volt::server {

std::string formatAccessRecord(const AccessRecord &r, std::chrono::system_clock::time_point now) {
  using namespace std::chrono;
  std::time_t t = system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  char withMs[48];
  std::snprintf(withMs, sizeof withMs, "%s.%03lldZ", stamp, static_cast<long long>(ms));
  auto millis = [](double seconds) { return std::round(seconds * 1e4) / 10; };

  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["time"] = withMs;
  // Client-chosen text is clipped: a log line stays a line.
  j["request_id"] = clipForMessage(r.requestId, 128);
  j["method"] = clipForMessage(r.method, 16);
  j["path"] = clipForMessage(r.path, 512);
  j["status"] = r.status;
  j["remote"] = r.remote;
  if (r.promptTokens)
    j["prompt_tokens"] = *r.promptTokens;
  if (r.completionTokens)
    j["completion_tokens"] = *r.completionTokens;
  if (r.ttftSeconds)
    j["ttft_ms"] = millis(*r.ttftSeconds);
  j["total_ms"] = millis(r.totalSeconds);
  if (r.stream)
    j["stream"] = true;
  if (!r.finishReasons.empty())
    j["finish_reasons"] = r.finishReasons;
  if (r.clientDisconnected)
    j["client_disconnected"] = true;
  if (!r.error.empty())
    j["error"] = clipForMessage(r.error, 256);
  if (!r.ignoredFields.empty())
    j["ignored_fields"] = r.ignoredFields;
  return dumpJson(j);
}

void AccessLog::write(const AccessRecord &record) {
  if (!out_)
    return;
  std::string line = formatAccessRecord(record, std::chrono::system_clock::now()) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

} // namespace volt::server
