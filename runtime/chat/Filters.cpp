//===- Filters.cpp - jinja2's built-in filters, and HF's tojson -----------===//
//
// Each filter follows jinja2 3.1's implementation (filters.py): the same
// parameters, the same treatment of undefined values, and one-shot
// iterators where jinja2 returns generators (`map`, `select`...).
//
//===----------------------------------------------------------------------===//
#include "runtime/chat/BuiltinArgs.h"
#include "runtime/chat/Text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace volt::chat {

namespace {

std::string soft(const Value &v) { return pyStr(v); }

/// Python's float() of a string: surrounding whitespace, underscores between
/// digits, "inf"/"nan" words.
std::optional<double> parseFloat(const std::string &text) {
  std::string s = pyStrip(text, std::nullopt, true, true);
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (i == 0 || i + 1 == s.size() || !std::isdigit(static_cast<unsigned char>(s[i - 1])) ||
          !std::isdigit(static_cast<unsigned char>(s[i + 1])))
        return std::nullopt;
      continue;
    }
    clean += s[i];
  }
  if (clean.empty())
    return std::nullopt;
  std::string lower = asciiLower(clean);
  size_t signLen = (lower[0] == '+' || lower[0] == '-') ? 1 : 0;
  std::string word = lower.substr(signLen);
  if (word == "inf" || word == "infinity" || word == "nan") {
    double v = word == "nan" ? NAN : INFINITY;
    return lower[0] == '-' ? -v : v;
  }
  for (char c : word)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != '+' &&
        c != '-')
      return std::nullopt;
  char *end = nullptr;
  double v = std::strtod(clean.c_str(), &end);
  if (end != clean.c_str() + clean.size())
    return std::nullopt;
  return v;
}

/// Python's int(text, base) for bases 2..36 and 0.
std::optional<int64_t> parseInt(const std::string &text, int64_t base) {
  std::string s = pyStrip(text, std::nullopt, true, true);
  bool negative = false;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-'))
    negative = s[i++] == '-';
  auto prefixed = [&](char p) { return i + 1 < s.size() && s[i] == '0' && (s[i + 1] | 0x20) == p; };
  if (base == 0) {
    base = prefixed('x') ? 16 : prefixed('o') ? 8 : prefixed('b') ? 2 : 10;
  }
  if ((base == 16 && prefixed('x')) || (base == 8 && prefixed('o')) ||
      (base == 2 && prefixed('b'))) {
    i += 2;
    if (i < s.size() && s[i] == '_')
      ++i;
  }
  if (base < 2 || base > 36 || i >= s.size())
    return std::nullopt;
  int64_t value = 0;
  bool lastDigit = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '_') {
      if (!lastDigit)
        return std::nullopt;
      lastDigit = false;
      continue;
    }
    int d = std::isdigit(static_cast<unsigned char>(c))   ? c - '0'
            : std::isalpha(static_cast<unsigned char>(c)) ? (c | 0x20) - 'a' + 10
                                                          : 99;
    if (d >= base)
      return std::nullopt;
    if (__builtin_mul_overflow(value, base, &value) || __builtin_add_overflow(value, d, &value))
      return std::nullopt;
    lastDigit = true;
  }
  if (!lastDigit)
    return std::nullopt;
  return negative ? -value : value;
}

/// Python's round(x, ndigits) for floats: correctly rounded, ties to even
/// on the exact binary value, which printf's %.Nf also does.
double roundFloat(double x, int64_t digits) {
  if (!std::isfinite(x) || digits > 300)
    return x;
  if (digits < -308)
    return 0.0 * x;
  if (digits >= 0) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(digits), x);
    return std::strtod(buf, nullptr);
  }
  double scale = std::pow(10.0, static_cast<double>(-digits));
  double y = x / scale;
  double r = std::nearbyint(y);
  return r * scale;
}

Value toIterator(ValueList items) { return Value::iterator(std::move(items)); }

Value selectOrReject(Interpreter &in, const Value &value, const CallArgs &args, bool select,
                     bool byAttribute) {
  if (!value.truthy())
    return toIterator({});
  size_t offset = 0;
  Value attribute;
  if (byAttribute) {
    if (args.positional.empty())
      in.fail("missing parameter for attribute name");
    attribute = args.positional[0];
    offset = 1;
  }
  std::optional<std::string> testName;
  CallArgs testArgs;
  if (args.positional.size() > offset) {
    if (!args.positional[offset].isString())
      in.fail("a test name must be a string");
    testName = args.positional[offset].str();
    if (testSupport(*testName) != Support::Supported)
      in.fail("no test named '" + *testName + "'");
    testArgs.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(offset) + 1,
                               args.positional.end());
  }
  testArgs.keyword = args.keyword;
  ValueList out;
  for (const Value &item : in.iterate(value)) {
    in.step();
    Value subject = byAttribute ? lookupPath(in, item, attribute) : item;
    bool ok = testName ? applyTest(in, *testName, subject, testArgs) : subject.truthy();
    if (ok == select)
      out.push_back(item);
  }
  return toIterator(std::move(out));
}

