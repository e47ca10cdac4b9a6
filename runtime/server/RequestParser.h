//===- RequestParser.h - request bodies to validated requests --*- C++ -*-===//
//
// The JSON bodies of the OpenAI-compatible endpoints, parsed and checked
// before anything touches the tokenizer or the engine. Field names, types,
// defaults and ranges are OpenAI's, with vLLM's extra sampling fields
// (top_k, min_p, repetition_penalty, ...). A field OpenAI does not know is
// rejected ("unrecognized request argument supplied: temprature"), as
// OpenAI does; a field it knows that volt does not implement is rejected
// when set to anything but its neutral value. Every error names the field.
//
// Pure functions of the body and a few limits: the fuzz target calls them
// directly.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/GenerationDefaults.h"
#include "runtime/engine/SamplingParams.h"
#include "runtime/server/ApiError.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace volt::server {

/// What the parser checks against (from the plan and the server's flags).
struct ParseLimits {
  /// Token ids (prompts, stop_token_ids, logit_bias) must be below this.
  int32_t vocabSize = 0;
  /// Most `logprobs` / `top_logprobs`.
  int32_t maxLogprobs = 20;
  /// Most choices one request may ask for (prompts x n).
  int32_t maxChoices = 128;
  /// The sampling fields a request leaves unset take these (the model's
  /// generation_config.json, as vLLM's --generation-config auto), else
  /// vLLM's defaults.
  engine::GenerationDefaults defaults;
};

/// One prompt of a completion request: text, or token ids.
struct PromptInput {
  std::optional<std::string> text;
  std::vector<int32_t> tokenIds;
};

/// What completions and chat completions share.
struct GenerationOptions {
  /// Empty: the default (first) served model.
  std::string model;
  int32_t n = 1;
  bool stream = false;
  /// stream_options.include_usage: a last chunk with usage and no choices.
  bool includeUsage = false;
  /// stream_options.continuous_usage_stats: usage in every chunk.
  bool continuousUsageStats = false;
  engine::SamplingParams sampling;
  bool skipSpecialTokens = true;
  /// Logprob tokens as "token_id:<id>" instead of their text.
  bool returnTokensAsTokenIds = false;
  /// Keep only the last this-many prompt tokens.
  std::optional<int32_t> truncatePromptTokens;
  bool addSpecialTokens = true;
};

struct CompletionRequest : GenerationOptions {
  std::vector<PromptInput> prompts;
  bool echo = false;
};

/// OpenAI's tool_choice: absent means auto when tools are given, else none.
struct ToolChoice {
  enum Kind { None, Auto, Required, Named } kind = None;
  /// Named: the function to call (one of the request's tools).
  std::string name;
};

struct ChatRequest : GenerationOptions {
  /// The conversation, content parts already joined into strings.
  nlohmann::ordered_json messages;
  /// Tool definitions for the template; null when none.
  nlohmann::ordered_json tools;
  /// Extra template variables (chat_template_kwargs); an object.
  nlohmann::ordered_json templateKwargs = nlohmann::ordered_json::object();
  bool addGenerationPrompt = true;
  bool continueFinalMessage = false;
  /// `logprobs: true`; the number of alternatives is sampling.logprobs.
  bool logprobs = false;
  ToolChoice toolChoice;
};

struct TokenizeRequest {
  std::string model;
  /// Exactly one of prompt and messages is given.
  std::optional<std::string> prompt;
  nlohmann::ordered_json messages;
  nlohmann::ordered_json tools;
  nlohmann::ordered_json templateKwargs = nlohmann::ordered_json::object();
  bool addSpecialTokens = true;
  bool addGenerationPrompt = true;
  bool continueFinalMessage = false;
  bool returnTokenStrs = false;
};

struct DetokenizeRequest {
  std::string model;
  std::vector<int32_t> tokens;
};

/// POST /v1/completions.
ApiResult<CompletionRequest> parseCompletionRequest(std::string_view body,
                                                    const ParseLimits &limits);
/// POST /v1/chat/completions.
ApiResult<ChatRequest> parseChatRequest(std::string_view body, const ParseLimits &limits);
/// POST /tokenize.
ApiResult<TokenizeRequest> parseTokenizeRequest(std::string_view body, const ParseLimits &limits);
/// POST /detokenize.
ApiResult<DetokenizeRequest> parseDetokenizeRequest(std::string_view body,
                                                    const ParseLimits &limits);

} // namespace volt::server
