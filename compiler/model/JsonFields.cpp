//===- JsonFields.cpp -----------------------------------------------------===//
#include "compiler/model/JsonFields.h"

namespace volt::model {

std::string JsonFields::found(const nlohmann::json &v) {
  std::string text = v.dump();
  if (text.size() > 60)
    text = text.substr(0, 57) + "...";
  return std::string(v.type_name()) + " " + text;
}

Result<int64_t> JsonFields::positiveInt(const std::string &key,
                                        std::optional<int64_t> fallback) const {
  const nlohmann::json *v = find(key);
  if (!v) {
    if (fallback)
      return *fallback;
    return missing(key);
  }
  if (!v->is_number_integer() || v->get<int64_t>() <= 0)
    return error(key, "expected a positive integer, found " + found(*v));
  return v->get<int64_t>();
}

Result<int64_t> JsonFields::nonNegativeInt(const std::string &key,
                                           std::optional<int64_t> fallback) const {
  const nlohmann::json *v = find(key);
  if (!v) {
    if (fallback)
      return *fallback;
    return missing(key);
  }
  if (!v->is_number_integer() || v->get<int64_t>() < 0)
    return error(key, "expected a non-negative integer, found " + found(*v));
  return v->get<int64_t>();
}

Result<double> JsonFields::positiveNumber(const std::string &key,
                                          std::optional<double> fallback) const {
  const nlohmann::json *v = find(key);
  if (!v) {
    if (fallback)
      return *fallback;
    return missing(key);
  }
  if (!v->is_number() || !(v->get<double>() > 0.0))
    return error(key, "expected a positive number, found " + found(*v));
  return v->get<double>();
}

Result<bool> JsonFields::boolean(const std::string &key, std::optional<bool> fallback) const {
  const nlohmann::json *v = find(key);
  if (!v) {
    if (fallback)
      return *fallback;
    return missing(key);
  }
  if (!v->is_boolean())
    return error(key, "expected true or false, found " + found(*v));
  return v->get<bool>();
}

Result<std::string> JsonFields::string(const std::string &key,
                                       std::optional<std::string> fallback) const {
  const nlohmann::json *v = find(key);
  if (!v) {
    if (fallback)
      return *fallback;
    return missing(key);
  }
  if (!v->is_string())
    return error(key, "expected a string, found " + found(*v));
  return v->get<std::string>();
}

Result<std::vector<std::string>> JsonFields::stringList(const std::string &key) const {
  std::vector<std::string> out;
  const nlohmann::json *v = find(key);
  if (!v)
    return out;
  if (!v->is_array())
    return error(key, "expected a list of strings, found " + found(*v));
  for (const auto &item : *v) {
    if (!item.is_string())
      return error(key, "expected a list of strings, found an element " + found(item));
    out.push_back(item.get<std::string>());
  }
  return out;
}

Result<std::vector<int64_t>> JsonFields::intList(const std::string &key) const {
  std::vector<int64_t> out;
  const nlohmann::json *v = find(key);
  if (!v)
    return out;
  if (!v->is_array())
    return error(key, "expected a list of integers, found " + found(*v));
  for (const auto &item : *v) {
    if (!item.is_number_integer())
      return error(key, "expected a list of integers, found an element " + found(item));
    out.push_back(item.get<int64_t>());
  }
  return out;
}

} // namespace volt::model
