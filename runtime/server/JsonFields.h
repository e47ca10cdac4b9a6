//===- JsonFields.h - typed, named access to a request object --*- C++ -*-===//
//
// Reads the fields of one JSON object with the errors OpenAI's API gives:
// each names the field by its path ("stream_options.include_usage: expected
// a boolean, found a string"). A null field is treated as absent, as
// OpenAI's clients send null for unset options.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/server/ApiError.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace volt::server {

using Json = nlohmann::ordered_json;
using MaybeError = std::optional<ApiError>;

/// Returns the error of a MaybeError expression from the enclosing function.
#define VOLT_API_TRY(expr)                                                                         \
  do {                                                                                             \
    if (::volt::server::MaybeError voltApiError_ = (expr))                                         \
      return std::move(*voltApiError_);                                                            \
  } while (false)

/// "a string", "an integer", "an array", ... for messages.
std::string describeJsonType(const Json &value);

/// Parses a request body; errors carry the parser's position.
ApiResult<Json> parseJsonObject(std::string_view body);

/// What rejectUnknown does with a field it does not know, for the request
/// being parsed on this thread: refuse it (strict: 400), or, as vLLM does
/// by default, ignore it and note its name here for a logged warning.
struct UnknownFieldPolicy {
  bool strict = true;
  /// The ignored fields' paths (clipped), in the order found.
  std::vector<std::string> ignored;
};
/// This thread's policy (the server sets it per request).
UnknownFieldPolicy &unknownFieldPolicy();

class JsonFields {
public:
  /// `prefix` is the object's own path with a trailing '.' ("" at the top).
  JsonFields(const Json &object, std::string prefix) : obj_(object), prefix_(std::move(prefix)) {}

  /// The first key not in `known`, as OpenAI reports it (or, with a
  /// lenient unknownFieldPolicy(), none: the unknown keys are noted there).
  MaybeError rejectUnknown(std::initializer_list<std::string_view> known) const;

  /// The field, or null when absent or null.
  const Json *get(std::string_view key) const;
  std::string path(std::string_view key) const { return prefix_ + std::string(key); }

  MaybeError boolean(std::string_view key, bool &out) const;
  MaybeError string(std::string_view key, std::string &out) const;
  MaybeError string(std::string_view key, std::optional<std::string> &out) const;
  /// An integer in [lo, hi] (an integral float such as 16.0 counts).
  MaybeError integer(std::string_view key, int64_t lo, int64_t hi, int64_t &out) const;
  MaybeError integer(std::string_view key, int64_t lo, int64_t hi,
                     std::optional<int64_t> &out) const;
  /// A finite number.
  MaybeError number(std::string_view key, double &out) const;

  /// Rejects a field that volt does not implement unless it is absent, null
  /// or equal to `neutral`.
  MaybeError unsupported(std::string_view key, const Json &neutral, std::string_view why) const;

  MaybeError typeError(std::string_view key, std::string_view expected, const Json &found) const;

private:
  const Json &obj_;
  std::string prefix_;
};

/// Reads an integer element (for arrays of token ids); `where` names it.
MaybeError readInteger(const Json &value, const std::string &where, int64_t lo, int64_t hi,
                       int64_t &out);

} // namespace volt::server
