//===- Value.h - the values a chat template computes with ------*- C++ -*-===//
//
// Chat templates are Jinja2 programs that Hugging Face runs in Python, so the
// values they compute with behave like Python's: `1 == 1.0`, `[] or 'x'` is
// 'x', `{{ none }}` prints "None", a missing attribute is jinja2's
// `Undefined` (prints as nothing, but fails when used). This file holds that
// value model; the interpreter and the built-in filters, tests and methods
// are written against it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace volt::chat {

class Value;
using ValueList = std::vector<Value>;
struct Dict;
struct Callable;
struct LoopState;
struct IteratorState;

/// A template value: undefined, none, bool, int, float, string, list, tuple,
/// dict, namespace, callable, loop object or one-shot iterator (what jinja2's
/// generator-returning filters such as `selectattr` give). Copying is cheap:
/// strings, lists and dicts are shared and never changed after construction;
/// only a namespace is mutable, and it is shared by reference as in Python.
class Value {
public:
  enum class Kind : uint8_t {
    Undefined,
    None,
    Bool,
    Int,
    Float,
    String,
    List,
    Tuple,
    Dict,
    Namespace,
    Callable,
    Loop,
    Iterator,
  };

  /// An undefined value; `message` is the error given when it is used
  /// ("'foo' is undefined").
  Value() : kind_(Kind::Undefined) {}
  static Value undefined(std::string message);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double d);
  static Value string(std::string s);
  static Value list(ValueList items);
  static Value tuple(ValueList items);
  static Value dict(std::shared_ptr<Dict> d);
  static Value namespaceObject(std::shared_ptr<Dict> attributes);
  static Value callable(std::shared_ptr<Callable> c);
  static Value loop(std::shared_ptr<LoopState> l);
  static Value iterator(ValueList items);

  Kind kind() const { return kind_; }
  bool isUndefined() const { return kind_ == Kind::Undefined; }
  bool isNone() const { return kind_ == Kind::None; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isInt() const { return kind_ == Kind::Int; }
  bool isFloat() const { return kind_ == Kind::Float; }
  /// bool, int or float: what Python's `numbers.Number` accepts.
  bool isNumber() const { return isBool() || isInt() || isFloat(); }
  /// bool or int, which Python treats alike in arithmetic.
  bool isIntegral() const { return isBool() || isInt(); }
  bool isString() const { return kind_ == Kind::String; }
  bool isList() const { return kind_ == Kind::List; }
  bool isTuple() const { return kind_ == Kind::Tuple; }
  bool isListOrTuple() const { return isList() || isTuple(); }
  bool isDict() const { return kind_ == Kind::Dict; }
  bool isNamespace() const { return kind_ == Kind::Namespace; }
  bool isCallable() const { return kind_ == Kind::Callable; }
  bool isLoop() const { return kind_ == Kind::Loop; }
  bool isIterator() const { return kind_ == Kind::Iterator; }

  bool asBool() const { return std::get<bool>(data_); }
  /// The integer value of a bool or int.
  int64_t asInt() const;
  /// The value of a bool, int or float as a double.
  double asDouble() const;
  /// The text of a string, or the message of an undefined value.
  const std::string &str() const { return *std::get<StrPtr>(data_); }
  const ValueList &items() const { return *std::get<ListPtr>(data_); }
  /// The entries of a dict or the attributes of a namespace.
  const Dict &dict() const { return *std::get<DictPtr>(data_); }
  /// The attributes of a namespace, which `{% set ns.x = ... %}` changes.
  Dict &namespaceAttributes() const { return *std::get<DictPtr>(data_); }
  const Callable &callable() const { return *std::get<CallPtr>(data_); }
  LoopState &loopState() const { return *std::get<LoopPtr>(data_); }
  IteratorState &iteratorState() const { return *std::get<IterPtr>(data_); }
  /// Identity, for objects Python compares by `is` (namespaces, callables).
  const void *identity() const;

  /// How deeply containers nest in this value (a scalar is 0, `[[1]]` 2).
  /// The interpreter bounds it so that printing and comparing, which
  /// recurse, cannot exhaust the stack.
  uint32_t depth() const { return depth_; }
  /// Whether this value is or holds a namespace, loop, iterator or macro:
  /// the objects that hold references and could otherwise form cycles.
  bool holdsReferences() const { return holdsReferences_; }

  /// Python's truth value (`bool(x)`).
  bool truthy() const;
  /// Python's type name, for messages: 'str', 'NoneType', 'dict'...
  std::string typeName() const;

private:
  using StrPtr = std::shared_ptr<const std::string>;
  using ListPtr = std::shared_ptr<const ValueList>;
  using DictPtr = std::shared_ptr<Dict>;
  using CallPtr = std::shared_ptr<Callable>;
  using LoopPtr = std::shared_ptr<LoopState>;
  using IterPtr = std::shared_ptr<IteratorState>;

  Kind kind_;
  bool holdsReferences_ = false;
  uint32_t depth_ = 0;
  std::variant<std::monostate, bool, int64_t, double, StrPtr, ListPtr, DictPtr, CallPtr, LoopPtr,
               IterPtr>
      data_;
};

/// An insertion-ordered mapping, like a Python dict. String keys (the only
/// kind JSON has) are indexed; other keys are searched.
struct Dict {
  std::vector<std::pair<Value, Value>> entries;

  /// The value at `key`, or null.
  const Value *find(const Value &key) const;
  const Value *find(std::string_view key) const;
  /// Adds `key` or replaces its value, keeping its first position.
  void set(Value key, Value value);
  size_t size() const { return entries.size(); }

private:
  std::unordered_map<std::string, size_t> stringIndex_;
};

struct Stmt;
struct Scope;

/// Something a template can call: a global function (`range`, `namespace`,
/// `raise_exception`...), a method bound to its object (`s.strip`), or a
/// macro with the scope it was defined in.
struct Callable {
  enum class Kind : uint8_t { Global, Method, Macro };
  Kind kind = Kind::Global;
  std::string name;
  /// The object of a bound method.
  Value self;
  /// The `{% macro %}` statement of a macro.
  const Stmt *macro = nullptr;
  /// The scope a macro was defined in. Weak, because that scope usually
  /// holds the macro itself.
  std::weak_ptr<Scope> closure;
};

/// The state behind a `loop` variable.
struct LoopState {
  std::shared_ptr<const ValueList> items;
  int64_t index0 = 0;
  int64_t depth0 = 0;
  /// The last value given to `loop.changed(...)`.
  std::shared_ptr<Value> lastChanged;
};

/// A one-shot iterator: iterating consumes it, as a Python generator.
struct IteratorState {
  ValueList items;
  size_t position = 0;
};

/// Python `==`.
bool pyEquals(const Value &a, const Value &b);

/// Python `str(x)`, which is what `{{ x }}` prints ("" for undefined).
std::string pyStr(const Value &v);

/// Python `repr(x)`, used for the elements of printed lists and dicts.
std::string pyRepr(const Value &v);

/// Python's `repr` of a float: the shortest text that reads back the same
/// double ("0.1", "1e-05", "1e+16", "3.0", "inf", "nan").
std::string formatFloat(double d);

/// Python's `repr` of a string: quoted, with escapes.
std::string reprString(std::string_view s);

} // namespace volt::chat
