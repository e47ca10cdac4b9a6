//===- ResponseBuilder.h - engine outputs to OpenAI responses --*- C++ -*-===//
//
// Turns a request's choice outputs into what OpenAI's API returns: a whole
// `text_completion` / `chat.completion` object, or, when streaming, the
// server-sent events (`data: {chunk}` ... `data: [DONE]`) with vLLM's
// chunk shapes: a first chat chunk per choice with the assistant role, text
// deltas, the finish reason on the chunk of the last text, and with
// stream_options.include_usage a final chunk with no choices and the usage.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/server/ApiError.h"
#include "runtime/server/Generation.h"
#include "runtime/server/OutputParser.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace volt::server {

enum class Endpoint { Completions, ChatCompletions };

struct ResponseOptions {
  Endpoint endpoint = Endpoint::Completions;
  /// "cmpl-..." or "chatcmpl-...".
  std::string id;
  int64_t created = 0;
  std::string model;
  /// OpenAI's system_fingerprint: names the plan and runtime that answered
  /// (empty: null).
  std::string systemFingerprint;
  const tok::Tokenizer *tokenizer = nullptr;
  /// Choices per prompt; choice i belongs to prompt i / n.
  int32_t n = 1;
  /// Prompt tokens of each prompt (usage counts each prompt once).
  std::vector<int32_t> promptTokens;
  /// Per prompt: text put before the output (completions' echo).
  std::vector<std::string> echo;
  /// Report logprobs (completions: logprobs set; chat: logprobs true).
  bool logprobs = false;
  int32_t topLogprobs = 0;
  bool returnTokensAsTokenIds = false;
  bool includeUsage = false;
  bool continuousUsageStats = false;
  /// Chat: how each choice's text is split into reasoning_content, content
  /// and tool_calls (--reasoning-parser, --tool-call-parser).
  OutputParserOptions parsing;
  /// A choice that called tools and stopped ends with finish_reason
  /// "tool_calls" (tool_choice auto and required, as vLLM).
  bool toolCallsFinish = false;
  /// Tool call ids are this prefix and the call's number ("chatcmpl-tool-...").
  std::string toolCallIdPrefix;
};

class ResponseBuilder {
public:
  ResponseBuilder(ResponseOptions options, int32_t numChoices);

  /// Streaming: the first events (chat: each choice's role chunk).
  std::string streamStart();
  /// Streaming: the events for these outputs (possibly none).
  std::string streamEvents(const std::vector<ChoiceEvent> &events);
  /// Streaming: the usage chunk (when asked for) and `data: [DONE]`.
  std::string streamEnd();
  /// Streaming: an error event, as vLLM sends when a stream fails.
  static std::string streamError(const ApiError &error);

  /// Non-streaming: records outputs for response().
  void add(const std::vector<ChoiceEvent> &events);
  /// Non-streaming: the whole response object.
  nlohmann::ordered_json response() const;

  /// The first engine failure of any choice ("" if none).
  const std::string &error() const { return error_; }
  int32_t promptTokens() const;
  int32_t completionTokens() const;
  /// Finish reasons of the choices, comma-separated (for the access log).
  std::string finishReasons() const;

private:
  struct Choice {
    std::string text;
    std::vector<int32_t> tokens;
    size_t textOffset = 0; // completions: code points so far (text_offset)
    bool echoed = false;
    bool finished = false;
    engine::FinishReason finish = engine::FinishReason::None;
    std::optional<int32_t> stopTokenId;
    std::optional<std::string> stopString;
    /// Prompt tokens whose KV came from the prefix cache (when finished).
    int32_t cachedPromptTokens = 0;
    /// Streaming with a parser: its state, and the tool calls sent.
    std::unique_ptr<OutputParser> parser;
    int32_t toolCallsSent = 0;
  };

  /// The chat delta of a parsed piece (reasoning_content, content,
  /// tool_calls), numbering calls from `firstCall`.
  nlohmann::ordered_json parsedDelta(const ParsedDelta &d, int32_t choice,
                                     int32_t firstCall) const;
  nlohmann::ordered_json toolCallJson(const ParsedToolCall &call, int32_t choice,
                                      int32_t number) const;
  bool parsing() const;

  /// Adds one output's logprobs to `into` (in this endpoint's shape).
  void appendLogprobs(Choice &c, const engine::RequestOutput &out, nlohmann::ordered_json &into);
  std::string tokenText(int32_t id) const;
  nlohmann::ordered_json emptyLogprobs() const;
  nlohmann::ordered_json choiceJson(int32_t index, const std::string &text,
                                    const nlohmann::ordered_json &logprobs,
                                    const Choice *finished, bool calledTools = false) const;
  nlohmann::ordered_json chunk(nlohmann::ordered_json choices) const;
  nlohmann::ordered_json usage() const;
  nlohmann::ordered_json fingerprint() const;
  static std::string sse(const nlohmann::ordered_json &data);

  ResponseOptions o_;
  std::vector<Choice> choices_;
  /// Per choice, for response(): completions' four arrays, or chat's
  /// content list.
  std::vector<nlohmann::ordered_json> logprobs_;
  std::string error_;
};

/// OpenAI's finish_reason for an engine reason ("stop", "length", "abort").
nlohmann::ordered_json finishReasonJson(engine::FinishReason reason);

} // namespace volt::server
