//===- Schema.cpp ---------------------------------------------------------===//
#include "compiler/spec/Schema.h"

#include "compiler/spec/YamlDocument.h"
#include "runtime/support/Strings.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace volt::spec {

namespace {

enum class IntegerText { Ok, NotAnInteger, Overflow };

IntegerText parseIntegerText(std::string_view text, int64_t &out) {
  std::string_view digits = text;
  if (!digits.empty() && digits.front() == '+')
    digits.remove_prefix(1);
  std::string_view unsignedPart = digits;
  if (!unsignedPart.empty() && unsignedPart.front() == '-')
    unsignedPart.remove_prefix(1);
  if (unsignedPart.empty() || !std::all_of(unsignedPart.begin(), unsignedPart.end(),
                                           [](char c) { return c >= '0' && c <= '9'; }))
    return IntegerText::NotAnInteger;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
  if (ec == std::errc::result_out_of_range)
    return IntegerText::Overflow;
  if (ec != std::errc() || end != digits.data() + digits.size())
    return IntegerText::NotAnInteger;
  return IntegerText::Ok;
}

bool parseNumberText(std::string_view text, double &out) {
  if (!text.empty() && text.front() == '+')
    text.remove_prefix(1);
  if (text.empty())
    return false;
  // from_chars accepts "inf" and "nan"; YAML spells those ".inf" and ".nan".
  // Neither is a meaningful setting, so only finite decimal forms pass.
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && std::isfinite(out);
}

std::string joinIntegers(const std::vector<int64_t> &values) {
  std::vector<std::string> parts;
  parts.reserve(values.size());
  for (int64_t v : values)
    parts.push_back(std::to_string(v));
  return joinList(parts);
}

/// "an integer from 1 to 8", "one of 1, 2, 4, 8", "a number greater than 0
/// and at most 1": what a message says was expected.
std::string expectation(const FieldSpec &spec) {
  switch (spec.kind) {
  case FieldKind::Integer:
    if (!spec.allowedInts.empty())
      return "one of " + joinIntegers(spec.allowedInts);
    if (spec.minInt && spec.maxInt)
      return "an integer from " + std::to_string(*spec.minInt) + " to " +
             std::to_string(*spec.maxInt);
    if (spec.minInt)
      return "an integer of at least " + std::to_string(*spec.minInt);
    if (spec.maxInt)
      return "an integer of at most " + std::to_string(*spec.maxInt);
    return "an integer";
  case FieldKind::Number: {
    std::string out = "a number";
    std::string sep = " ";
    if (spec.minNumber) {
      out += sep + (spec.minExclusive ? "greater than " : "of at least ") +
             formatNumber(*spec.minNumber);
      sep = " and ";
    }
    if (spec.maxNumber)
      out += sep + "at most " + formatNumber(*spec.maxNumber);
    return out;
  }
  case FieldKind::Boolean:
    return "true or false";
  case FieldKind::String:
    return spec.nonEmpty ? "a non-empty string" : "a string";
  case FieldKind::Choice:
    return "one of " + joinList(spec.choices);
  case FieldKind::Custom:
    return spec.typeName;
  }
  return "a value";
}

std::string invalidValue(const FieldSpec &spec) {
  return "invalid value for '" + spec.key + "': expected " + expectation(spec) + ", found ";
}

} // namespace

std::string formatNumber(double v) {
  char buf[64];
  if (std::fabs(v) < 1e15 && v == std::floor(v)) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, ec == std::errc() ? end : buf);
}

std::optional<int64_t> readInteger(const YAML::Node &value, const std::string &what,
                                   SourceLocation fallback, Diagnostics &diags) {
  SourceLocation where = locationOf(value, fallback);
  int64_t out = 0;
  IntegerText parsed =
      isPlainScalar(value) ? parseIntegerText(value.Scalar(), out) : IntegerText::NotAnInteger;
  if (parsed == IntegerText::Ok)
    return out;
  if (parsed == IntegerText::Overflow)
    diags.error(where, "invalid value for " + what + ": " + value.Scalar() +
                           " does not fit in a 64-bit integer");
  else
    diags.error(where, "invalid value for " + what + ": expected an integer, found " +
                           describeNode(value));
  return std::nullopt;
}

