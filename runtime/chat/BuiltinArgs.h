//===- BuiltinArgs.h - binding call arguments to parameters ----*- C++ -*-===//
//
// Private to runtime/chat: binds the positional and keyword arguments of a
// filter, test, method or global call to its parameter list the way Python
// does, with Python-like messages for too many or unknown arguments.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/chat/Builtins.h"
#include "runtime/chat/Interpreter.h"

#include <optional>
#include <string>
#include <vector>

namespace volt::chat {

class BoundArgs {
public:
  /// `what` names the callee in messages ("filter 'join'").
  BoundArgs(Interpreter &in, const CallArgs &args, std::string what,
            std::vector<std::string> params)
      : in_(in), what_(std::move(what)), params_(std::move(params)), values_(params_.size()) {
    if (args.positional.size() > params_.size())
      in.fail(what_ + " takes at most " + std::to_string(params_.size()) + " argument(s) (" +
              std::to_string(args.positional.size()) + " given)");
    for (size_t i = 0; i < args.positional.size(); ++i)
      values_[i] = args.positional[i];
    for (const auto &[key, value] : args.keyword) {
      size_t i = 0;
      while (i < params_.size() && params_[i] != key)
        ++i;
      if (i == params_.size())
        in.fail(what_ + " got an unexpected keyword argument '" + key + "'");
      if (values_[i])
        in.fail(what_ + " got multiple values for argument '" + key + "'");
      values_[i] = value;
    }
  }

  bool has(size_t i) const { return values_[i].has_value(); }
  Value get(size_t i, const Value &fallback) const { return values_[i] ? *values_[i] : fallback; }
  /// A required parameter.
  const Value &required(size_t i) const {
    if (!values_[i])
      in_.fail(what_ + " missing required argument '" + params_[i] + "'");
    return *values_[i];
  }
  /// An integer parameter (bool counts, as in Python).
  int64_t integer(size_t i, int64_t fallback) const {
    if (!values_[i])
      return fallback;
    if (!values_[i]->isIntegral())
      in_.fail(what_ + ": '" + params_[i] + "' must be an integer, not '" + values_[i]->typeName() +
               "'");
    return values_[i]->asInt();
  }
  bool flag(size_t i, bool fallback) const { return values_[i] ? values_[i]->truthy() : fallback; }
  /// A string parameter, or nullopt when absent or none.
  std::optional<std::string> optionalString(size_t i) const {
    if (!values_[i] || values_[i]->isNone())
      return std::nullopt;
    if (!values_[i]->isString())
      in_.fail(what_ + ": '" + params_[i] + "' must be a string, not '" + values_[i]->typeName() +
               "'");
    return values_[i]->str();
  }

private:
  Interpreter &in_;
  std::string what_;
  std::vector<std::string> params_;
  std::vector<std::optional<Value>> values_;
};

/// jinja2's attribute getter for filters: "a.b.0" looks up each part with
/// item-then-attribute rules, digits as integers.
Value lookupPath(Interpreter &in, const Value &item, const Value &attribute);

/// Python's `fmt % args` (printf-style formatting); `args` is a tuple of
/// values, a dict for `%(key)s`, or a single value.
std::string printfFormat(Interpreter &in, const std::string &fmt, const Value &args);

/// Strings lowered for case-insensitive sorting and comparison.
Value ignoreCase(const Value &v);

} // namespace volt::chat
