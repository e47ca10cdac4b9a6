//===- Methods.cpp - tests, str/dict/list methods, globals, tojson --------===//
#include "runtime/chat/BuiltinArgs.h"
#include "runtime/chat/Text.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <span>

namespace volt::chat {

namespace {

bool contains(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}
bool contains(std::initializer_list<std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// --- the registries ------------------------------------------------------

constexpr std::string_view kFilters[] = {
    "abs",      "attr",   "capitalize", "center",     "count",   "d",       "default",
    "dictsort", "e",      "escape",     "first",      "float",   "indent",  "int",
    "join",     "last",   "length",     "list",       "lower",   "items",   "map",
    "min",      "max",    "reject",     "rejectattr", "replace", "reverse", "round",
    "safe",     "select", "selectattr", "sort",       "string",  "sum",     "title",
    "trim",     "unique", "upper",      "wordcount",  "tojson",  "format"};
constexpr std::string_view kUnsupportedFilters[] = {
    "batch",     "filesizeformat", "forceescape", "groupby", "pprint",   "random", "slice",
    "striptags", "truncate",       "urlencode",   "urlize",  "wordwrap", "xmlattr"};

constexpr std::string_view kTests[] = {
    "odd",     "even",    "divisibleby", "defined",  "undefined", "filter", "test",        "none",
    "boolean", "false",   "true",        "integer",  "float",     "lower",  "upper",       "string",
    "mapping", "number",  "sequence",    "iterable", "callable",  "sameas", "in",          "==",
    "eq",      "equalto", "!=",          "ne",       ">",         "gt",     "greaterthan", "ge",
    ">=",      "<",       "lt",          "lessthan", "<=",        "le"};
constexpr std::string_view kUnsupportedTests[] = {"escaped"};

constexpr std::string_view kStrMethods[] = {
    "capitalize", "count",        "endswith",     "find",    "format",  "index",  "isalnum",
    "isalpha",    "isdigit",      "islower",      "isspace", "isupper", "join",   "lower",
    "lstrip",     "removeprefix", "removesuffix", "replace", "rfind",   "rsplit", "rstrip",
    "split",      "splitlines",   "startswith",   "strip",   "title",   "upper"};
constexpr std::string_view kUnsupportedStrMethods[] = {
    "casefold", "center",     "encode",       "expandtabs", "format_map",
    "isascii",  "isdecimal",  "isidentifier", "isnumeric",  "isprintable",
    "istitle",  "ljust",      "maketrans",    "partition",  "rindex",
    "rjust",    "rpartition", "swapcase",     "translate",  "zfill"};
constexpr std::string_view kDictMethods[] = {"get", "items", "keys", "values", "copy"};
constexpr std::string_view kDictMutators[] = {"clear", "pop", "popitem", "setdefault", "update"};
constexpr std::string_view kUnsupportedDictMethods[] = {"fromkeys"};
constexpr std::string_view kListMethods[] = {"count", "index", "copy"};
constexpr std::string_view kListMutators[] = {"append", "clear",  "extend",  "insert",
                                              "pop",    "remove", "reverse", "sort"};

std::vector<std::string> names(std::span<const std::string_view> list) {
  return {list.begin(), list.end()};
}

// --- helpers -------------------------------------------------------------

/// `str.isupper` / `str.islower`: at least one cased character, and none of
/// the other case.
bool casedAll(const std::string &s, bool upper) {
  bool cased = false;
  for (char32_t c : decodeUtf8(s)) {
    std::string one;
    appendUtf8(one, c);
    bool isLower = pyUpper(one) != one, isUpper = pyLower(one) != one;
    if ((upper && isLower) || (!upper && isUpper))
      return false;
    cased = cased || isLower || isUpper;
  }
  return cased;
}

/// Python's `str.format` without format specs.
std::string formatString(Interpreter &in, const std::string &fmt, const CallArgs &args) {
  std::string out;
  size_t autoIndex = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      in.fail("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = fmt.find('}', i);
    if (close == std::string::npos)
      in.fail("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    char conversion = 0;
    if (size_t bang = field.find('!'); bang != std::string::npos) {
      if (bang + 2 != field.size())
        in.fail("unsupported conversion in format string");
      conversion = field[bang + 1];
      field.resize(bang);
    }
    if (field.find(':') != std::string::npos || field.find('.') != std::string::npos ||
        field.find('[') != std::string::npos)
      in.fail("format specs and field access in str.format are not supported");
    Value v;
    if (field.empty()) {
      if (autoIndex >= args.positional.size())
        in.fail("Replacement index " + std::to_string(autoIndex) +
                " out of range for positional args tuple");
      v = args.positional[autoIndex++];
    } else if (std::all_of(field.begin(), field.end(),
                           [](char d) { return std::isdigit(static_cast<unsigned char>(d)); })) {
      size_t index = std::stoul(field.size() > 9 ? std::string("999999999") : field);
      if (index >= args.positional.size())
        in.fail("Replacement index " + field + " out of range for positional args tuple");
      v = args.positional[index];
    } else {
      auto it = std::find_if(args.keyword.begin(), args.keyword.end(),
                             [&](const auto &kv) { return kv.first == field; });
      if (it == args.keyword.end())
        in.fail("'" + field + "'");
      v = it->second;
    }
    if (conversion == 'r')
      out += pyRepr(v);
    else if (conversion == 's' || conversion == 0)
      out += pyStr(v);
    else
      in.fail("Unknown conversion specifier " + std::string(1, conversion));
    in.checkSize(out.size());
  }
  return out;
}

/// `str.find` / `rfind` / `index` / `count` over code points.
Value stringSearch(Interpreter &in, const std::string &s, const std::string &method,
                   const BoundArgs &a) {
  std::string needle = pyStr(a.required(0));
  if (!a.required(0).isString())
    in.fail("must be str, not " + a.required(0).typeName());
  if (method == "count") {
    if (needle.empty())
      return Value::integer(static_cast<int64_t>(codepointCount(s)) + 1);
    int64_t n = 0;
    for (size_t at = s.find(needle); at != std::string::npos;
         at = s.find(needle, at + needle.size()))
      ++n;
    return Value::integer(n);
  }
  size_t at = method == "rfind" ? s.rfind(needle) : s.find(needle);
  if (at == std::string::npos) {
    if (method == "index")
      in.fail("substring not found");
    return Value::integer(-1);
  }
  return Value::integer(static_cast<int64_t>(codepointCount(std::string_view(s).substr(0, at))));
}

bool prefixTest(Interpreter &in, const std::string &s, const Value &arg, bool prefix) {
  auto one = [&](const Value &p) {
    if (!p.isString())
      in.fail(std::string(prefix ? "startswith" : "endswith") +
              " first arg must be str or a tuple of str, not " + p.typeName());
    const std::string &t = p.str();
    if (t.size() > s.size())
      return false;
    return prefix ? s.compare(0, t.size(), t) == 0
                  : s.compare(s.size() - t.size(), t.size(), t) == 0;
  };
  if (arg.isTuple()) {
    for (const Value &p : arg.items())
      if (one(p))
        return true;
    return false;
  }
  return one(arg);
}

Value strMethod(Interpreter &in, const std::string &s, const std::string &name,
                const CallArgs &args) {
  std::string what = "str." + name + "()";
  auto bind = [&](std::vector<std::string> params) {
    return BoundArgs(in, args, what, std::move(params));
  };
  auto strings = [](std::vector<std::string> parts) {
    ValueList out;
    for (std::string &p : parts)
      out.push_back(Value::string(std::move(p)));
    return Value::list(std::move(out));
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    BoundArgs a = bind({"chars"});
    return Value::string(pyStrip(s, a.optionalString(0), name != "rstrip", name != "lstrip"));
  }
  if (name == "startswith" || name == "endswith") {
    BoundArgs a = bind({"prefix"});
    return Value::boolean(prefixTest(in, s, a.required(0), name == "startswith"));
  }
  if (name == "split" || name == "rsplit") {
    BoundArgs a = bind({"sep", "maxsplit"});
    std::optional<std::string> sep = a.optionalString(0);
    if (sep && sep->empty())
      in.fail("empty separator");
    int64_t maxSplit = a.integer(1, -1);
    return strings(name == "split" ? pySplit(s, sep, maxSplit) : pyRSplit(s, sep, maxSplit));
  }
  if (name == "splitlines") {
    bind({});
    return strings(pySplitLines(s));
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    bind({});
    return Value::string(name == "upper"   ? pyUpper(s)
                         : name == "lower" ? pyLower(s)
                         : name == "title" ? pyTitle(s)
                                           : pyCapitalize(s));
  }
  if (name == "replace") {
    BoundArgs a = bind({"old", "new", "count"});
    if (!a.required(0).isString() || !a.required(1).isString())
      in.fail("replace() arguments must be str");
    std::string out = pyReplace(s, a.required(0).str(), a.required(1).str(), a.integer(2, -1));
    in.checkSize(out.size());
    return Value::string(std::move(out));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "count")
    return stringSearch(in, s, name, bind({"sub"}));
  if (name == "removeprefix" || name == "removesuffix") {
    BoundArgs a = bind({"affix"});
    if (!a.required(0).isString())
      in.fail(name + "() argument must be str, not " + a.required(0).typeName());
    const std::string &t = a.required(0).str();
    bool prefix = name == "removeprefix";
    if (prefixTest(in, s, a.required(0), prefix))
      return Value::string(prefix ? s.substr(t.size()) : s.substr(0, s.size() - t.size()));
    return Value::string(s);
  }
  if (name == "join") {
    BoundArgs a = bind({"iterable"});
    std::string out;
    bool first = true;
    for (const Value &item : in.iterate(a.required(0))) {
      if (!item.isString())
        in.fail("sequence item: expected str instance, " + item.typeName() + " found");
      if (!first)
        out += s;
      first = false;
      out += item.str();
      in.checkSize(out.size());
    }
    return Value::string(std::move(out));
  }
  if (name == "format")
    return Value::string(formatString(in, s, args));
  if (name == "isalnum" || name == "isalpha" || name == "isdigit" || name == "isspace") {
    bind({});
    std::u32string cps = decodeUtf8(s);
    if (cps.empty())
      return Value::boolean(false);
    for (char32_t c : cps) {
      bool ok = name == "isspace"   ? isPySpace(c)
                : name == "isdigit" ? (c >= '0' && c <= '9')
                : name == "isalpha"
                    ? (c < 0x80 ? std::isalpha(static_cast<int>(c)) != 0 : !isPySpace(c))
                    : (c < 0x80 ? std::isalnum(static_cast<int>(c)) != 0 : !isPySpace(c));
      if (!ok)
        return Value::boolean(false);
    }
    return Value::boolean(true);
  }
  if (name == "islower" || name == "isupper") {
    bind({});
    return Value::boolean(casedAll(s, name == "isupper"));
  }
  in.fail("unsupported method 'str." + name + "'");
}

std::string strftime(Interpreter &in, const std::string &format, const std::tm &tm) {
  if (format.empty())
    return "";
  std::vector<char> buf(format.size() * 8 + 256);
  size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &tm);
  if (n == 0)
    in.fail("strftime_now: the format gives an empty or too long result");
  return std::string(buf.data(), n);
}

} // namespace

Support filterSupport(std::string_view name) {
  if (contains(kFilters, name))
    return Support::Supported;
  return contains(kUnsupportedFilters, name) ? Support::Unsupported : Support::Unknown;
}

Support testSupport(std::string_view name) {
  if (contains(kTests, name))
    return Support::Supported;
  return contains(kUnsupportedTests, name) ? Support::Unsupported : Support::Unknown;
}

Support methodSupport(std::string_view name) {
  if (contains(kStrMethods, name) || contains(kDictMethods, name) ||
      contains(kDictMutators, name) || contains(kListMethods, name) ||
      contains(kListMutators, name) || name == "cycle" || name == "changed")
    return Support::Supported;
  if (contains(kUnsupportedStrMethods, name) || contains(kUnsupportedDictMethods, name))
    return Support::Unsupported;
  return Support::Unknown;
}

Support globalSupport(std::string_view name) {
  if (contains({"range", "dict", "namespace", "raise_exception", "strftime_now"}, name))
    return Support::Supported;
  if (contains({"cycler", "joiner", "lipsum"}, name))
    return Support::Unsupported;
  return Support::Unknown;
}

std::vector<std::string> supportedFilters() { return names(kFilters); }
std::vector<std::string> supportedTests() { return names(kTests); }

bool hasMethod(const Value &self, std::string_view name) {
  switch (self.kind()) {
  case Value::Kind::String:
    return contains(kStrMethods, name) || contains(kUnsupportedStrMethods, name);
  case Value::Kind::Dict:
    return contains(kDictMethods, name) || contains(kDictMutators, name) ||
           contains(kUnsupportedDictMethods, name);
  case Value::Kind::List:
    return contains(kListMethods, name) || contains(kListMutators, name);
  case Value::Kind::Tuple:
    return name == "count" || name == "index";
  case Value::Kind::Loop:
    return name == "cycle" || name == "changed";
  default:
    return false;
  }
}

Value callMethod(Interpreter &in, const Value &self, const std::string &name,
                 const CallArgs &args) {
  in.step();
  if ((self.isDict() && contains(kDictMutators, name)) ||
      (self.isList() && contains(kListMutators, name)))
    in.fail("access to attribute '" + name + "' of '" + self.typeName() + "' object is unsafe.");
  if (self.isString())
    return strMethod(in, self.str(), name, args);
  std::string what = self.typeName() + "." + name + "()";
  if (self.isDict()) {
    const Dict &d = self.dict();
    if (name == "get") {
      BoundArgs a(in, args, what, {"key", "default"});
      const Value &key = a.required(0);
      if (key.isList() || key.isDict() || key.isNamespace())
        in.fail("unhashable type: '" + key.typeName() + "'");
      const Value *v = d.find(key);
      return v ? *v : a.get(1, Value::none());
    }
    BoundArgs a(in, args, what, {});
    ValueList out;
    for (const auto &[k, v] : d.entries)
      out.push_back(name == "keys" ? k : name == "values" ? v : Value::tuple({k, v}));
    if (name == "copy")
      return self;
    if (name == "keys" || name == "values" || name == "items")
      return Value::list(std::move(out));
  }
  if (self.isListOrTuple()) {
    if (name == "copy") {
      BoundArgs a(in, args, what, {});
      return self;
    }
    BoundArgs a(in, args, what, {"value"});
    const ValueList &items = self.items();
    if (name == "count")
      return Value::integer(std::count_if(
          items.begin(), items.end(), [&](const Value &v) { return pyEquals(v, a.required(0)); }));
    for (size_t i = 0; i < items.size(); ++i)
      if (pyEquals(items[i], a.required(0)))
        return Value::integer(static_cast<int64_t>(i));
    in.fail(pyRepr(a.required(0)) + " is not in " + self.typeName());
  }
  if (self.isLoop()) {
    LoopState &l = self.loopState();
    if (name == "cycle") {
      if (args.positional.empty())
        in.fail("no items for cycling given");
      return args.positional[static_cast<size_t>(l.index0) % args.positional.size()];
    }
    if (name == "changed") {
      Value current = Value::list(args.positional);
      if (l.lastChanged && pyEquals(*l.lastChanged, current))
        return Value::boolean(false);
      l.lastChanged = std::make_shared<Value>(current);
      return Value::boolean(true);
    }
  }
  in.fail("unsupported method '" + self.typeName() + "." + name + "'");
}

bool applyTest(Interpreter &in, const std::string &name, const Value &v, const CallArgs &args) {
  in.step();
  std::string what = "test '" + name + "'";
  auto arg = [&]() { return BoundArgs(in, args, what, {"other"}).required(0); };
  auto none = [&]() { BoundArgs(in, args, what, {}); };
  if (name == "defined" || name == "undefined") {
    none();
    return v.isUndefined() == (name == "undefined");
  }
  if (name == "none")
    return none(), v.isNone();
  if (name == "boolean")
    return none(), v.isBool();
  if (name == "true" || name == "false")
    return none(), v.isBool() && v.asBool() == (name == "true");
  if (name == "integer")
    return none(), v.isInt();
  if (name == "float")
    return none(), v.isFloat();
  if (name == "number")
    return none(), v.isNumber();
  if (name == "string")
    return none(), v.isString();
  if (name == "mapping")
    return none(), v.isDict();
  if (name == "sequence")
    return none(), v.isString() || v.isListOrTuple() || v.isDict() || v.isUndefined();
  if (name == "iterable")
    return none(), v.isString() || v.isListOrTuple() || v.isDict() || v.isUndefined() ||
                       v.isIterator() || v.isLoop();
  if (name == "callable")
    return none(), v.isCallable() || v.isUndefined() || v.isLoop();
  if (name == "lower" || name == "upper")
    return none(), casedAll(pyStr(v), name == "upper");
  if (name == "odd" || name == "even") {
    none();
    Value m = in.binary(BinaryOp::Mod, v, Value::integer(2));
    return pyEquals(m, Value::integer(name == "odd" ? 1 : 0));
  }
  if (name == "divisibleby")
    return pyEquals(in.binary(BinaryOp::Mod, v, BoundArgs(in, args, what, {"num"}).required(0)),
                    Value::integer(0));
  if (name == "filter" || name == "test") {
    BoundArgs a(in, args, what, {});
    if (!v.isString())
      return false;
    return (name == "filter" ? filterSupport(v.str()) : testSupport(v.str())) == Support::Supported;
  }
  if (name == "sameas") {
    const Value &other = arg();
    if (v.kind() != other.kind())
      return false;
    if (v.isNone() || v.isUndefined())
      return v.isNone();
    if (v.isBool())
      return v.asBool() == other.asBool();
    if (v.isInt())
      return v.asInt() == other.asInt() && v.asInt() >= -5 && v.asInt() <= 256;
    const void *id = v.identity();
    return id && id == other.identity();
  }
  if (name == "in")
    return in.contains(BoundArgs(in, args, what, {"seq"}).required(0), v);
  if (name == "==" || name == "eq" || name == "equalto")
    return pyEquals(v, arg());
  if (name == "!=" || name == "ne")
    return !pyEquals(v, arg());
  if (name == "<" || name == "lt" || name == "lessthan")
    return pyLess(in, v, arg());
  if (name == ">" || name == "gt" || name == "greaterthan")
    return pyLess(in, arg(), v);
  if (name == "<=" || name == "le") {
    const Value &o = arg();
    return pyEquals(v, o) || pyLess(in, v, o);
  }
  if (name == ">=" || name == "ge") {
    const Value &o = arg();
    return pyEquals(v, o) || pyLess(in, o, v);
  }
  in.fail("no test named '" + name + "'");
}

Value callGlobal(Interpreter &in, const std::string &name, const CallArgs &args) {
  in.step();
  if (name == "raise_exception") {
    BoundArgs a(in, args, "raise_exception()", {"message"});
    in.raise(pyStr(a.required(0)));
  }
  if (name == "strftime_now") {
    BoundArgs a(in, args, "strftime_now()", {"format"});
    if (!a.required(0).isString())
      in.fail("strftime() argument 1 must be str, not " + a.required(0).typeName());
    return Value::string(strftime(in, a.required(0).str(), in.now()));
  }
  if (name == "range") {
    if (!args.keyword.empty())
      in.fail("range() takes no keyword arguments");
    const ValueList &p = args.positional;
    if (p.empty() || p.size() > 3)
      in.fail("range expected 1 to 3 arguments, got " + std::to_string(p.size()));
    for (const Value &v : p)
      if (!v.isIntegral())
        in.fail("'" + v.typeName() + "' object cannot be interpreted as an integer");
    int64_t start = p.size() == 1 ? 0 : p[0].asInt();
    int64_t stop = p.size() == 1 ? p[0].asInt() : p[1].asInt();
    int64_t step = p.size() == 3 ? p[2].asInt() : 1;
    if (step == 0)
      in.fail("range() arg 3 must not be zero");
    // Count without overflow: long double holds int64 differences.
    long double span =
        step > 0 ? static_cast<long double>(stop) - start : static_cast<long double>(start) - stop;
    long double count = span <= 0 ? 0 : std::ceil(span / std::fabs(static_cast<long double>(step)));
    if (count > static_cast<long double>(in.limits().maxRange))
      in.fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (" +
              std::to_string(in.limits().maxRange) + ").");
    in.charge(static_cast<uint64_t>(count) / 8);
    ValueList out;
    for (int64_t i = 0; i < static_cast<int64_t>(count); ++i)
      out.push_back(Value::integer(start + i * step));
    return Value::list(std::move(out));
  }
  if (name == "dict" || name == "namespace") {
    auto d = std::make_shared<Dict>();
    if (args.positional.size() > 1)
      in.fail(name + "() takes at most 1 positional argument");
    if (!args.positional.empty()) {
      const Value &init = args.positional[0];
      if (init.isDict()) {
        for (const auto &[k, v] : init.dict().entries)
          d->set(k, v);
      } else {
        for (const Value &pair : in.iterate(init)) {
          ValueList kv = in.iterate(pair);
          if (kv.size() != 2)
            in.fail("dictionary update sequence element has length " + std::to_string(kv.size()) +
                    "; 2 is required");
          d->set(kv[0], kv[1]);
        }
      }
    }
    for (const auto &[key, value] : args.keyword)
      d->set(Value::string(key), value);
    if (name == "namespace") {
      for (const auto &[k, v] : d->entries)
        if (v.holdsReferences())
          in.fail("a namespace attribute cannot hold a namespace, loop, iterator or macro");
      return Value::namespaceObject(std::move(d));
    }
    return Value::dict(std::move(d));
  }
  in.fail("unsupported function '" + name + "'");
}

} // namespace volt::chat