std::optional<double> readNumber(const YAML::Node &value, const std::string &what,
                                 SourceLocation fallback, Diagnostics &diags) {
  double out = 0;
  if (isPlainScalar(value) && parseNumberText(value.Scalar(), out))
    return out;
  diags.error(locationOf(value, fallback),
              "invalid value for " + what + ": expected a number, found " + describeNode(value));
  return std::nullopt;
}

std::optional<FieldValue> readLeaf(const FieldSpec &spec, const YAML::Node &value,
                                   SourceLocation keyLocation, Diagnostics &diags) {
  SourceLocation where = locationOf(value, keyLocation);
  if (!value.IsDefined() || value.IsNull()) {
    if (spec.nullable)
      return FieldValue{};
    diags.error(where, invalidValue(spec) + "an empty value");
    return std::nullopt;
  }
  switch (spec.kind) {
  case FieldKind::Integer: {
    int64_t v = 0;
    IntegerText parsed =
        isPlainScalar(value) ? parseIntegerText(value.Scalar(), v) : IntegerText::NotAnInteger;
    if (parsed == IntegerText::Overflow) {
      diags.error(where,
                  invalidValue(spec) + value.Scalar() + ", which does not fit in a 64-bit integer");
      return std::nullopt;
    }
    if (parsed == IntegerText::NotAnInteger) {
      diags.error(where, invalidValue(spec) + describeNode(value));
      return std::nullopt;
    }
    bool ok = spec.allowedInts.empty()
                  ? (!spec.minInt || v >= *spec.minInt) && (!spec.maxInt || v <= *spec.maxInt)
                  : std::find(spec.allowedInts.begin(), spec.allowedInts.end(), v) !=
                        spec.allowedInts.end();
    if (!ok) {
      diags.error(where, invalidValue(spec) + std::to_string(v));
      return std::nullopt;
    }
    return FieldValue{v};
  }
  case FieldKind::Number: {
    double v = 0;
    if (!isPlainScalar(value) || !parseNumberText(value.Scalar(), v)) {
      diags.error(where, invalidValue(spec) + describeNode(value));
      return std::nullopt;
    }
    bool ok = true;
    if (spec.minNumber)
      ok = spec.minExclusive ? v > *spec.minNumber : v >= *spec.minNumber;
    if (spec.maxNumber)
      ok = ok && v <= *spec.maxNumber;
    if (!ok) {
      diags.error(where, invalidValue(spec) + value.Scalar());
      return std::nullopt;
    }
    return FieldValue{v};
  }
  case FieldKind::Boolean: {
    if (isPlainScalar(value)) {
      const std::string &s = value.Scalar();
      if (s == "true" || s == "True" || s == "TRUE")
        return FieldValue{true};
      if (s == "false" || s == "False" || s == "FALSE")
        return FieldValue{false};
    }
    diags.error(where, invalidValue(spec) + describeNode(value));
    return std::nullopt;
  }
  case FieldKind::String:
  case FieldKind::Choice: {
    if (!value.IsScalar()) {
      diags.error(where, invalidValue(spec) + describeNode(value));
      return std::nullopt;
    }
    const std::string &s = value.Scalar();
    if (spec.kind == FieldKind::String) {
      if (spec.nonEmpty && s.empty()) {
        diags.error(where, invalidValue(spec) + "an empty string");
        return std::nullopt;
      }
      return FieldValue{s};
    }
    if (std::find(spec.choices.begin(), spec.choices.end(), s) == spec.choices.end()) {
      std::string message = invalidValue(spec) + describeNode(value);
      if (auto near = closestMatch(s, spec.choices))
        message += "; did you mean '" + *near + "'?";
      diags.error(where, message);
      return std::nullopt;
    }
    return FieldValue{s};
  }
  case FieldKind::Custom:
    break;
  }
  return std::nullopt;
}

