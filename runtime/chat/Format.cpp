//===- Format.cpp - Python's printf-style `%` string formatting -----------===//
//
// `"%s: %d" % (name, n)` and the `format` filter. Conversions d i u f F e E
// g G x X o c s r a and %%, with flags, width, precision and `%(key)s`
// lookups, formatted like CPython (which defers to C's printf for numbers).
//
//===----------------------------------------------------------------------===//
#include "runtime/chat/BuiltinArgs.h"
#include "runtime/chat/Text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace volt::chat {

namespace {

std::string pad(const std::string &s, int64_t width, bool left) {
  int64_t len = static_cast<int64_t>(codepointCount(s));
  if (width <= len)
    return s;
  std::string fill(static_cast<size_t>(width - len), ' ');
  return left ? s + fill : fill + s;
}

std::string cFormat(const std::string &spec, double v) {
  char buf[512];
  std::snprintf(buf, sizeof buf, spec.c_str(), v);
  return buf;
}

std::string cFormat(const std::string &spec, long long v) {
  char buf[512];
  std::snprintf(buf, sizeof buf, spec.c_str(), v);
  return buf;
}

} // namespace

std::string printfFormat(Interpreter &in, const std::string &fmt, const Value &args) {
  ValueList positional;
  const Value *mapping = nullptr;
  if (args.isTuple())
    positional = args.items();
  else
    positional.push_back(args);
  // Python treats anything with __getitem__ that is not a tuple or string
  // as a mapping (a dict, a list, jinja2's Undefined): unused, it is no error.
  if (args.isDict() || args.isList() || args.isUndefined())
    mapping = &args;
  size_t next = 0;
  bool usedMapping = false;
  auto take = [&]() -> Value {
    if (next >= positional.size())
      in.fail("not enough arguments for format string");
    return positional[next++];
  };
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size())
      in.fail("incomplete format");
    Value value;
    bool haveValue = false;
    if (fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string::npos)
        in.fail("incomplete format key");
      if (!mapping)
        in.fail("format requires a mapping");
      if (mapping->isUndefined())
        in.failUndefined(*mapping);
      if (!mapping->isDict())
        in.fail("list indices must be integers or slices, not str");
      const Value *v = mapping->dict().find(std::string_view(fmt).substr(i + 1, close - i - 1));
      if (!v)
        in.fail("'" + fmt.substr(i + 1, close - i - 1) + "'");
      value = *v;
      haveValue = usedMapping = true;
      i = close + 1;
    }
    std::string flags;
    while (i < fmt.size() && std::string_view("-+ 0#").find(fmt[i]) != std::string_view::npos)
      flags += fmt[i++];
    int64_t width = 0, precision = -1;
    auto number = [&](int64_t &target) {
      if (i < fmt.size() && fmt[i] == '*') {
        Value w = take();
        if (!w.isIntegral())
          in.fail("* wants int");
        target = std::clamp<int64_t>(w.asInt(), -4096, 4096);
        ++i;
        return;
      }
      if (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) {
        target = 0;
        while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i])))
          target = std::min<int64_t>(target * 10 + (fmt[i++] - '0'), 4096);
      }
    };
    number(width);
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      precision = 0;
      number(precision);
    }
    while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L'))
      ++i;
    if (i >= fmt.size())
      in.fail("incomplete format");
    char conv = fmt[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (!haveValue)
      value = take();
    bool left = flags.find('-') != std::string::npos;
    if (width < 0) {
      left = true;
      width = -width;
    }
    std::string spec = "%" + flags + (width > 0 ? std::to_string(width) : "") +
                       (precision >= 0 ? "." + std::to_string(precision) : "");
    switch (conv) {
    case 's':
    case 'r':
    case 'a': {
      std::string s = conv == 's' ? pyStr(value) : pyRepr(value);
      if (precision >= 0) {
        std::u32string cps = decodeUtf8(s);
        if (static_cast<int64_t>(cps.size()) > precision)
          s = encodeUtf8(std::u32string_view(cps).substr(0, static_cast<size_t>(precision)));
      }
      out += pad(s, width, left);
      break;
    }
    case 'd':
    case 'i':
    case 'u':
    case 'x':
    case 'X':
    case 'o': {
      if (!value.isNumber())
        in.fail(std::string("%") + conv + " format: a " +
                (conv == 'd' || conv == 'i' || conv == 'u' ? "real number" : "integer") +
                " is required, not " + value.typeName());
      if (value.isFloat() && conv != 'd' && conv != 'i' && conv != 'u')
        in.fail(std::string("%") + conv + " format: an integer is required, not float");
      double d = value.asDouble();
      if (value.isFloat() && (!std::isfinite(d) || std::fabs(d) > 9.2e18))
        in.fail("cannot convert float to integer");
      long long v = value.isFloat() ? static_cast<long long>(d) : value.asInt();
      if (conv == 'o' && flags.find('#') != std::string::npos) {
        // Python writes 0o, not C's leading 0.
        unsigned long long magnitude =
            v < 0 ? 0ULL - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v);
        char digitsBuf[32];
        std::snprintf(digitsBuf, sizeof digitsBuf, "%llo", magnitude);
        std::string digits = digitsBuf;
        std::string text = v < 0 ? "-" : flags.find('+') != std::string::npos ? "+" : "";
        text += "0o";
        text += digits;
        out += pad(text, width, left);
        break;
      }
      out += cFormat(spec + "ll" + (conv == 'u' || conv == 'i' ? 'd' : conv), v);
      break;
    }
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G':
      if (!value.isNumber())
        in.fail(std::string("must be real number, not ") + value.typeName());
      out += cFormat(spec + conv, value.asDouble());
      break;
    case 'c': {
      std::string s;
      if (value.isIntegral() && value.asInt() >= 0 && value.asInt() <= 0x10FFFF)
        appendUtf8(s, static_cast<char32_t>(value.asInt()));
      else if (value.isString() && codepointCount(value.str()) == 1)
        s = value.str();
      else
        in.fail("%c requires an int or a unicode character");
      out += pad(s, width, left);
      break;
    }
    default:
      in.fail(std::string("unsupported format character '") + conv + "'");
    }
    in.checkSize(out.size());
  }
  if (!usedMapping && !mapping && next < positional.size())
    in.fail("not all arguments converted during string formatting");
  return out;
}

} // namespace volt::chat
