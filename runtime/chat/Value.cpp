//===- Value.cpp - the values a chat template computes with ---------------===//
#include "runtime/chat/Value.h"

#include "runtime/chat/Text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace volt::chat {

Value Value::undefined(std::string message) {
  Value v;
  v.data_ = std::make_shared<const std::string>(std::move(message));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.data_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.data_ = i;
  return v;
}

Value Value::number(double d) {
  Value v;
  v.kind_ = Kind::Float;
  v.data_ = d;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.data_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

Value Value::list(ValueList items) {
  Value v;
  v.kind_ = Kind::List;
  for (const Value &item : items) {
    v.depth_ = std::max(v.depth_, item.depth_);
    v.holdsReferences_ = v.holdsReferences_ || item.holdsReferences_;
  }
  v.depth_ += 1;
  v.data_ = std::make_shared<const ValueList>(std::move(items));
  return v;
}

Value Value::tuple(ValueList items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::Tuple;
  return v;
}

Value Value::dict(std::shared_ptr<Dict> d) {
  Value v;
  v.kind_ = Kind::Dict;
  for (const auto &[key, value] : d->entries) {
    v.depth_ = std::max({v.depth_, key.depth_, value.depth_});
    v.holdsReferences_ = v.holdsReferences_ || key.holdsReferences_ || value.holdsReferences_;
  }
  v.depth_ += 1;
  v.data_ = std::move(d);
  return v;
}

Value Value::namespaceObject(std::shared_ptr<Dict> attributes) {
  Value v = dict(std::move(attributes));
  v.kind_ = Kind::Namespace;
  v.holdsReferences_ = true;
  return v;
}

Value Value::callable(std::shared_ptr<Callable> c) {
  Value v;
  v.kind_ = Kind::Callable;
  v.holdsReferences_ = c->kind == Callable::Kind::Macro || c->self.holdsReferences_;
  v.depth_ = c->self.depth_;
  v.data_ = std::move(c);
  return v;
}

Value Value::loop(std::shared_ptr<LoopState> l) {
  Value v;
  v.kind_ = Kind::Loop;
  v.holdsReferences_ = true;
  v.data_ = std::move(l);
  return v;
}

Value Value::iterator(ValueList items) {
  Value v;
  v.kind_ = Kind::Iterator;
  v.holdsReferences_ = true;
  for (const Value &item : items)
    v.depth_ = std::max(v.depth_, item.depth_ + 1);
  auto state = std::make_shared<IteratorState>();
  state->items = std::move(items);
  v.data_ = std::move(state);
  return v;
}

int64_t Value::asInt() const { return isBool() ? (asBool() ? 1 : 0) : std::get<int64_t>(data_); }

double Value::asDouble() const {
  return isFloat() ? std::get<double>(data_) : static_cast<double>(asInt());
}

const void *Value::identity() const {
  return std::visit(
      [](const auto &x) -> const void * {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate> || std::is_same_v<T, bool> ||
                      std::is_same_v<T, int64_t> || std::is_same_v<T, double>)
          return nullptr;
        else
          return x.get();
      },
      data_);
}

bool Value::truthy() const {
  switch (kind_) {
  case Kind::Undefined:
  case Kind::None:
    return false;
  case Kind::Bool:
    return asBool();
  case Kind::Int:
    return asInt() != 0;
  case Kind::Float:
    return asDouble() != 0.0;
  case Kind::String:
    return !str().empty();
  case Kind::List:
  case Kind::Tuple:
    return !items().empty();
  case Kind::Dict:
    return dict().size() != 0;
  case Kind::Namespace:
  case Kind::Callable:
  case Kind::Loop:
  case Kind::Iterator:
    return true;
  }
  return false;
}

std::string Value::typeName() const {
  switch (kind_) {
  case Kind::Undefined:
    return "Undefined";
  case Kind::None:
    return "NoneType";
  case Kind::Bool:
    return "bool";
  case Kind::Int:
    return "int";
  case Kind::Float:
    return "float";
  case Kind::String:
    return "str";
  case Kind::List:
    return "list";
  case Kind::Tuple:
    return "tuple";
  case Kind::Dict:
    return "dict";
  case Kind::Namespace:
    return "Namespace";
  case Kind::Callable:
    return callable().kind == Callable::Kind::Macro ? "Macro" : "builtin_function_or_method";
  case Kind::Loop:
    return "LoopContext";
  case Kind::Iterator:
    return "generator";
  }
  return "object";
}

const Value *Dict::find(std::string_view key) const {
  auto it = stringIndex_.find(std::string(key));
  return it == stringIndex_.end() ? nullptr : &entries[it->second].second;
}

const Value *Dict::find(const Value &key) const {
  if (key.isString())
    return find(key.str());
  for (const auto &[k, v] : entries)
    if (pyEquals(k, key))
      return &v;
  return nullptr;
}

