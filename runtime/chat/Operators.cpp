//===- Operators.cpp - attribute, item, operator and iteration rules ------===//
//
// The Python (and jinja2 sandbox) semantics of `.`, `[]`, slicing, `in`,
// comparison and arithmetic, with Python's error messages where Python
// raises.
//
//===----------------------------------------------------------------------===//
#include "runtime/chat/Interpreter.h"

#include "runtime/chat/BuiltinArgs.h"

#include "runtime/chat/Text.h"

#include <algorithm>
#include <cmath>

namespace volt::chat {

namespace {

/// jinja2's `object_type_repr`: "dict object", "None", ...
std::string objectTypeRepr(const Value &v) {
  switch (v.kind()) {
  case Value::Kind::None:
    return "None";
  case Value::Kind::Namespace:
    return "jinja2.utils.Namespace object";
  case Value::Kind::Loop:
    return "jinja2.runtime.LoopContext object";
  case Value::Kind::Callable:
    if (v.callable().kind == Callable::Kind::Macro)
      return "jinja2.runtime.Macro object";
    break;
  default:
    break;
  }
  return v.typeName() + " object";
}

Value noAttribute(const Value &obj, const std::string &name) {
  return Value::undefined("'" + objectTypeRepr(obj) + "' has no attribute '" + name + "'");
}

Value boundMethod(const Value &self, const std::string &name) {
  auto c = std::make_shared<Callable>();
  c->kind = Callable::Kind::Method;
  c->name = name;
  c->self = self;
  return Value::callable(std::move(c));
}

/// Python's slice.indices(): the positions a slice selects from `length`.
std::vector<size_t> sliceIndices(int64_t length, std::optional<int64_t> start,
                                 std::optional<int64_t> stop, int64_t step) {
  auto clampInput = [&](int64_t v) { return std::clamp<int64_t>(v, -length - 1, length + 1); };
  std::vector<size_t> out;
  if (step > 0) {
    int64_t b = start ? clampInput(*start) : 0;
    int64_t e = stop ? clampInput(*stop) : length;
    if (b < 0)
      b = std::max<int64_t>(b + length, 0);
    if (e < 0)
      e = std::max<int64_t>(e + length, 0);
    b = std::min(b, length);
    e = std::min(e, length);
    for (int64_t i = b; i < e; i += step)
      out.push_back(static_cast<size_t>(i));
  } else {
    int64_t b = start ? clampInput(*start) : length - 1;
    int64_t e = stop ? clampInput(*stop) : -1;
    if (start && b < 0)
      b = std::max<int64_t>(b + length, -1);
    if (stop && e < 0)
      e = std::max<int64_t>(e + length, -1);
    b = std::min(b, length - 1);
    e = std::min(e, length - 1);
    for (int64_t i = b; i > e; i += step)
      out.push_back(static_cast<size_t>(i));
  }
  return out;
}

bool checkedAdd(int64_t a, int64_t b, int64_t &out) { return !__builtin_add_overflow(a, b, &out); }
bool checkedSub(int64_t a, int64_t b, int64_t &out) { return !__builtin_sub_overflow(a, b, &out); }
bool checkedMul(int64_t a, int64_t b, int64_t &out) { return !__builtin_mul_overflow(a, b, &out); }

const char *opSymbol(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add:
    return "+";
  case BinaryOp::Sub:
    return "-";
  case BinaryOp::Mul:
    return "*";
  case BinaryOp::Div:
    return "/";
  case BinaryOp::FloorDiv:
    return "//";
  case BinaryOp::Mod:
    return "%";
  case BinaryOp::Pow:
    return "** or pow()";
  }
  return "?";
}

/// Python's float floor division and modulo (Objects/floatobject.c).
void floatDivMod(double vx, double wx, double &floorDiv, double &mod) {
  mod = std::fmod(vx, wx);
  double div = (vx - mod) / wx;
  if (mod != 0) {
    if ((wx < 0) != (mod < 0)) {
      mod += wx;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, wx);
  }
  if (div != 0) {
    floorDiv = std::floor(div);
    if (div - floorDiv > 0.5)
      floorDiv += 1.0;
  } else {
    floorDiv = std::copysign(0.0, vx / wx);
  }
}

} // namespace

