//===- Schema.h - table-driven reading of YAML mappings --------*- C++ -*-===//
//
// The deployment spec and the SKU files are each described by one table of
// fields (key, type, valid values, default, one-line doc). The same table
// drives validation and the printed reference, so the documentation cannot
// disagree with what the parser accepts.
//
// Nested mappings are written as dotted keys ("kv_cache.block_size"); the
// reader works out the sections from them.
//
// Private to compiler/spec.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/spec/Diagnostics.h"

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace volt::spec {

enum class FieldKind { Integer, Number, Boolean, String, Choice, Custom };

/// A value read from a leaf; monostate for "no value".
using FieldValue = std::variant<std::monostate, int64_t, double, bool, std::string>;

/// What a field accepts and how it is documented; independent of the struct
/// it fills.
struct FieldSpec {
  std::string key; ///< dotted path, e.g. "kv_cache.block_size"
  FieldKind kind = FieldKind::String;
  bool required = false;
  /// An empty value (or leaving the key out) means "unset": the struct keeps
  /// its std::nullopt.
  bool nullable = false;
  FieldValue defaultValue;
  std::optional<int64_t> minInt, maxInt;
  std::vector<int64_t> allowedInts; ///< when non-empty, the only valid integers
  std::optional<double> minNumber, maxNumber;
  bool minExclusive = false;
  std::vector<std::string> choices; ///< for Choice
  bool nonEmpty = false;            ///< for String
  std::string typeName;             ///< overrides the type column ("path")
  std::string validText;            ///< overrides the valid-values column
  std::string defaultText;          ///< overrides the default column
  std::string doc;
};

/// Passed to a custom field's reader.
struct FieldContext {
  const FieldSpec &spec;
  SourceLocation keyLocation;
  Diagnostics &diags;
};

/// A field and how it lands in a `T`. The chained setters read as the
/// field's description: `integerField(...).atLeast(1).byDefault(256)`.
template <typename T> struct Field : FieldSpec {
  std::function<void(T &, const FieldValue &)> assign;
  std::function<void(const YAML::Node &, T &, FieldContext &)> readCustom;

  Field &&require() && {
    required = true;
    return std::move(*this);
  }
  Field &&orUnset() && {
    nullable = true;
    return std::move(*this);
  }
  Field &&byDefault(const FieldValue &v) && {
    defaultValue = v;
    return std::move(*this);
  }
  Field &&atLeast(int64_t v) && {
    minInt = v;
    return std::move(*this);
  }
  Field &&atMost(int64_t v) && {
    maxInt = v;
    return std::move(*this);
  }
  Field &&oneOf(const std::vector<int64_t> &v) && {
    allowedInts = v;
    return std::move(*this);
  }
  Field &&above(double v) && {
    minNumber = v;
    minExclusive = true;
    return std::move(*this);
  }
  Field &&atMostNumber(double v) && {
    maxNumber = v;
    return std::move(*this);
  }
  Field &&notEmpty() && {
    nonEmpty = true;
    return std::move(*this);
  }
  Field &&typed(const std::string &t) && {
    typeName = t;
    return std::move(*this);
  }
  Field &&validAs(const std::string &t) && {
    validText = t;
    return std::move(*this);
  }
  Field &&defaultAs(const std::string &t) && {
    defaultText = t;
    return std::move(*this);
  }
};

template <typename T>
Field<T> makeField(const std::string &key, FieldKind kind, const std::string &doc) {
  Field<T> f;
  f.key = key;
  f.kind = kind;
  f.doc = doc;
  return f;
}

template <typename T>
Field<T> integerField(const std::string &key, const std::string &doc,
                      std::function<void(T &, int64_t)> set) {
  Field<T> f = makeField<T>(key, FieldKind::Integer, doc);
  f.assign = [set = std::move(set)](T &t, const FieldValue &v) { set(t, std::get<int64_t>(v)); };
  return f;
}

template <typename T>
Field<T> numberField(const std::string &key, const std::string &doc,
                     std::function<void(T &, double)> set) {
  Field<T> f = makeField<T>(key, FieldKind::Number, doc);
  f.assign = [set = std::move(set)](T &t, const FieldValue &v) { set(t, std::get<double>(v)); };
  return f;
}

template <typename T>
Field<T> booleanField(const std::string &key, const std::string &doc,
                      std::function<void(T &, bool)> set) {
  Field<T> f = makeField<T>(key, FieldKind::Boolean, doc);
  f.assign = [set = std::move(set)](T &t, const FieldValue &v) { set(t, std::get<bool>(v)); };
  return f;
}

template <typename T>
Field<T> stringField(const std::string &key, const std::string &doc,
                     std::function<void(T &, const std::string &)> set) {
  Field<T> f = makeField<T>(key, FieldKind::String, doc);
  f.assign = [set = std::move(set)](T &t, const FieldValue &v) {
    set(t, std::get<std::string>(v));
  };
  return f;
}

template <typename T>
Field<T> choiceField(const std::string &key, const std::string &doc,
                     const std::vector<std::string> &choices,
                     std::function<void(T &, const std::string &)> set) {
  Field<T> f = stringField<T>(key, doc, std::move(set));
  f.kind = FieldKind::Choice;
  f.choices = choices;
  return f;
}

/// A field with its own reader (lists, maps); `typeName` and `validText`
/// describe it in the reference.
template <typename T>
Field<T> customField(const std::string &key, const std::string &doc, const std::string &typeName,
                     std::function<void(const YAML::Node &, T &, FieldContext &)> read) {
  Field<T> f = makeField<T>(key, FieldKind::Custom, doc);
  f.typeName = typeName;
  f.readCustom = std::move(read);
  return f;
}

/// Where the keys of a document were written, and where their values start.
struct KeyPlaces {
  std::map<std::string, SourceLocation> keys;
  std::map<std::string, SourceLocation> values;

  bool has(const std::string &key) const { return keys.count(key) != 0; }
  /// The place of `key`'s value (of the key itself for an empty value);
  /// 1:1 when the key was not written.
  SourceLocation value(const std::string &key) const {
    auto it = values.find(key);
    return it == values.end() ? SourceLocation{1, 1} : it->second;
  }
};

/// Reads a leaf of a non-custom kind and checks its range. Records an error
/// and returns nothing when the value is not valid.
std::optional<FieldValue> readLeaf(const FieldSpec &spec, const YAML::Node &value,
                                   SourceLocation keyLocation, Diagnostics &diags);

/// Reads a plain integer scalar without range checks; `what` names the value
/// in messages ("'bytes' of interconnect.all_reduce_latency_us[2]").
std::optional<int64_t> readInteger(const YAML::Node &value, const std::string &what,
                                   SourceLocation fallback, Diagnostics &diags);
/// Reads a plain finite number scalar (an integer is also a number).
std::optional<double> readNumber(const YAML::Node &value, const std::string &what,
                                 SourceLocation fallback, Diagnostics &diags);

/// Walks `root` against the fields: unknown, duplicate and non-scalar keys,
/// sections that are not mappings and missing required keys are reported;
/// each leaf present is handed to `onLeaf(fieldIndex, valueNode, keyLocation)`.
/// Returns where each key seen was written.
KeyPlaces
walkMapping(const YAML::Node &root, const std::vector<const FieldSpec *> &fields,
            std::string_view documentKind, Diagnostics &diags,
            const std::function<void(size_t, const YAML::Node &, SourceLocation)> &onLeaf);

/// The Markdown reference table of `fields`: key, type, valid values,
/// default, description.
std::string referenceTable(const std::vector<const FieldSpec *> &fields);

/// A number as the reference prints it (shortest form that reads back).
std::string formatNumber(double v);

/// Reads `root` into `out` with `fields`; defaults fill keys left out.
/// Returns where each key seen was written (for cross-field errors).
template <typename T>
KeyPlaces readMapping(const YAML::Node &root, const std::vector<Field<T>> &fields,
                      std::string_view documentKind, T &out, Diagnostics &diags) {
  std::vector<const FieldSpec *> specs;
  specs.reserve(fields.size());
  for (const Field<T> &f : fields)
    specs.push_back(&f);
  auto seen = walkMapping(root, specs, documentKind, diags,
                          [&](size_t index, const YAML::Node &value, SourceLocation keyLoc) {
                            const Field<T> &f = fields[index];
                            if (f.kind == FieldKind::Custom) {
                              FieldContext ctx{f, keyLoc, diags};
                              f.readCustom(value, out, ctx);
                              return;
                            }
                            if (auto v = readLeaf(f, value, keyLoc, diags);
                                v && !std::holds_alternative<std::monostate>(*v))
                              f.assign(out, *v);
                          });
  for (const Field<T> &f : fields)
    if (!seen.has(f.key) && !std::holds_alternative<std::monostate>(f.defaultValue) && f.assign)
      f.assign(out, f.defaultValue);
  return seen;
}

} // namespace volt::spec
