//===- JsonFields.h - typed reads of JSON fields with clear errors -*- C++ -*-===//
//
// config.json and the quantization configs are read field by field; each
// read names the file and the field, says what type was expected and what
// was found.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace volt::model {

/// Reads fields of one JSON object; `where` is "config.json" or
/// "config.json: quantization_config" and prefixes every message.
class JsonFields {
public:
  JsonFields(const nlohmann::json &object, std::string where)
      : object_(object), where_(std::move(where)) {}

  bool has(const std::string &key) const {
    auto it = object_.find(key);
    return it != object_.end() && !it->is_null();
  }
  const nlohmann::json *find(const std::string &key) const {
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  const std::string &where() const { return where_; }
  Error error(const std::string &key, const std::string &what) const {
    return Error(where_ + ": field '" + key + "': " + what);
  }

  /// A positive integer; `fallback` when absent (nullopt: required).
  Result<int64_t> positiveInt(const std::string &key, std::optional<int64_t> fallback = {}) const;
  Result<int64_t> nonNegativeInt(const std::string &key,
                                 std::optional<int64_t> fallback = {}) const;
  Result<double> positiveNumber(const std::string &key, std::optional<double> fallback = {}) const;
  Result<bool> boolean(const std::string &key, std::optional<bool> fallback = {}) const;
  Result<std::string> string(const std::string &key,
                             std::optional<std::string> fallback = {}) const;
  Result<std::vector<std::string>> stringList(const std::string &key) const;
  Result<std::vector<int64_t>> intList(const std::string &key) const;

private:
  Error missing(const std::string &key) const {
    return Error(where_ + ": missing field '" + key + "'");
  }
  static std::string found(const nlohmann::json &v);
  const nlohmann::json &object_;
  std::string where_;
};

/// `lhs = *expr` for a Result `expr`, or return its error.
#define VOLT_READ(lhs, expr)                                                                       \
  do {                                                                                             \
    auto r_ = (expr);                                                                              \
    if (!r_)                                                                                       \
      return r_.error();                                                                           \
    lhs = *r_;                                                                                     \
  } while (false)

} // namespace volt::model
