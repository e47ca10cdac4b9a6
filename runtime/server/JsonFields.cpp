//===- JsonFields.cpp -----------------------------------------------------===//
#include "runtime/server/JsonFields.h"

#include "runtime/support/Strings.h"

#include <cmath>
#include <sstream>

namespace volt::server {

std::string describeJsonType(const Json &value) {
  switch (value.type()) {
  case Json::value_t::null:
    return "null";
  case Json::value_t::boolean:
    return "a boolean";
  case Json::value_t::string:
    return "a string";
  case Json::value_t::number_integer:
  case Json::value_t::number_unsigned:
    return "an integer";
  case Json::value_t::number_float:
    return "a number";
  case Json::value_t::array:
    return "an array";
  case Json::value_t::object:
    return "an object";
  default:
    return "an unknown value";
  }
}

ApiResult<Json> parseJsonObject(std::string_view body) {
  Json value;
  try {
    value = Json::parse(body.begin(), body.end());
  } catch (const Json::parse_error &e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, ...".
    std::string what = e.what();
    size_t start = what.find("] ");
    return badRequest("", "the body is not valid JSON: " +
                              (start == std::string::npos ? what : what.substr(start + 2)));
  } catch (const std::exception &e) {
    return badRequest("", std::string("the body is not valid JSON: ") + e.what());
  }
  if (!value.is_object())
    return badRequest("", "the body must be a JSON object, found " + describeJsonType(value));
  return value;
}

UnknownFieldPolicy &unknownFieldPolicy() {
  thread_local UnknownFieldPolicy policy;
  return policy;
}

MaybeError JsonFields::rejectUnknown(std::initializer_list<std::string_view> known) const {
  UnknownFieldPolicy &policy = unknownFieldPolicy();
  for (auto it = obj_.begin(); it != obj_.end(); ++it) {
    bool found = false;
    for (std::string_view k : known)
      if (k == it.key()) {
        found = true;
        break;
      }
    if (found)
      continue;
    const std::string name = clipForMessage(path(it.key()), 64);
    if (!policy.strict) {
      // At most 16 names noted: a request of a million unknown keys costs
      // one pass over them.
      if (policy.ignored.size() < 16)
        policy.ignored.push_back(name);
      continue;
    }
    std::vector<std::string> names(known.begin(), known.end());
    std::string message = "unrecognized request argument supplied: " + name;
    if (auto near = closestMatch(it.key(), names))
      message += " (did you mean " + path(*near) + "?)";
    return badRequest(name, message);
  }
  return std::nullopt;
}

const Json *JsonFields::get(std::string_view key) const {
  auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null())
    return nullptr;
  return &*it;
}

MaybeError JsonFields::typeError(std::string_view key, std::string_view expected,
                                 const Json &found) const {
  return badRequest(path(key), path(key) + ": expected " + std::string(expected) + ", found " +
                                   describeJsonType(found));
}

MaybeError JsonFields::boolean(std::string_view key, bool &out) const {
  const Json *v = get(key);
  if (!v)
    return std::nullopt;
  if (!v->is_boolean())
    return typeError(key, "a boolean", *v);
  out = v->get<bool>();
  return std::nullopt;
}

MaybeError JsonFields::string(std::string_view key, std::string &out) const {
  std::optional<std::string> s;
  VOLT_API_TRY(string(key, s));
  if (s)
    out = std::move(*s);
  return std::nullopt;
}

MaybeError JsonFields::string(std::string_view key, std::optional<std::string> &out) const {
  const Json *v = get(key);
  if (!v)
    return std::nullopt;
  if (!v->is_string())
    return typeError(key, "a string", *v);
  out = v->get<std::string>();
  return std::nullopt;
}

MaybeError readInteger(const Json &v, const std::string &where, int64_t lo, int64_t hi,
                       int64_t &out) {
  auto range = [&](const std::string &found) -> MaybeError {
    return badRequest(where, where + ": expected an integer in [" + std::to_string(lo) + ", " +
                                 std::to_string(hi) + "], found " + found);
  };
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > uint64_t(hi))
      return range(std::to_string(u));
    out = int64_t(u);
  } else if (v.is_number_integer()) {
    out = v.get<int64_t>();
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d))
      return badRequest(where, where + ": expected an integer, found " + v.dump());
    if (d < double(lo) || d > double(hi))
      return range(v.dump());
    out = int64_t(d);
  } else {
    return badRequest(where, where + ": expected an integer, found " + describeJsonType(v));
  }
  if (out < lo || out > hi)
    return range(std::to_string(out));
  return std::nullopt;
}

MaybeError JsonFields::integer(std::string_view key, int64_t lo, int64_t hi, int64_t &out) const {
  std::optional<int64_t> v;
  VOLT_API_TRY(integer(key, lo, hi, v));
  if (v)
    out = *v;
  return std::nullopt;
}

MaybeError JsonFields::integer(std::string_view key, int64_t lo, int64_t hi,
                               std::optional<int64_t> &out) const {
  const Json *v = get(key);
  if (!v)
    return std::nullopt;
  int64_t value = 0;
  VOLT_API_TRY(readInteger(*v, path(key), lo, hi, value));
  out = value;
  return std::nullopt;
}

MaybeError JsonFields::number(std::string_view key, double &out) const {
  const Json *v = get(key);
  if (!v)
    return std::nullopt;
  if (!v->is_number())
    return typeError(key, "a number", *v);
  double d = v->get<double>();
  if (!std::isfinite(d))
    return badRequest(path(key), path(key) + ": expected a finite number, found " + v->dump());
  out = d;
  return std::nullopt;
}

MaybeError JsonFields::unsupported(std::string_view key, const Json &neutral,
                                   std::string_view why) const {
  const Json *v = get(key);
  if (!v || *v == neutral)
    return std::nullopt;
  return badRequest(path(key), path(key) + ": not supported (" + std::string(why) + ")");
}

} // namespace volt::server
