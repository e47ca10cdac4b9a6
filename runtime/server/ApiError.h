//===- ApiError.h - errors in the OpenAI API's JSON shape ------*- C++ -*-===//
//
// Every error the server answers with is one of these: an HTTP status and
// the body OpenAI's API sends, `{"error": {"message", "type", "param",
// "code"}}`, so that OpenAI clients raise the matching exception class
// (BadRequestError, NotFoundError, RateLimitError, ...) with our message.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace volt::server {

struct ApiError {
  /// What a response echoes at most (clipForMessage): a message of 2 KiB,
  /// a param of 128 bytes.
  static constexpr size_t kMaxMessageBytes = 2048;
  static constexpr size_t kMaxParamBytes = 128;

  int status = 400;
  /// Lower-case, names the field and says what was expected and found.
  std::string message;
  /// OpenAI's error type: invalid_request_error, rate_limit_error,
  /// server_error.
  std::string type = "invalid_request_error";
  /// The request field at fault ("temperature", "messages[2].content");
  /// empty means null.
  std::string param;
  /// A machine-readable reason ("model_not_found"); empty means null.
  std::string code;
  /// Seconds for a Retry-After header (overload, loading, shutdown).
  std::optional<int> retryAfterSeconds;

  /// The response body.
  nlohmann::ordered_json toJson() const;
  std::string body() const;
};

/// 400, naming `param`.
ApiError badRequest(std::string param, std::string message);
/// A 400 whose message starts with the field name ("top_p: expected ...");
/// the part before the first ':' becomes `param`.
ApiError badRequestFromMessage(const std::string &message);
ApiError serverError(int status, std::string code, std::string message);

/// A value, or the ApiError that prevented it.
template <typename T> class ApiResult {
public:
  ApiResult(T value) : v_(std::move(value)) {}        // NOLINT: implicit on purpose
  ApiResult(ApiError error) : v_(std::move(error)) {} // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T &operator*() { return std::get<0>(v_); }
  const T &operator*() const { return std::get<0>(v_); }
  T *operator->() { return &std::get<0>(v_); }
  const T *operator->() const { return &std::get<0>(v_); }
  const ApiError &error() const { return std::get<1>(v_); }

private:
  std::variant<T, ApiError> v_;
};

/// Serializes JSON for the wire: invalid UTF-8 in strings (which the
/// tokenizer's partial byte tokens can produce) becomes U+FFFD instead of
/// an exception.
std::string dumpJson(const nlohmann::ordered_json &value);

} // namespace volt::server
