//===- Builtins.h - filters, tests, methods and globals --------*- C++ -*-===//
//
// The names a chat template can call, what the interpreter implements of
// them, and their implementations. Names jinja2 (or Python's str, dict and
// list) has but volt does not implement are "unsupported"; anything else is
// "unknown". The parser uses the distinction for its messages.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/chat/Value.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace volt::chat {

class Interpreter;
struct Expr;

enum class Support : uint8_t { Supported, Unsupported, Unknown };

Support filterSupport(std::string_view name);
Support testSupport(std::string_view name);
/// Methods of str, dict and list (and of `loop`) called as `x.name(...)`.
Support methodSupport(std::string_view name);
/// Functions jinja2 provides as globals (`range`, `namespace`...).
Support globalSupport(std::string_view name);

/// The implemented names, for "did you mean" suggestions.
std::vector<std::string> supportedFilters();
std::vector<std::string> supportedTests();

/// The arguments of a call, as evaluated.
struct CallArgs {
  ValueList positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

/// Applies filter `name` to `operand`. Errors are reported through the
/// interpreter (as the error of the render).
Value applyFilter(Interpreter &in, const std::string &name, const Value &operand,
                  const CallArgs &args);

/// Applies test `name` to `operand`.
bool applyTest(Interpreter &in, const std::string &name, const Value &operand,
               const CallArgs &args);

/// Whether `self` has a method `name` (Python attribute lookup comes before
/// item lookup, so `d.items` is the method even if `d` has a key "items").
bool hasMethod(const Value &self, std::string_view name);

/// Calls method `name` of `self`.
Value callMethod(Interpreter &in, const Value &self, const std::string &name, const CallArgs &args);

/// Calls global function `name` (range, dict, namespace, raise_exception,
/// strftime_now).
Value callGlobal(Interpreter &in, const std::string &name, const CallArgs &args);

/// json.dumps(v, ensure_ascii, indent, separators, sort_keys), the way
/// Hugging Face's `tojson` filter calls it. Fails (through `in`) on values
/// JSON cannot hold.
std::string toJson(Interpreter &in, const Value &v, bool ensureAscii, const Value &indent,
                   const Value &separators, bool sortKeys);

} // namespace volt::chat