namespace {

class MappingWalker {
public:
  MappingWalker(const std::vector<const FieldSpec *> &fields, Diagnostics &diags,
                const std::function<void(size_t, const YAML::Node &, SourceLocation)> &onLeaf)
      : fields_(fields), diags_(diags), onLeaf_(onLeaf) {}

  void walk(const YAML::Node &mapping, const std::string &prefix, SourceLocation where) {
    sectionLocations_[prefix] = where;
    std::map<std::string, SourceLocation> local;
    for (const auto &entry : mapping) {
      // Copies: yaml-cpp nodes are handles, and its iterators hand out
      // temporaries that a reference would outlive.
      YAML::Node keyNode = entry.first;
      YAML::Node value = entry.second;
      SourceLocation keyLoc = locationOf(keyNode, where);
      if (!keyNode.IsScalar()) {
        diags_.error(keyLoc, "expected a key name, found " + describeNode(keyNode));
        continue;
      }
      const std::string &name = keyNode.Scalar();
      std::string full = prefix;
      if (!full.empty())
        full += '.';
      full += name;
      if (auto [first, inserted] = local.emplace(name, keyLoc); !inserted) {
        diags_.error(keyLoc, "duplicate key '" + full + "' (first given at line " +
                                 std::to_string(first->second.line) + ", column " +
                                 std::to_string(first->second.column) + ")");
        continue;
      }
      if (name.find('.') == std::string::npos) {
        if (auto index = fieldIndex(full)) {
          seen_.keys[full] = keyLoc;
          seen_.values[full] = locationOf(value, keyLoc);
          onLeaf_(*index, value, keyLoc);
          continue;
        }
        if (auto children = childKeys(full); !children.empty()) {
          seen_.keys[full] = keyLoc;
          seen_.values[full] = locationOf(value, keyLoc);
          if (value.IsMap())
            walk(value, full, locationOf(value, keyLoc));
          else
            diags_.error(locationOf(value, keyLoc),
                         "invalid value for '" + full + "': expected a mapping with keys " +
                             joinList(children) + ", found " + describeNode(value));
          continue;
        }
      }
      unknownKey(name, prefix, keyLoc);
    }
  }

  void reportMissing(SourceLocation rootLocation) {
    for (const FieldSpec *f : fields_) {
      if (!f->required || seen_.has(f->key))
        continue;
      std::string section =
          f->key.substr(0, f->key.rfind('.') == std::string::npos ? 0 : f->key.rfind('.'));
      auto at = sectionLocations_.find(section);
      diags_.error(at == sectionLocations_.end() ? rootLocation : at->second,
                   "missing required key '" + f->key + "' (" + f->doc + ")");
    }
  }

  KeyPlaces seen() && { return std::move(seen_); }

private:
  std::optional<size_t> fieldIndex(const std::string &key) const {
    for (size_t i = 0; i < fields_.size(); ++i)
      if (fields_[i]->key == key)
        return i;
    return std::nullopt;
  }

  /// The key names valid directly inside section `prefix` ("" = top level).
  std::vector<std::string> childKeys(const std::string &prefix) const {
    std::vector<std::string> out;
    std::string lead = prefix.empty() ? "" : prefix + ".";
    for (const FieldSpec *f : fields_) {
      if (f->key.compare(0, lead.size(), lead) != 0 || f->key.size() == lead.size())
        continue;
      std::string rest = f->key.substr(lead.size());
      std::string child = rest.substr(0, rest.find('.'));
      if (std::find(out.begin(), out.end(), child) == out.end())
        out.push_back(child);
    }
    return out;
  }

  void unknownKey(const std::string &name, const std::string &prefix, SourceLocation where) {
    std::vector<std::string> valid = childKeys(prefix);
    std::string in = prefix.empty() ? "" : " in '" + prefix + "'";
    std::string message = "unknown key " + quoteForMessage(name) + in;
    if (auto near = closestMatch(name, valid))
      message += "; did you mean '" + *near + "'?";
    else
      message += ";";
    message += " valid keys" + in + ": " + joinList(valid);
    diags_.error(where, message);
  }