Value Interpreter::getAttribute(const Value &obj, const std::string &name) {
  if (obj.isUndefined())
    failUndefined(obj);
  if (name.rfind("__", 0) == 0)
    return Value::undefined("access to attribute '" + name + "' of '" + obj.typeName() +
                            "' object is unsafe.");
  switch (obj.kind()) {
  case Value::Kind::Dict:
    if (hasMethod(obj, name))
      return boundMethod(obj, name);
    if (const Value *v = obj.dict().find(std::string_view(name)))
      return *v;
    return noAttribute(obj, name);
  case Value::Kind::Namespace:
    if (const Value *v = obj.dict().find(std::string_view(name)))
      return *v;
    return noAttribute(obj, name);
  case Value::Kind::Loop: {
    const LoopState &l = obj.loopState();
    int64_t length = static_cast<int64_t>(l.items->size());
    if (name == "index")
      return Value::integer(l.index0 + 1);
    if (name == "index0")
      return Value::integer(l.index0);
    if (name == "revindex")
      return Value::integer(length - l.index0);
    if (name == "revindex0")
      return Value::integer(length - l.index0 - 1);
    if (name == "first")
      return Value::boolean(l.index0 == 0);
    if (name == "last")
      return Value::boolean(l.index0 == length - 1);
    if (name == "length")
      return Value::integer(length);
    if (name == "depth")
      return Value::integer(l.depth0 + 1);
    if (name == "depth0")
      return Value::integer(l.depth0);
    if (name == "previtem")
      return l.index0 > 0 ? (*l.items)[static_cast<size_t>(l.index0 - 1)]
                          : Value::undefined("there is no previous item");
    if (name == "nextitem")
      return l.index0 + 1 < length ? (*l.items)[static_cast<size_t>(l.index0 + 1)]
                                   : Value::undefined("there is no next item");
    if (name == "cycle" || name == "changed")
      return boundMethod(obj, name);
    return noAttribute(obj, name);
  }
  default:
    if (hasMethod(obj, name))
      return boundMethod(obj, name);
    return noAttribute(obj, name);
  }
}

Value Interpreter::getItem(const Value &obj, const Value &key) {
  if (obj.isUndefined())
    failUndefined(obj);
  if ((obj.isListOrTuple() || obj.isString()) && key.isIntegral()) {
    int64_t i = key.asInt();
    if (obj.isString()) {
      std::u32string cps = decodeUtf8(obj.str());
      int64_t n = static_cast<int64_t>(cps.size());
      if (i < 0)
        i += n;
      if (i >= 0 && i < n) {
        std::string out;
        appendUtf8(out, cps[static_cast<size_t>(i)]);
        return Value::string(std::move(out));
      }
    } else {
      int64_t n = static_cast<int64_t>(obj.items().size());
      if (i < 0)
        i += n;
      if (i >= 0 && i < n)
        return obj.items()[static_cast<size_t>(i)];
    }
    return Value::undefined(objectTypeRepr(obj) + " has no element " + pyRepr(key));
  }
  if (obj.isDict()) {
    if (const Value *v = obj.dict().find(key))
      return *v;
  }
  if (key.isString())
    return getAttribute(obj, key.str());
  return Value::undefined(objectTypeRepr(obj) + " has no element " + pyRepr(key));
}

