//===- Json.cpp - values to JSON text the way Python's json.dumps writes --===//
//
// Hugging Face replaces jinja2's `tojson` with
// `json.dumps(x, ensure_ascii=False, indent=indent, separators=separators,
// sort_keys=sort_keys)`. Its output is part of the prompt (tool schemas,
// tool-call arguments), so it must match byte for byte: ", " and ": "
// separators without indent, "," and ": " with it, keys in insertion order,
// Python's float repr, non-ASCII text unescaped.
//
//===----------------------------------------------------------------------===//
#include "runtime/chat/BuiltinArgs.h"
#include "runtime/chat/Text.h"

#include <algorithm>
#include <cmath>

namespace volt::chat {

namespace {

struct JsonWriter {
  Interpreter &in;
  bool ensureAscii;
  std::optional<std::string> indent;
  std::string itemSeparator;
  std::string keySeparator;
  bool sortKeys;
  std::string out;

  void newline(int level) {
    out += '\n';
    for (int i = 0; i < level; ++i)
      out += *indent;
  }

  std::string keyText(const Value &k) {
    switch (k.kind()) {
    case Value::Kind::String:
      return k.str();
    case Value::Kind::Bool:
      return k.asBool() ? "true" : "false";
    case Value::Kind::None:
      return "null";
    case Value::Kind::Int:
      return std::to_string(k.asInt());
    case Value::Kind::Float:
      return floatText(k.asDouble());
    default:
      in.fail("keys must be str, int, float, bool or None, not " + k.typeName());
    }
  }

  static std::string floatText(double d) {
    if (std::isnan(d))
      return "NaN";
    if (std::isinf(d))
      return d > 0 ? "Infinity" : "-Infinity";
    return formatFloat(d);
  }

  void write(const Value &v, int level) {
    in.step();
    switch (v.kind()) {
    case Value::Kind::None:
      out += "null";
      break;
    case Value::Kind::Bool:
      out += v.asBool() ? "true" : "false";
      break;
    case Value::Kind::Int:
      out += std::to_string(v.asInt());
      break;
    case Value::Kind::Float:
      out += floatText(v.asDouble());
      break;
    case Value::Kind::String:
      appendJsonString(out, v.str(), ensureAscii);
      break;
    case Value::Kind::List:
    case Value::Kind::Tuple: {
      const ValueList &items = v.items();
      if (items.empty()) {
        out += "[]";
        break;
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i)
          out += itemSeparator;
        if (indent)
          newline(level + 1);
        write(items[i], level + 1);
      }
      if (indent)
        newline(level);
      out += ']';
      break;
    }
    case Value::Kind::Dict: {
      std::vector<const std::pair<Value, Value> *> entries;
      for (const auto &e : v.dict().entries)
        entries.push_back(&e);
      if (entries.empty()) {
        out += "{}";
        break;
      }
      if (sortKeys) {
        for (const auto *e : entries)
          if (!e->first.isString())
            in.fail("sort_keys needs keys of one type: '<' not supported between a str and " +
                    e->first.typeName());
        std::stable_sort(entries.begin(), entries.end(), [](const auto *a, const auto *b) {
          return a->first.str() < b->first.str();
        });
      }
      out += '{';
      bool first = true;
      for (const auto *e : entries) {
        if (!first)
          out += itemSeparator;
        first = false;
        if (indent)
          newline(level + 1);
        appendJsonString(out, keyText(e->first), ensureAscii);
        out += keySeparator;
        write(e->second, level + 1);
      }
      if (indent)
        newline(level);
      out += '}';
      break;
    }
    default:
      in.fail("Object of type " + v.typeName() + " is not JSON serializable");
    }
    in.checkSize(out.size());
  }
};

} // namespace

std::string toJson(Interpreter &in, const Value &v, bool ensureAscii, const Value &indent,
                   const Value &separators, bool sortKeys) {
  JsonWriter w{in, ensureAscii, std::nullopt, ", ", ": ", sortKeys, {}};
  if (!indent.isNone()) {
    if (indent.isString())
      w.indent = indent.str();
    else if (indent.isIntegral())
      w.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(indent.asInt(), 0, 64)), ' ');
    else
      in.fail("tojson: indent must be an integer or a string, not " + indent.typeName());
    w.itemSeparator = ",";
  }
  if (!separators.isNone()) {
    ValueList parts = separators.isListOrTuple() ? separators.items() : ValueList{};
    if (parts.size() != 2 || !parts[0].isString() || !parts[1].isString())
      in.fail("tojson: separators must be a pair of strings");
    w.itemSeparator = parts[0].str();
    w.keySeparator = parts[1].str();
  }
  w.write(v, 0);
  return std::move(w.out);
}

} // namespace volt::chat