Value mapFilter(Interpreter &in, const Value &value, const CallArgs &args) {
  if (!value.truthy())
    return toIterator({});
  ValueList out;
  if (args.positional.empty()) {
    Value attribute, fallback = Value::none();
    bool haveAttribute = false;
    for (const auto &[key, v] : args.keyword) {
      if (key == "attribute")
        attribute = v, haveAttribute = true;
      else if (key == "default")
        fallback = v;
      else
        in.fail("unexpected keyword argument '" + key + "'");
    }
    if (!haveAttribute)
      in.fail("map requires a filter argument");
    for (const Value &item : in.iterate(value)) {
      in.step();
      Value v = lookupPath(in, item, attribute);
      out.push_back(v.isUndefined() && !fallback.isNone() ? fallback : v);
    }
    return toIterator(std::move(out));
  }
  if (!args.positional[0].isString())
    in.fail("a filter name must be a string");
  std::string name = args.positional[0].str();
  if (filterSupport(name) != Support::Supported)
    in.fail("no filter named '" + name + "'");
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const Value &item : in.iterate(value)) {
    in.step();
    out.push_back(applyFilter(in, name, item, rest));
  }
  return toIterator(std::move(out));
}

/// A sort key: the attribute paths (comma separated) of `item`.
ValueList sortKey(Interpreter &in, const Value &item, const Value &attribute, bool caseSensitive) {
  ValueList key;
  if (attribute.isString()) {
    for (const std::string &part : pySplit(attribute.str(), std::string(","), -1))
      key.push_back(lookupPath(in, item, Value::string(part)));
  } else {
    key.push_back(attribute.isNone() ? item : lookupPath(in, item, attribute));
  }
  if (!caseSensitive)
    for (Value &k : key)
      k = ignoreCase(k);
  return key;
}

bool keyLess(Interpreter &in, const ValueList &a, const ValueList &b) {
  return pyLess(in, Value::list(a), Value::list(b));
}

Value sortFilter(Interpreter &in, const Value &value, const BoundArgs &a) {
  bool reverse = a.flag(0, false), caseSensitive = a.flag(1, false);
  Value attribute = a.get(2, Value::none());
  ValueList items = in.iterate(value);
  std::vector<std::pair<ValueList, Value>> keyed;
  for (Value &item : items)
    keyed.emplace_back(sortKey(in, item, attribute, caseSensitive), std::move(item));
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto &x, const auto &y) {
    in.step();
    return reverse ? keyLess(in, y.first, x.first) : keyLess(in, x.first, y.first);
  });
  ValueList out;
  for (auto &[k, v] : keyed)
    out.push_back(std::move(v));
  return Value::list(std::move(out));
}

Value minMax(Interpreter &in, const Value &value, const BoundArgs &a, bool max) {
  ValueList items = in.iterate(value);
  if (items.empty())
    return Value::undefined("No aggregated item, sequence was empty.");
  bool caseSensitive = a.flag(0, false);
  Value attribute = a.get(1, Value::none());
  size_t best = 0;
  ValueList bestKey = sortKey(in, items[0], attribute, caseSensitive);
  for (size_t i = 1; i < items.size(); ++i) {
    ValueList key = sortKey(in, items[i], attribute, caseSensitive);
    if (max ? keyLess(in, bestKey, key) : keyLess(in, key, bestKey)) {
      best = i;
      bestKey = std::move(key);
    }
  }
  return items[best];
}

std::string htmlEscape(const std::string &s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&#34;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

int64_t lengthOf(Interpreter &in, const Value &v) {
  switch (v.kind()) {
  case Value::Kind::Undefined:
    return 0;
  case Value::Kind::String:
    return static_cast<int64_t>(codepointCount(v.str()));
  case Value::Kind::List:
  case Value::Kind::Tuple:
    return static_cast<int64_t>(v.items().size());
  case Value::Kind::Dict:
    return static_cast<int64_t>(v.dict().size());
  case Value::Kind::Loop:
    return static_cast<int64_t>(v.loopState().items->size());
  default:
    in.fail("object of type '" + v.typeName() + "' has no len()");
  }
}

} // namespace

