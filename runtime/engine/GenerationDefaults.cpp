//===- GenerationDefaults.cpp ---------------------------------------------===//
#include "runtime/engine/GenerationDefaults.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>

namespace volt::engine {

void GenerationDefaults::applyTo(SamplingParams &params) const {
  if (temperature)
    params.temperature = *temperature;
  if (topP)
    params.topP = *topP;
  if (topK)
    params.topK = *topK;
  if (minP)
    params.minP = *minP;
  if (repetitionPenalty)
    params.repetitionPenalty = *repetitionPenalty;
}

std::string GenerationDefaults::describe() const {
  std::string out;
  auto add = [&](const char *name, std::string value) {
    out += (out.empty() ? "" : ", ") + std::string(name) + " " + value;
  };
  auto number = [](float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
    return std::string(buf);
  };
  if (temperature)
    add("temperature", number(*temperature));
  if (topP)
    add("top_p", number(*topP));
  if (topK)
    add("top_k", std::to_string(*topK));
  if (minP)
    add("min_p", number(*minP));
  if (repetitionPenalty)
    add("repetition_penalty", number(*repetitionPenalty));
  return out.empty() ? "none" : out;
}

Result<GenerationDefaults> parseGenerationDefaults(std::string_view text,
                                                   const std::string &where) {
  nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded())
    return Error(where + ": not valid JSON");
  if (!json.is_object())
    return Error(where + ": expected a JSON object");
  GenerationDefaults d;
  auto number = [&](const char *key, std::optional<float> &field) -> Status {
    auto it = json.find(key);
    if (it == json.end() || it->is_null())
      return Status::success();
    if (!it->is_number())
      return Error(where + ": field '" + key + "': expected a number, found " +
                   std::string(it->type_name()));
    field = static_cast<float>(it->get<double>());
    return Status::success();
  };
  VOLT_RETURN_IF_ERROR(number("temperature", d.temperature));
  VOLT_RETURN_IF_ERROR(number("top_p", d.topP));
  VOLT_RETURN_IF_ERROR(number("min_p", d.minP));
  VOLT_RETURN_IF_ERROR(number("repetition_penalty", d.repetitionPenalty));
  if (auto it = json.find("top_k"); it != json.end() && !it->is_null()) {
    if (!it->is_number_integer())
      return Error(where + ": field 'top_k': expected an integer, found " + it->dump());
    int64_t k = it->get<int64_t>();
    if (k < -1 || k > INT32_MAX)
      return Error(where + ": field 'top_k': " + std::to_string(k) +
                   " is out of range (-1 or 0: off, else at least 1)");
    d.topK = static_cast<int32_t>(k);
  }
  if (std::string problem = generationDefaultsProblem(d); !problem.empty())
    return Error(where + ": " + problem);
  return d;
}

} // namespace volt::engine
