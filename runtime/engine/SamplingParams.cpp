//===- SamplingParams.cpp - validation of sampling options ----------------===//
#include "runtime/engine/SamplingParams.h"

#include <cmath>
#include <sstream>

namespace volt::engine {

namespace {

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

Status bad(const char *field, const std::string &expected, const std::string &found) {
  return Error(std::string(field) + ": expected " + expected + ", found " + found);
}

Status checkToken(const char *field, int32_t id, int32_t vocabSize) {
  if (id < 0 || id >= vocabSize)
    return bad(field, "token ids in [0, " + std::to_string(vocabSize) + ")", std::to_string(id));
  return Status::success();
}

} // namespace

Status validateSamplingParams(const SamplingParams &p, int32_t vocabSize, int32_t maxLogprobs) {
  if (!std::isfinite(p.temperature) || p.temperature < 0)
    return bad("temperature", "a non-negative number", num(p.temperature));
  if (!(p.topP > 0 && p.topP <= 1))
    return bad("top_p", "a value in (0, 1]", num(p.topP));
  if (p.topK < -1)
    return bad("top_k", "-1 or 0 (disabled) or at least 1", std::to_string(p.topK));
  if (!(p.minP >= 0 && p.minP <= 1))
    return bad("min_p", "a value in [0, 1]", num(p.minP));
  if (!std::isfinite(p.repetitionPenalty) || p.repetitionPenalty <= 0)
    return bad("repetition_penalty", "a value greater than 0", num(p.repetitionPenalty));
  if (!(p.presencePenalty >= -2 && p.presencePenalty <= 2))
    return bad("presence_penalty", "a value in [-2, 2]", num(p.presencePenalty));
  if (!(p.frequencyPenalty >= -2 && p.frequencyPenalty <= 2))
    return bad("frequency_penalty", "a value in [-2, 2]", num(p.frequencyPenalty));
  for (const auto &[id, bias] : p.logitBias) {
    VOLT_RETURN_IF_ERROR(checkToken("logit_bias", id, vocabSize));
    if (!std::isfinite(bias))
      return bad("logit_bias", "finite biases", num(bias) + " for token " + std::to_string(id));
  }
  if (p.maxTokens && *p.maxTokens < 1)
    return bad("max_tokens", "at least 1", std::to_string(*p.maxTokens));
  if (p.minTokens < 0)
    return bad("min_tokens", "at least 0", std::to_string(p.minTokens));
  if (p.maxTokens && p.minTokens > *p.maxTokens)
    return bad("min_tokens", "at most max_tokens (" + std::to_string(*p.maxTokens) + ")",
               std::to_string(p.minTokens));
  for (int32_t id : p.stopTokenIds)
    VOLT_RETURN_IF_ERROR(checkToken("stop_token_ids", id, vocabSize));
  for (const std::string &s : p.stop)
    if (s.empty())
      return bad("stop", "non-empty strings", "an empty string");
  if (p.logprobs && (*p.logprobs < 0 || *p.logprobs > maxLogprobs))
    return bad("logprobs", "a value in [0, " + std::to_string(maxLogprobs) + "]",
               std::to_string(*p.logprobs));
  return Status::success();
}

} // namespace volt::engine