void Dict::set(Value key, Value value) {
  if (key.isString()) {
    auto [it, inserted] = stringIndex_.emplace(key.str(), entries.size());
    if (!inserted) {
      entries[it->second].second = std::move(value);
      return;
    }
    entries.emplace_back(std::move(key), std::move(value));
    return;
  }
  for (auto &[k, v] : entries) {
    if (pyEquals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

bool pyEquals(const Value &a, const Value &b) {
  if (a.isNumber() && b.isNumber()) {
    if (a.isFloat() || b.isFloat())
      return a.asDouble() == b.asDouble();
    return a.asInt() == b.asInt();
  }
  using K = Value::Kind;
  bool aSeq = a.isListOrTuple(), bSeq = b.isListOrTuple();
  if (a.kind() != b.kind())
    return false;
  switch (a.kind()) {
  case K::Undefined:
  case K::None:
    return true;
  case K::String:
    return a.str() == b.str();
  case K::List:
  case K::Tuple: {
    (void)aSeq;
    (void)bSeq;
    const ValueList &x = a.items(), &y = b.items();
    if (x.size() != y.size())
      return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!pyEquals(x[i], y[i]))
        return false;
    return true;
  }
  case K::Dict: {
    const Dict &x = a.dict(), &y = b.dict();
    if (x.size() != y.size())
      return false;
    for (const auto &[k, v] : x.entries) {
      const Value *other = y.find(k);
      if (!other || !pyEquals(v, *other))
        return false;
    }
    return true;
  }
  default:
    return a.identity() == b.identity();
  }
}

std::string formatFloat(double d) {
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d < 0 ? "-inf" : "inf";
  if (d == 0)
    return std::signbit(d) ? "-0.0" : "0.0";
  // The shortest round-tripping digits, then Python's layout: positional
  // for exponents in [-4, 16), scientific otherwise.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool negative = sci[0] == '-';
  if (negative)
    sci.erase(0, 1);
  size_t ePos = sci.find('e');
  std::string mantissa = sci.substr(0, ePos);
  int exponent = std::atoi(sci.c_str() + ePos + 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.')
      digits += c;
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0.";
      out.append(static_cast<size_t>(-exponent - 1), '0');
      out += digits;
    } else if (static_cast<int>(digits.size()) <= exponent + 1) {
      out += digits;
      out.append(static_cast<size_t>(exponent + 1 - static_cast<int>(digits.size())), '0');
      out += ".0";
    } else {
      out += digits.substr(0, exponent + 1);
      out += '.';
      out += digits.substr(exponent + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    out += '.';
    out += digits.substr(1);
  }
  char expBuf[16];
  std::snprintf(expBuf, sizeof expBuf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  out += expBuf;
  return out;
}

std::string reprString(std::string_view s) {
  bool hasSingle = s.find('\'') != std::string_view::npos;
  bool hasDouble = s.find('"') != std::string_view::npos;
  char quote = (hasSingle && !hasDouble) ? '"' : '\'';
  std::string out(1, quote);
  static const char *hex = "0123456789abcdef";
  for (char32_t c : decodeUtf8(s)) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0xA0) || c == 0xAD) {
      // Non-printable in Python's sense; beyond these, code points are
      // treated as printable (Python also escapes a few unassigned and
      // format characters).
      out += "\\x";
      out += hex[(c >> 4) & 0xF];
      out += hex[c & 0xF];
    } else if (c == 0x2028 || c == 0x2029) {
      out += c == 0x2028 ? "\\u2028" : "\\u2029";
    } else {
      appendUtf8(out, c);
    }
  }
  out += quote;
  return out;
}

std::string pyRepr(const Value &v) {
  using K = Value::Kind;
  switch (v.kind()) {
  case K::String:
    return reprString(v.str());
  case K::Undefined:
    return "Undefined";
  case K::List:
  case K::Tuple: {
    bool tuple = v.isTuple();
    std::string out = tuple ? "(" : "[";
    const ValueList &items = v.items();
    for (size_t i = 0; i < items.size(); ++i) {
      if (i)
        out += ", ";
      out += pyRepr(items[i]);
    }
    if (tuple && items.size() == 1)
      out += ",";
    out += tuple ? ")" : "]";
    return out;
  }
  case K::Dict:
  case K::Namespace: {
    std::string out = v.isNamespace() ? "<Namespace {" : "{";
    bool first = true;
    for (const auto &[k, val] : v.dict().entries) {
      if (!first)
        out += ", ";
      first = false;
      out += pyRepr(k) + ": " + pyRepr(val);
    }
    out += v.isNamespace() ? "}>" : "}";
    return out;
  }
  default:
    return pyStr(v);
  }
}

std::string pyStr(const Value &v) {
  using K = Value::Kind;
  switch (v.kind()) {
  case K::Undefined:
    return "";
  case K::None:
    return "None";
  case K::Bool:
    return v.asBool() ? "True" : "False";
  case K::Int:
    return std::to_string(v.asInt());
  case K::Float:
    return formatFloat(v.asDouble());
  case K::String:
    return v.str();
  case K::Callable: {
    const Callable &c = v.callable();
    if (c.kind == Callable::Kind::Macro)
      return "<Macro '" + c.name + "'>";
    if (c.kind == Callable::Kind::Method)
      return "<built-in method " + c.name + " of " + c.self.typeName() + " object>";
    return "<built-in function " + c.name + ">";
  }
  case K::Loop:
    return "<LoopContext " + std::to_string(v.loopState().index0 + 1) + "/" +
           std::to_string(v.loopState().items->size()) + ">";
  case K::Iterator:
    return "<generator object>";
  default:
    return pyRepr(v);
  }
}

} // namespace volt::chat