Value Interpreter::evalSlice(const Value &obj, const Expr &slice,
                             const std::shared_ptr<Scope> &scope) {
  std::optional<int64_t> parts[3];
  bool valid = true;
  for (int i = 0; i < 3; ++i) {
    if (!slice.args[static_cast<size_t>(i)])
      continue;
    Value v = eval(*slice.args[static_cast<size_t>(i)], scope);
    if (v.isIntegral())
      parts[i] = v.asInt();
    else if (!v.isNone())
      valid = false;
  }
  if (obj.isUndefined())
    failUndefined(obj);
  if (!valid || !(obj.isListOrTuple() || obj.isString()))
    return Value::undefined(objectTypeRepr(obj) + " has no element slice");
  int64_t step = parts[2].value_or(1);
  if (step == 0)
    fail("slice step cannot be zero");
  if (obj.isString()) {
    std::u32string cps = decodeUtf8(obj.str());
    std::u32string out;
    for (size_t i : sliceIndices(static_cast<int64_t>(cps.size()), parts[0], parts[1], step))
      out += cps[i];
    return Value::string(encodeUtf8(out));
  }
  ValueList out;
  for (size_t i : sliceIndices(static_cast<int64_t>(obj.items().size()), parts[0], parts[1], step))
    out.push_back(obj.items()[i]);
  return obj.isTuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

ValueList Interpreter::iterate(const Value &v) {
  // Copying is work too: a loop over a big list costs its length.
  if (v.isListOrTuple())
    charge(v.items().size() / 8);
  switch (v.kind()) {
  case Value::Kind::Undefined:
    return {};
  case Value::Kind::List:
  case Value::Kind::Tuple:
    return v.items();
  case Value::Kind::String: {
    ValueList out;
    for (char32_t c : decodeUtf8(v.str())) {
      std::string s;
      appendUtf8(s, c);
      out.push_back(Value::string(std::move(s)));
    }
    return out;
  }
  case Value::Kind::Dict: {
    ValueList out;
    for (const auto &[k, val] : v.dict().entries)
      out.push_back(k);
    return out;
  }
  case Value::Kind::Iterator: {
    IteratorState &it = v.iteratorState();
    ValueList out(it.items.begin() + static_cast<std::ptrdiff_t>(it.position), it.items.end());
    it.position = it.items.size();
    return out;
  }
  default:
    fail("'" + v.typeName() + "' object is not iterable");
  }
}

bool pyLess(Interpreter &in, const Value &a, const Value &b) {
  if (a.isUndefined())
    in.failUndefined(a);
  if (b.isUndefined())
    in.failUndefined(b);
  if (a.isNumber() && b.isNumber()) {
    if (a.isFloat() || b.isFloat())
      return a.asDouble() < b.asDouble();
    return a.asInt() < b.asInt();
  }
  if (a.isString() && b.isString())
    return a.str() < b.str();
  if (a.kind() == b.kind() && a.isListOrTuple()) {
    const ValueList &x = a.items(), &y = b.items();
    size_t n = std::min(x.size(), y.size());
    for (size_t i = 0; i < n; ++i)
      if (!pyEquals(x[i], y[i]))
        return pyLess(in, x[i], y[i]);
    return x.size() < y.size();
  }
  in.fail("'<' not supported between instances of '" + a.typeName() + "' and '" + b.typeName() +
          "'");
}

bool Interpreter::compare(CompareOp op, const Value &a, const Value &b) {
  switch (op) {
  case CompareOp::Eq:
    return pyEquals(a, b);
  case CompareOp::Ne:
    return !pyEquals(a, b);
  case CompareOp::Lt:
    return pyLess(*this, a, b);
  case CompareOp::Gt:
    return pyLess(*this, b, a);
  case CompareOp::Le:
    return pyEquals(a, b) ? (pyLess(*this, a, b), true) : pyLess(*this, a, b);
  case CompareOp::Ge:
    return pyEquals(a, b) ? (pyLess(*this, b, a), true) : pyLess(*this, b, a);
  case CompareOp::In:
    return contains(b, a);
  case CompareOp::NotIn:
    return !contains(b, a);
  }
  return false;
}

bool Interpreter::contains(const Value &container, const Value &needle) {
  switch (container.kind()) {
  case Value::Kind::Undefined:
    return false;
  case Value::Kind::String:
    if (!needle.isString())
      fail("'in <string>' requires string as left operand, not " + needle.typeName());
    return container.str().find(needle.str()) != std::string::npos;
  case Value::Kind::List:
  case Value::Kind::Tuple:
    for (const Value &item : container.items())
      if (pyEquals(item, needle))
        return true;
    return false;
  case Value::Kind::Dict:
    if (needle.isList() || needle.isDict() || needle.isNamespace())
      fail("unhashable type: '" + needle.typeName() + "'");
    return container.dict().find(needle) != nullptr;
  case Value::Kind::Iterator: {
    IteratorState &it = container.iteratorState();
    while (it.position < it.items.size())
      if (pyEquals(it.items[it.position++], needle))
        return true;
    return false;
  }
  default:
    fail("argument of type '" + container.typeName() + "' is not iterable");
  }
}

Value Interpreter::binary(BinaryOp op, const Value &a, const Value &b) {
  // str.__mod__ runs before Undefined's reflected operator would.
  if (op == BinaryOp::Mod && a.isString())
    return Value::string(printfFormat(*this, a.str(), b));
  if (a.isUndefined())
    failUndefined(a);
  if (b.isUndefined())
    failUndefined(b);
  auto unsupported = [&]() {
    return std::string("unsupported operand type(s) for ") + opSymbol(op) + ": '" + a.typeName() +
           "' and '" + b.typeName() + "'";
  };
  if (a.isNumber() && b.isNumber()) {
    bool integral = a.isIntegral() && b.isIntegral();
    if (integral && op != BinaryOp::Div) {
      int64_t x = a.asInt(), y = b.asInt(), r = 0;
      switch (op) {
      case BinaryOp::Add:
        if (!checkedAdd(x, y, r))
          fail("integer overflow");
        return Value::integer(r);
      case BinaryOp::Sub:
        if (!checkedSub(x, y, r))
          fail("integer overflow");
        return Value::integer(r);
      case BinaryOp::Mul:
        if (!checkedMul(x, y, r))
          fail("integer overflow");
        return Value::integer(r);
      case BinaryOp::FloorDiv:
      case BinaryOp::Mod: {
        if (y == 0)
          fail(op == BinaryOp::Mod ? "integer modulo by zero"
                                   : "integer division or modulo by zero");
        if (x == INT64_MIN && y == -1) {
          if (op == BinaryOp::Mod)
            return Value::integer(0);
          fail("integer overflow");
        }
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
          m += y;
          q -= 1;
        }
        return Value::integer(op == BinaryOp::Mod ? m : q);
      }
      case BinaryOp::Pow: {
        if (y < 0) {
          if (x == 0)
            fail("0.0 cannot be raised to a negative power");
          return Value::number(std::pow(static_cast<double>(x), static_cast<double>(y)));
        }
        int64_t result = 1, base = x;
        for (int64_t e = y; e > 0; e >>= 1) {
          if ((e & 1) && !checkedMul(result, base, result))
            fail("integer overflow");
          if (e > 1 && !checkedMul(base, base, base))
            fail("integer overflow");
        }
        return Value::integer(result);
      }
      default:
        break;
      }
    }
    double x = a.asDouble(), y = b.asDouble();
    switch (op) {
    case BinaryOp::Add:
      return Value::number(x + y);
    case BinaryOp::Sub:
      return Value::number(x - y);
    case BinaryOp::Mul:
      return Value::number(x * y);
    case BinaryOp::Div:
      if (y == 0)
        fail(integral ? "division by zero" : "float division by zero");
      return Value::number(x / y);
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod: {
      if (y == 0)
        fail(op == BinaryOp::Mod ? "float modulo" : "float floor division by zero");
      double q, m;
      floatDivMod(x, y, q, m);
      return Value::number(op == BinaryOp::Mod ? m : q);
    }
    case BinaryOp::Pow:
      if (x == 0 && y < 0)
        fail("0.0 cannot be raised to a negative power");
      if (x < 0 && y != std::floor(y))
        fail("complex results are not supported");
      return Value::number(std::pow(x, y));
    }
  }
  if (op == BinaryOp::Add) {
    if (a.isString() && b.isString()) {
      checkSize(a.str().size() + b.str().size());
      return Value::string(a.str() + b.str());
    }
    if (a.kind() == b.kind() && a.isListOrTuple()) {
      checkSize(0, a.items().size() + b.items().size());
      charge((a.items().size() + b.items().size()) / 8);
      ValueList out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return a.isTuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
    if (a.isString() || a.isListOrTuple())
      fail("can only concatenate " + a.typeName() + " (not \"" + b.typeName() + "\") to " +
           a.typeName());
    fail(unsupported());
  }
  if (op == BinaryOp::Mul) {
    const Value *seq = (a.isString() || a.isListOrTuple()) ? &a : &b;
    const Value *count = seq == &a ? &b : &a;
    if ((seq->isString() || seq->isListOrTuple()) && count->isIntegral()) {
      int64_t n = std::max<int64_t>(count->asInt(), 0);
      if (seq->isString()) {
        if (n > 0 && seq->str().size() > limits_.maxValueBytes / static_cast<size_t>(n))
          checkSize(limits_.maxValueBytes + 1);
        std::string out;
        for (int64_t i = 0; i < n; ++i)
          out += seq->str();
        return Value::string(std::move(out));
      }
      if (n > 0 && seq->items().size() > limits_.maxListItems / static_cast<size_t>(n))
        checkSize(0, limits_.maxListItems + 1);
      ValueList out;
      charge(static_cast<uint64_t>(n) * seq->items().size() / 8);
      for (int64_t i = 0; i < n; ++i)
        out.insert(out.end(), seq->items().begin(), seq->items().end());
      return seq->isTuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
    if (seq->isString() || seq->isListOrTuple())
      fail("can't multiply sequence by non-int of type '" + count->typeName() + "'");
  }
  fail(unsupported());
}

} // namespace volt::chat