  const std::vector<const FieldSpec *> &fields_;
  Diagnostics &diags_;
  const std::function<void(size_t, const YAML::Node &, SourceLocation)> &onLeaf_;
  KeyPlaces seen_;
  std::map<std::string, SourceLocation> sectionLocations_;
};

std::string typeColumn(const FieldSpec &spec) {
  if (!spec.typeName.empty())
    return spec.typeName;
  switch (spec.kind) {
  case FieldKind::Integer:
    return "integer";
  case FieldKind::Number:
    return "number";
  case FieldKind::Boolean:
    return "boolean";
  case FieldKind::String:
  case FieldKind::Choice:
    return "string";
  case FieldKind::Custom:
    break;
  }
  return "value";
}

std::string validColumn(const FieldSpec &spec) {
  if (!spec.validText.empty())
    return spec.validText;
  switch (spec.kind) {
  case FieldKind::Integer:
    if (!spec.allowedInts.empty())
      return joinIntegers(spec.allowedInts);
    if (spec.minInt && spec.maxInt)
      return std::to_string(*spec.minInt) + " to " + std::to_string(*spec.maxInt);
    if (spec.minInt)
      return ">= " + std::to_string(*spec.minInt);
    if (spec.maxInt)
      return "<= " + std::to_string(*spec.maxInt);
    return "any integer";
  case FieldKind::Number: {
    std::vector<std::string> parts;
    if (spec.minNumber)
      parts.push_back((spec.minExclusive ? "> " : ">= ") + formatNumber(*spec.minNumber));
    if (spec.maxNumber)
      parts.push_back("<= " + formatNumber(*spec.maxNumber));
    return parts.empty() ? "any finite number" : joinList(parts, " and ");
  }
  case FieldKind::Boolean:
    return "true, false";
  case FieldKind::String:
    return spec.nonEmpty ? "non-empty" : "any";
  case FieldKind::Choice: {
    std::vector<std::string> quoted;
    for (const std::string &c : spec.choices)
      quoted.push_back("`" + c + "`");
    return joinList(quoted);
  }
  case FieldKind::Custom:
    break;
  }
  return "";
}

std::string defaultColumn(const FieldSpec &spec) {
  if (!spec.defaultText.empty())
    return spec.defaultText;
  if (spec.required)
    return "required";
  struct Printer {
    std::string operator()(std::monostate) const { return "unset"; }
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return formatNumber(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string &v) const { return "`" + v + "`"; }
  };
  return std::visit(Printer{}, spec.defaultValue);
}

std::string escapeCell(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += '\\';
    out += c;
  }
  return out;
}

} // namespace

KeyPlaces
walkMapping(const YAML::Node &root, const std::vector<const FieldSpec *> &fields,
            std::string_view documentKind, Diagnostics &diags,
            const std::function<void(size_t, const YAML::Node &, SourceLocation)> &onLeaf) {
  SourceLocation rootLocation = locationOf(root, {1, 1});
  if (!root.IsMap()) {
    diags.error(rootLocation, "expected a mapping of keys to values (" + std::string(documentKind) +
                                  "), found " + describeNode(root));
    return {};
  }
  MappingWalker walker(fields, diags, onLeaf);
  walker.walk(root, "", rootLocation);
  walker.reportMissing(rootLocation);
  return std::move(walker).seen();
}

std::string referenceTable(const std::vector<const FieldSpec *> &fields) {
  std::string out = "| key | type | valid values | default | description |\n"
                    "|---|---|---|---|---|\n";
  for (const FieldSpec *f : fields)
    out += "| `" + f->key + "` | " + escapeCell(typeColumn(*f)) + " | " +
           escapeCell(validColumn(*f)) + " | " + escapeCell(defaultColumn(*f)) + " | " +
           escapeCell(f->doc) + " |\n";
  return out;
}

} // namespace volt::spec