Value lookupPath(Interpreter &in, const Value &item, const Value &attribute) {
  if (attribute.isNone())
    return item;
  if (!attribute.isString())
    return in.getItem(item, attribute);
  Value v = item;
  for (const std::string &part : pySplit(attribute.str(), std::string("."), -1)) {
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c));
    });
    std::optional<int64_t> index = digits ? parseInt(part, 10) : std::nullopt;
    v = in.getItem(v, index ? Value::integer(*index) : Value::string(part));
  }
  return v;
}

Value ignoreCase(const Value &v) { return v.isString() ? Value::string(pyLower(v.str())) : v; }

Value applyFilter(Interpreter &in, const std::string &name, const Value &value,
                  const CallArgs &args) {
  in.step();
  std::string what = "filter '" + name + "'";
  auto bind = [&](std::vector<std::string> params) {
    return BoundArgs(in, args, what, std::move(params));
  };
  if (name == "default" || name == "d") {
    BoundArgs a = bind({"default_value", "boolean"});
    if (value.isUndefined() || (a.flag(1, false) && !value.truthy()))
      return a.get(0, Value::string(""));
    return value;
  }
  if (name == "length" || name == "count") {
    bind({});
    return Value::integer(lengthOf(in, value));
  }
  if (name == "string" || name == "safe") {
    bind({});
    return Value::string(soft(value));
  }
  if (name == "escape" || name == "e") {
    bind({});
    return Value::string(htmlEscape(soft(value)));
  }
  if (name == "trim") {
    BoundArgs a = bind({"chars"});
    return Value::string(pyStrip(soft(value), a.optionalString(0), true, true));
  }
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
    bind({});
    std::string s = soft(value);
    if (name == "upper")
      return Value::string(pyUpper(s));
    if (name == "lower")
      return Value::string(pyLower(s));
    if (name == "capitalize")
      return Value::string(pyCapitalize(s));
    // jinja2's title: words start after '-', whitespace, '(', '{', '[', '<'.
    std::u32string cps = decodeUtf8(s);
    bool start = true;
    std::string out;
    for (char32_t c : cps) {
      bool boundary = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || isPySpace(c);
      std::string one;
      appendUtf8(one, c);
      out += boundary ? one : (start ? pyUpper(one) : pyLower(one));
      start = boundary;
    }
    return Value::string(std::move(out));
  }
  if (name == "replace") {
    BoundArgs a = bind({"old", "new", "count"});
    Value count = a.get(2, Value::none());
    int64_t n = count.isNone() ? -1 : a.integer(2, -1);
    std::string out = pyReplace(soft(value), soft(a.required(0)), soft(a.required(1)), n);
    in.checkSize(out.size());
    return Value::string(std::move(out));
  }
  if (name == "join") {
    BoundArgs a = bind({"d", "attribute"});
    std::string sep = soft(a.get(0, Value::string("")));
    Value attribute = a.get(1, Value::none());
    std::string out;
    bool first = true;
    for (const Value &item : in.iterate(value)) {
      if (!first)
        out += sep;
      first = false;
      out += soft(attribute.isNone() ? item : lookupPath(in, item, attribute));
      in.checkSize(out.size());
    }
    return Value::string(std::move(out));
  }
  if (name == "first") {
    bind({});
    if (value.isIterator()) {
      IteratorState &it = value.iteratorState();
      if (it.position < it.items.size())
        return it.items[it.position++];
    } else {
      ValueList items = in.iterate(value);
      if (!items.empty())
        return items.front();
    }
    return Value::undefined("No first item, sequence was empty.");
  }
  if (name == "last") {
    bind({});
    // Undefined reverses as an empty sequence (it has __len__ and
    // __getitem__), so its last item is undefined, not an error.
    if (!(value.isListOrTuple() || value.isString() || value.isDict() || value.isUndefined()))
      in.fail("'" + value.typeName() + "' object is not reversible");
    ValueList items = in.iterate(value);
    if (!items.empty())
      return items.back();
    return Value::undefined("No last item, sequence was empty.");
  }
  if (name == "list") {
    bind({});
    return Value::list(in.iterate(value));
  }
  if (name == "items") {
    bind({});
    if (value.isUndefined())
      return toIterator({});
    if (!value.isDict())
      in.fail("Can only get item pairs from a mapping.");
    ValueList out;
    for (const auto &[k, v] : value.dict().entries)
      out.push_back(Value::tuple({k, v}));
    return toIterator(std::move(out));
  }
  if (name == "dictsort") {
    BoundArgs a = bind({"case_sensitive", "by", "reverse"});
    if (!value.isDict())
      in.fail("dictsort needs a mapping, not '" + value.typeName() + "'");
    std::string by = soft(a.get(1, Value::string("key")));
    if (by != "key" && by != "value")
      in.fail("You can only sort by either \"key\" or \"value\"");
    bool caseSensitive = a.flag(0, false), reverse = a.flag(2, false);
    ValueList pairs;
    for (const auto &[k, v] : value.dict().entries)
      pairs.push_back(Value::tuple({k, v}));
    size_t pos = by == "key" ? 0 : 1;
    std::stable_sort(pairs.begin(), pairs.end(), [&](const Value &x, const Value &y) {
      Value kx = x.items()[pos], ky = y.items()[pos];
      if (!caseSensitive)
        kx = ignoreCase(kx), ky = ignoreCase(ky);
      return reverse ? pyLess(in, ky, kx) : pyLess(in, kx, ky);
    });
    return Value::list(std::move(pairs));
  }
  if (name == "sort")
    return sortFilter(in, value, bind({"reverse", "case_sensitive", "attribute"}));
  if (name == "min" || name == "max")
    return minMax(in, value, bind({"case_sensitive", "attribute"}), name == "max");
  if (name == "unique") {
    BoundArgs a = bind({"case_sensitive", "attribute"});
    bool caseSensitive = a.flag(0, false);
    Value attribute = a.get(1, Value::none());
    ValueList seen, out;
    for (const Value &item : in.iterate(value)) {
      in.step();
      Value key = attribute.isNone() ? item : lookupPath(in, item, attribute);
      if (!caseSensitive)
        key = ignoreCase(key);
      if (key.isList() || key.isDict() || key.isNamespace())
        in.fail("unhashable type: '" + key.typeName() + "'");
      if (std::none_of(seen.begin(), seen.end(),
                       [&](const Value &s) { return pyEquals(s, key); })) {
        seen.push_back(key);
        out.push_back(item);
      }
    }
    return toIterator(std::move(out));
  }
  if (name == "reverse") {
    bind({});
    if (value.isString()) {
      std::u32string cps = decodeUtf8(value.str());
      std::reverse(cps.begin(), cps.end());
      return Value::string(encodeUtf8(cps));
    }
    ValueList items = in.iterate(value);
    std::reverse(items.begin(), items.end());
    if (value.isListOrTuple() || value.isDict())
      return toIterator(std::move(items));
    return Value::list(std::move(items));
  }
  if (name == "map")
    return mapFilter(in, value, args);
  if (name == "select" || name == "reject")
    return selectOrReject(in, value, args, name == "select", false);
  if (name == "selectattr" || name == "rejectattr")
    return selectOrReject(in, value, args, name == "selectattr", true);
  if (name == "sum") {
    BoundArgs a = bind({"attribute", "start"});
    Value attribute = a.get(0, Value::none());
    Value total = a.get(1, Value::integer(0));
    if (total.isString())
      in.fail("sum() can't sum strings [use ''.join(seq) instead]");
    for (const Value &item : in.iterate(value))
      total = in.binary(BinaryOp::Add, total, lookupPath(in, item, attribute));
    return total;
  }
  if (name == "int") {
    BoundArgs a = bind({"default", "base"});
    Value fallback = a.get(0, Value::integer(0));
    int64_t base = a.integer(1, 10);
    if (value.isUndefined()) // int(Undefined) raises UndefinedError
      in.failUndefined(value);
    if (value.isString()) {
      if (auto v = parseInt(value.str(), base))
        return Value::integer(*v);
      if (auto f = parseFloat(value.str()); f && std::isfinite(*f) && std::fabs(*f) < 9.2e18)
        return Value::integer(static_cast<int64_t>(*f));
      return fallback;
    }
    if (value.isIntegral())
      return Value::integer(value.asInt());
    if (value.isFloat() && std::isfinite(value.asDouble()) && std::fabs(value.asDouble()) < 9.2e18)
      return Value::integer(static_cast<int64_t>(value.asDouble()));
    return fallback;
  }
  if (name == "float") {
    BoundArgs a = bind({"default"});
    Value fallback = a.get(0, Value::number(0.0));
    if (value.isUndefined())
      in.failUndefined(value);
    if (value.isNumber())
      return Value::number(value.asDouble());
    if (value.isString())
      if (auto f = parseFloat(value.str()))
        return Value::number(*f);
    return fallback;
  }
  if (name == "abs") {
    bind({});
    if (value.isFloat())
      return Value::number(std::fabs(value.asDouble()));
    if (value.isIntegral()) {
      if (value.asInt() == INT64_MIN)
        in.fail("integer overflow");
      return Value::integer(std::llabs(value.asInt()));
    }
    in.fail("bad operand type for abs(): '" + value.typeName() + "'");
  }
  if (name == "round") {
    BoundArgs a = bind({"precision", "method"});
    int64_t precision = a.integer(0, 0);
    std::string method = soft(a.get(1, Value::string("common")));
    if (method != "common" && method != "ceil" && method != "floor")
      in.fail("method must be common, ceil or floor");
    if (value.isUndefined())
      in.failUndefined(value);
    if (!value.isNumber())
      in.fail("type " + value.typeName() + " doesn't define __round__ method");
    if (method == "common") {
      if (value.isIntegral())
        return Value::integer(value.asInt()); // round(int, n >= 0) keeps the int
      return Value::number(roundFloat(value.asDouble(), precision));
    }
    double scale = std::pow(10.0, static_cast<double>(precision));
    double x = value.asDouble() * scale;
    return Value::number((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
  }
  if (name == "indent") {
    BoundArgs a = bind({"width", "first", "blank"});
    Value width = a.get(0, Value::integer(4));
    std::string indention =
        width.isString()
            ? width.str()
            : std::string(static_cast<size_t>(std::clamp<int64_t>(a.integer(0, 4), 0, 1024)), ' ');
    // jinja2 appends "\n" and splits lines, which only strings survive.
    if (value.isUndefined())
      in.failUndefined(value);
    if (!value.isString())
      in.fail("'" + value.typeName() + "' object has no attribute 'splitlines'");
    std::string s = value.str() + "\n";
    std::vector<std::string> lines = pySplitLines(s);
    std::string out;
    if (a.flag(2, false)) {
      for (size_t i = 0; i < lines.size(); ++i)
        out += (i ? "\n" + indention : "") + lines[i];
    } else {
      out = lines.empty() ? "" : lines[0];
      for (size_t i = 1; i < lines.size(); ++i)
        out += "\n" + (lines[i].empty() ? "" : indention) + lines[i];
    }
    if (a.flag(1, false))
      out = indention + out;
    in.checkSize(out.size());
    return Value::string(std::move(out));
  }
  if (name == "center") {
    BoundArgs a = bind({"width"});
    std::string s = soft(value);
    int64_t width =
        std::min<int64_t>(a.integer(0, 80), static_cast<int64_t>(in.limits().maxValueBytes));
    int64_t len = static_cast<int64_t>(codepointCount(s));
    if (width <= len)
      return Value::string(s);
    int64_t margin = width - len;
    int64_t left = margin / 2 + (margin & width & 1);
    return Value::string(std::string(static_cast<size_t>(left), ' ') + s +
                         std::string(static_cast<size_t>(margin - left), ' '));
  }
  if (name == "wordcount") {
    bind({});
    int64_t words = 0;
    bool inWord = false;
    for (char32_t c : decodeUtf8(soft(value))) {
      bool word = c == '_' || (c < 0x80 ? std::isalnum(static_cast<int>(c)) != 0 : !isPySpace(c));
      if (word && !inWord)
        ++words;
      inWord = word;
    }
    return Value::integer(words);
  }
  if (name == "attr") {
    BoundArgs a = bind({"name"});
    std::string attrName = soft(a.required(0));
    if (value.isDict() && !hasMethod(value, attrName))
      return Value::undefined("'dict object' has no attribute '" + attrName + "'");
    return in.getAttribute(value, attrName);
  }
  if (name == "format") {
    if (!args.positional.empty() && !args.keyword.empty())
      in.fail("can't handle positional and keyword arguments at the same time");
    Value operands;
    if (!args.keyword.empty()) {
      auto d = std::make_shared<Dict>();
      for (const auto &[key, v] : args.keyword)
        d->set(Value::string(key), v);
      operands = Value::dict(std::move(d));
    } else {
      operands = Value::tuple(args.positional);
    }
    return Value::string(printfFormat(in, soft(value), operands));
  }
  if (name == "tojson") {
    BoundArgs a = bind({"ensure_ascii", "indent", "separators", "sort_keys"});
    return Value::string(toJson(in, value, a.flag(0, false), a.get(1, Value::none()),
                                a.get(2, Value::none()), a.flag(3, false)));
  }
  in.fail("no filter named '" + name + "'");
}

} // namespace volt::chat
