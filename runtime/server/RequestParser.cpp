//===- RequestParser.cpp - request bodies to validated requests -----------===//
#include "runtime/server/RequestParser.h"

#include "runtime/server/JsonFields.h"
#include "runtime/support/Strings.h"

#include <charconv>
#include <limits>

namespace volt::server {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
/// Each stop string is searched for after every token; a bound keeps one
/// request from slowing every other request's steps.
constexpr size_t kMaxStopStrings = 256;

MaybeError tokenId(const Json &value, const std::string &where, const ParseLimits &limits,
                   int32_t &out) {
  int64_t id = 0;
  VOLT_API_TRY(readInteger(value, where, kInt32Min, kInt32Max, id));
  if (id < 0 || id >= limits.vocabSize)
    return badRequest(where, where + ": token id " + std::to_string(id) +
                                 " is outside the vocabulary [0, " +
                                 std::to_string(limits.vocabSize) + ")");
  out = int32_t(id);
  return std::nullopt;
}

MaybeError tokenIdArray(const Json &value, const std::string &where, const ParseLimits &limits,
                        std::vector<int32_t> &out) {
  if (!value.is_array())
    return badRequest(where,
                      where + ": expected an array of token ids, found " + describeJsonType(value));
  out.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    int32_t id = 0;
    VOLT_API_TRY(tokenId(value[i], where + "[" + std::to_string(i) + "]", limits, id));
    out.push_back(id);
  }
  return std::nullopt;
}

MaybeError parseStop(const JsonFields &f, engine::SamplingParams &s) {
  const Json *v = f.get("stop");
  if (!v)
    return std::nullopt;
  if (v->is_string()) {
    s.stop.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    if (v->size() > kMaxStopStrings)
      return badRequest("stop", "stop: expected at most " + std::to_string(kMaxStopStrings) +
                                    " strings, found " + std::to_string(v->size()));
    for (size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_string())
        return badRequest("stop", "stop[" + std::to_string(i) + "]: expected a string, found " +
                                      describeJsonType((*v)[i]));
      s.stop.push_back((*v)[i].get<std::string>());
    }
  } else {
    return f.typeError("stop", "a string or an array of strings", *v);
  }
  for (const std::string &stop : s.stop)
    if (stop.empty())
      return badRequest("stop", "stop: expected non-empty strings, found an empty string");
  return std::nullopt;
}

MaybeError parseLogitBias(const JsonFields &f, const ParseLimits &limits,
                          engine::SamplingParams &s) {
  const Json *v = f.get("logit_bias");
  if (!v)
    return std::nullopt;
  if (!v->is_object())
    return f.typeError("logit_bias", "an object mapping token ids to biases", *v);
  for (auto it = v->begin(); it != v->end(); ++it) {
    const std::string &key = it.key();
    std::string where = "logit_bias[\"" + key + "\"]";
    int64_t id = -1;
    auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (key.empty() || ec != std::errc() || end != key.data() + key.size())
      return badRequest("logit_bias",
                        "logit_bias: expected token ids as keys, found \"" + key + "\"");
    if (id < 0 || id >= limits.vocabSize)
      return badRequest("logit_bias", "logit_bias: token id " + key +
                                          " is outside the vocabulary [0, " +
                                          std::to_string(limits.vocabSize) + ")");
    if (!it->is_number())
      return badRequest("logit_bias",
                        where + ": expected a number, found " + describeJsonType(*it));
    double bias = it->get<double>();
    if (!(bias >= -100 && bias <= 100))
      return badRequest("logit_bias",
                        where + ": expected a value in [-100, 100], found " + it->dump());
    s.logitBias.emplace_back(int32_t(id), float(bias));
  }
  return std::nullopt;
}

MaybeError parseStreamOptions(const JsonFields &f, GenerationOptions &o) {
  const Json *v = f.get("stream_options");
  if (!v)
    return std::nullopt;
  if (!v->is_object())
    return f.typeError("stream_options", "an object", *v);
  if (!o.stream)
    return badRequest("stream_options", "stream_options: only allowed when stream is true");
  JsonFields so(*v, "stream_options.");
  VOLT_API_TRY(so.rejectUnknown({"include_usage", "continuous_usage_stats"}));
  VOLT_API_TRY(so.boolean("include_usage", o.includeUsage));
  VOLT_API_TRY(so.boolean("continuous_usage_stats", o.continuousUsageStats));
  return std::nullopt;
}

/// Fields with the same meaning in both endpoints.
MaybeError parseCommon(const JsonFields &f, const ParseLimits &limits, GenerationOptions &o) {
  engine::SamplingParams &s = o.sampling;
  VOLT_API_TRY(f.string("model", o.model));
  int64_t n = 1;
  VOLT_API_TRY(f.integer("n", 1, limits.maxChoices, n));
  o.n = int32_t(n);
  VOLT_API_TRY(f.boolean("stream", o.stream));
  VOLT_API_TRY(parseStreamOptions(f, o));

  double d = 0;
  d = s.temperature;
  VOLT_API_TRY(f.number("temperature", d));
  s.temperature = float(d);
  d = s.topP;
  VOLT_API_TRY(f.number("top_p", d));
  s.topP = float(d);
  d = s.minP;
  VOLT_API_TRY(f.number("min_p", d));
  s.minP = float(d);
  d = s.frequencyPenalty;
  VOLT_API_TRY(f.number("frequency_penalty", d));
  s.frequencyPenalty = float(d);
  d = s.presencePenalty;
  VOLT_API_TRY(f.number("presence_penalty", d));
  s.presencePenalty = float(d);
  d = s.repetitionPenalty;
  VOLT_API_TRY(f.number("repetition_penalty", d));
  s.repetitionPenalty = float(d);
  int64_t topK = s.topK;
  VOLT_API_TRY(f.integer("top_k", kInt32Min, kInt32Max, topK));
  s.topK = int32_t(topK);
  std::optional<int64_t> seed;
  VOLT_API_TRY(f.integer("seed", std::numeric_limits<int64_t>::min(),
                         std::numeric_limits<int64_t>::max(), seed));
  if (seed)
    s.seed = uint64_t(*seed);
  int64_t minTokens = 0;
  VOLT_API_TRY(f.integer("min_tokens", 0, kInt32Max, minTokens));
  s.minTokens = int32_t(minTokens);
  VOLT_API_TRY(parseStop(f, s));
  if (const Json *ids = f.get("stop_token_ids"))
    VOLT_API_TRY(tokenIdArray(*ids, "stop_token_ids", limits, s.stopTokenIds));
  VOLT_API_TRY(f.boolean("include_stop_str_in_output", s.includeStopStrInOutput));
  VOLT_API_TRY(f.boolean("ignore_eos", s.ignoreEos));
  VOLT_API_TRY(parseLogitBias(f, limits, s));

  VOLT_API_TRY(f.boolean("skip_special_tokens", o.skipSpecialTokens));
  VOLT_API_TRY(f.unsupported("spaces_between_special_tokens", true,
                             "special tokens are always decoded as the tokenizer does"));
  VOLT_API_TRY(f.boolean("add_special_tokens", o.addSpecialTokens));
  VOLT_API_TRY(f.boolean("return_tokens_as_token_ids", o.returnTokensAsTokenIds));
  std::optional<int64_t> truncate;
  VOLT_API_TRY(f.integer("truncate_prompt_tokens", -1, kInt32Max, truncate));
  if (truncate && *truncate >= 0) {
    if (*truncate == 0)
      return badRequest("truncate_prompt_tokens",
                        "truncate_prompt_tokens: expected -1 or at least 1, found 0");
    o.truncatePromptTokens = int32_t(*truncate);
  }
  std::string user;
  VOLT_API_TRY(f.string("user", user));

  // Fields OpenAI or vLLM define that volt does not implement.
  VOLT_API_TRY(f.unsupported("use_beam_search", false, "beam search is not implemented"));
  VOLT_API_TRY(f.unsupported("length_penalty", 1, "it only applies to beam search"));
  VOLT_API_TRY(f.unsupported("prompt_logprobs", Json(), "prompt logprobs are not computed"));
  VOLT_API_TRY(f.unsupported("allowed_token_ids", Json(), "use logit_bias instead"));
  VOLT_API_TRY(f.unsupported("bad_words", Json::array(), "use logit_bias instead"));
  VOLT_API_TRY(f.unsupported("priority", 0, "requests are scheduled first come, first served"));
  VOLT_API_TRY(f.unsupported("response_format", Json{{"type", "text"}},
                             "structured output is not implemented"));
  for (const char *guided :
       {"guided_json", "guided_regex", "guided_choice", "guided_grammar", "guided_decoding_backend",
        "guided_whitespace_pattern", "structured_outputs", "logits_processors", "vllm_xargs",
        "kv_transfer_params", "cache_salt", "mm_processor_kwargs"})
    VOLT_API_TRY(f.unsupported(guided, Json(), "not implemented by volt"));
  return std::nullopt;
}

/// Checks the sampling options together (ranges, min_tokens <= max_tokens).
MaybeError validateSampling(const GenerationOptions &o, const ParseLimits &limits) {
  Status st = engine::validateSamplingParams(o.sampling, limits.vocabSize, limits.maxLogprobs);
  if (!st.ok())
    return badRequestFromMessage(st.message());
  return std::nullopt;
}

MaybeError parsePrompt(const JsonFields &f, const ParseLimits &limits,
                       std::vector<PromptInput> &out) {
  const Json *v = f.get("prompt");
  if (!v)
    return badRequest("prompt", "prompt: required");
  auto shapeError = [&]() {
    return badRequest("prompt", "prompt: expected a string, an array of strings, an array of "
                                "token ids or an array of arrays of token ids, found " +
                                    describeJsonType(*v));
  };
  if (v->is_string()) {
    out.push_back({v->get<std::string>(), {}});
    return std::nullopt;
  }
  if (!v->is_array())
    return shapeError();
  if (v->empty())
    return badRequest("prompt", "prompt: expected at least one prompt, found an empty array");
  const Json &first = (*v)[0];
  if (first.is_number()) {
    PromptInput p;
    VOLT_API_TRY(tokenIdArray(*v, "prompt", limits, p.tokenIds));
    out.push_back(std::move(p));
    return std::nullopt;
  }
  for (size_t i = 0; i < v->size(); ++i) {
    const Json &item = (*v)[i];
    std::string where = "prompt[" + std::to_string(i) + "]";
    if (first.is_string()) {
      if (!item.is_string())
        return badRequest("prompt", where + ": expected a string (as prompt[0]), found " +
                                        describeJsonType(item));
      out.push_back({item.get<std::string>(), {}});
    } else if (first.is_array()) {
      PromptInput p;
      VOLT_API_TRY(tokenIdArray(item, where, limits, p.tokenIds));
      if (p.tokenIds.empty())
        return badRequest("prompt", where + ": expected at least one token id, found none");
      out.push_back(std::move(p));
    } else {
      return shapeError();
    }
  }
  return std::nullopt;
}

/// Joins a message's text parts the way vLLM does for string-content
/// templates ("\n" between parts).
MaybeError normalizeContent(Json &content, const std::string &where) {
  if (content.is_string())
    return std::nullopt;
  // null (an assistant turn with only tool calls) renders as "", as vLLM
  // does, not as the template's "None".
  if (content.is_null()) {
    content = "";
    return std::nullopt;
  }
  if (!content.is_array())
    return badRequest(where, where +
                                 ": expected a string, null or an array of content parts, "
                                 "found " +
                                 describeJsonType(content));
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const Json &part = content[j];
    std::string at = where + "[" + std::to_string(j) + "]";
    if (!part.is_object())
      return badRequest(where,
                        at + ": expected a content part object, found " + describeJsonType(part));
    auto type = part.find("type");
    if (type == part.end() || !type->is_string())
      return badRequest(where, at + ".type: required string");
    const std::string &t = type->get_ref<const std::string &>();
    if (t != "text" && t != "input_text") {
      std::string message = at + ".type: '";
      message += t;
      message += "' is not supported (the model takes text only; valid: text)";
      return badRequest(where, message);
    }
    auto body = part.find("text");
    if (body == part.end() || !body->is_string())
      return badRequest(where, at + ".text: required string");
    if (j > 0)
      text += "\n";
    text += body->get_ref<const std::string &>();
  }
  content = text;
  return std::nullopt;
}

MaybeError parseMessages(const Json *v, Json &out) {
  if (!v)
    return badRequest("messages", "messages: required");
  if (!v->is_array())
    return badRequest("messages",
                      "messages: expected an array of messages, found " + describeJsonType(*v));
  if (v->empty())
    return badRequest("messages", "messages: expected at least one message, found none");
  out = *v;
  for (size_t i = 0; i < out.size(); ++i) {
    Json &m = out[i];
    std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object())
      return badRequest("messages",
                        where + ": expected a message object, found " + describeJsonType(m));
    auto role = m.find("role");
    if (role == m.end() || !role->is_string() || role->get_ref<const std::string &>().empty())
      return badRequest("messages", where + ".role: required non-empty string");
    auto content = m.find("content");
    if (content != m.end())
      VOLT_API_TRY(normalizeContent(*content, where + ".content"));
  }
  return std::nullopt;
}

/// Template inputs shared by chat completions and chat-style /tokenize.
/// tool_choice: "none", "auto", "required" or {"type": "function",
/// "function": {"name": ...}} naming one of `tools`.
MaybeError parseToolChoice(const Json *choice, const Json &tools, ToolChoice &out) {
  const bool haveTools = tools.is_array() && !tools.empty();
  if (!choice) {
    out.kind = haveTools ? ToolChoice::Auto : ToolChoice::None;
    return std::nullopt;
  }
  if (choice->is_string()) {
    const std::string &c = choice->get_ref<const std::string &>();
    if (c == "none") {
      out.kind = ToolChoice::None;
      return std::nullopt;
    }
    if (c != "auto" && c != "required")
      return badRequest("tool_choice", "tool_choice: expected \"none\", \"auto\", \"required\" "
                                       "or {\"type\": \"function\", \"function\": {\"name\": "
                                       "...}}, found \"" +
                                           clipForMessage(c, 64) + "\"");
    out.kind = c == "auto" ? ToolChoice::Auto : ToolChoice::Required;
  } else if (choice->is_object()) {
    auto type = choice->find("type");
    auto fn = choice->find("function");
    const Json *name = nullptr;
    if (fn != choice->end() && fn->is_object()) {
      auto n = fn->find("name");
      if (n != fn->end() && n->is_string())
        name = &*n;
    }
    if (type == choice->end() || *type != "function" || !name)
      return badRequest("tool_choice", "tool_choice: a named choice is {\"type\": \"function\", "
                                       "\"function\": {\"name\": \"...\"}}");
    out.kind = ToolChoice::Named;
    out.name = name->get<std::string>();
  } else {
    return badRequest("tool_choice", "tool_choice: expected a string or an object");
  }
  if (!haveTools)
    return badRequest("tool_choice", "tool_choice: \"" +
                                         std::string(out.kind == ToolChoice::Named ? "named"
                                                     : out.kind == ToolChoice::Auto
                                                         ? "auto"
                                                         : "required") +
                                         "\" needs tools in the request");
  if (out.kind == ToolChoice::Named) {
    for (const Json &t : tools) {
      auto fn = t.find("function");
      if (fn != t.end() && fn->is_object() && fn->contains("name") && (*fn)["name"] == out.name)
        return std::nullopt;
    }
    return badRequest("tool_choice", "tool_choice: function \"" + clipForMessage(out.name, 64) +
                                         "\" is not among the request's tools");
  }
  return std::nullopt;
}

MaybeError parseTemplateInputs(const JsonFields &f, Json &tools, Json &kwargs,
                               bool &addGenerationPrompt, bool &continueFinalMessage) {
  if (const Json *t = f.get("tools")) {
    if (!t->is_array())
      return f.typeError("tools", "an array of tool definitions", *t);
    for (size_t i = 0; i < t->size(); ++i)
      if (!(*t)[i].is_object())
        return badRequest("tools", "tools[" + std::to_string(i) + "]: expected an object, found " +
                                       describeJsonType((*t)[i]));
    tools = *t;
  }
  if (const Json *k = f.get("chat_template_kwargs")) {
    if (!k->is_object())
      return f.typeError("chat_template_kwargs", "an object", *k);
    kwargs = *k;
  }
  if (const Json *d = f.get("documents")) {
    if (!d->is_array())
      return f.typeError("documents", "an array of documents", *d);
    kwargs["documents"] = *d;
  }
  VOLT_API_TRY(f.unsupported("chat_template", Json(), "the plan's chat template is used"));
  VOLT_API_TRY(f.boolean("add_generation_prompt", addGenerationPrompt));
  VOLT_API_TRY(f.boolean("continue_final_message", continueFinalMessage));
  if (addGenerationPrompt && continueFinalMessage)
    return badRequest("continue_final_message",
                      "continue_final_message: cannot be true together with "
                      "add_generation_prompt (set add_generation_prompt to false)");
  return std::nullopt;
}

} // namespace

ApiResult<CompletionRequest> parseCompletionRequest(std::string_view body,
                                                    const ParseLimits &limits) {
  auto parsed = parseJsonObject(body);
  if (!parsed)
    return parsed.error();
  JsonFields f(*parsed, "");
  VOLT_API_TRY(f.rejectUnknown({"model",
                                "prompt",
                                "best_of",
                                "echo",
                                "frequency_penalty",
                                "logit_bias",
                                "logprobs",
                                "max_tokens",
                                "n",
                                "presence_penalty",
                                "seed",
                                "stop",
                                "stream",
                                "stream_options",
                                "suffix",
                                "temperature",
                                "top_p",
                                "user",
                                "top_k",
                                "min_p",
                                "repetition_penalty",
                                "stop_token_ids",
                                "include_stop_str_in_output",
                                "ignore_eos",
                                "min_tokens",
                                "skip_special_tokens",
                                "spaces_between_special_tokens",
                                "add_special_tokens",
                                "truncate_prompt_tokens",
                                "return_tokens_as_token_ids",
                                "use_beam_search",
                                "length_penalty",
                                "prompt_logprobs",
                                "allowed_token_ids",
                                "bad_words",
                                "priority",
                                "response_format",
                                "guided_json",
                                "guided_regex",
                                "guided_choice",
                                "guided_grammar",
                                "guided_decoding_backend",
                                "guided_whitespace_pattern",
                                "structured_outputs",
                                "logits_processors",
                                "vllm_xargs",
                                "kv_transfer_params",
                                "cache_salt",
                                "mm_processor_kwargs"}));
  CompletionRequest r;
  limits.defaults.applyTo(r.sampling);
  VOLT_API_TRY(parseCommon(f, limits, r));
  VOLT_API_TRY(parsePrompt(f, limits, r.prompts));
  // OpenAI's default for completions.
  int64_t maxTokens = 16;
  VOLT_API_TRY(f.integer("max_tokens", 1, kInt32Max, maxTokens));
  r.sampling.maxTokens = int32_t(maxTokens);
  std::optional<int64_t> logprobs;
  VOLT_API_TRY(f.integer("logprobs", 0, limits.maxLogprobs, logprobs));
  if (logprobs)
    r.sampling.logprobs = int32_t(*logprobs);
  VOLT_API_TRY(f.boolean("echo", r.echo));
  if (r.echo && r.sampling.logprobs)
    return badRequest("echo", "echo: cannot be combined with logprobs (prompt logprobs are "
                              "not computed)");
  std::optional<int64_t> bestOf;
  VOLT_API_TRY(f.integer("best_of", 1, limits.maxChoices, bestOf));
  if (bestOf && *bestOf != r.n)
    return badRequest("best_of", "best_of: not supported unless equal to n (" +
                                     std::to_string(r.n) + "), found " + std::to_string(*bestOf));
  VOLT_API_TRY(f.unsupported("suffix", "", "the model has no fill-in-the-middle prompt format"));
  if (int64_t(r.prompts.size()) * r.n > limits.maxChoices)
    return badRequest("n", "n: " + std::to_string(r.prompts.size()) + " prompts x n " +
                               std::to_string(r.n) + " is more than " +
                               std::to_string(limits.maxChoices) + " choices");
  VOLT_API_TRY(validateSampling(r, limits));
  return r;
}

ApiResult<ChatRequest> parseChatRequest(std::string_view body, const ParseLimits &limits) {
  auto parsed = parseJsonObject(body);
  if (!parsed)
    return parsed.error();
  JsonFields f(*parsed, "");
  VOLT_API_TRY(f.rejectUnknown({"model",
                                "messages",
                                "audio",
                                "frequency_penalty",
                                "function_call",
                                "functions",
                                "logit_bias",
                                "logprobs",
                                "max_completion_tokens",
                                "max_tokens",
                                "metadata",
                                "modalities",
                                "n",
                                "parallel_tool_calls",
                                "prediction",
                                "presence_penalty",
                                "prompt_cache_key",
                                "reasoning_effort",
                                "response_format",
                                "safety_identifier",
                                "seed",
                                "service_tier",
                                "stop",
                                "store",
                                "stream",
                                "stream_options",
                                "temperature",
                                "tool_choice",
                                "tools",
                                "top_logprobs",
                                "top_p",
                                "user",
                                "verbosity",
                                "web_search_options",
                                "top_k",
                                "min_p",
                                "repetition_penalty",
                                "stop_token_ids",
                                "include_stop_str_in_output",
                                "ignore_eos",
                                "min_tokens",
                                "skip_special_tokens",
                                "spaces_between_special_tokens",
                                "add_special_tokens",
                                "truncate_prompt_tokens",
                                "return_tokens_as_token_ids",
                                "add_generation_prompt",
                                "continue_final_message",
                                "echo",
                                "documents",
                                "chat_template",
                                "chat_template_kwargs",
                                "use_beam_search",
                                "length_penalty",
                                "prompt_logprobs",
                                "allowed_token_ids",
                                "bad_words",
                                "priority",
                                "guided_json",
                                "guided_regex",
                                "guided_choice",
                                "guided_grammar",
                                "guided_decoding_backend",
                                "guided_whitespace_pattern",
                                "structured_outputs",
                                "logits_processors",
                                "vllm_xargs",
                                "kv_transfer_params",
                                "cache_salt",
                                "mm_processor_kwargs"}));
  ChatRequest r;
  limits.defaults.applyTo(r.sampling);
  // Chat prompts come from the template, which writes its own special tokens.
  r.addSpecialTokens = false;
  VOLT_API_TRY(parseCommon(f, limits, r));
  VOLT_API_TRY(parseMessages(f.get("messages"), r.messages));
  VOLT_API_TRY(parseTemplateInputs(f, r.tools, r.templateKwargs, r.addGenerationPrompt,
                                   r.continueFinalMessage));
  std::optional<int64_t> maxTokens;
  VOLT_API_TRY(f.integer("max_tokens", 1, kInt32Max, maxTokens));
  std::optional<int64_t> maxCompletionTokens;
  VOLT_API_TRY(f.integer("max_completion_tokens", 1, kInt32Max, maxCompletionTokens));
  if (maxCompletionTokens)
    maxTokens = maxCompletionTokens;
  if (maxTokens)
    r.sampling.maxTokens = int32_t(*maxTokens);
  VOLT_API_TRY(f.boolean("logprobs", r.logprobs));
  std::optional<int64_t> topLogprobs;
  VOLT_API_TRY(f.integer("top_logprobs", 0, limits.maxLogprobs, topLogprobs));
  if (topLogprobs && *topLogprobs > 0 && !r.logprobs)
    return badRequest("top_logprobs", "top_logprobs: needs logprobs set to true");
  if (r.logprobs)
    r.sampling.logprobs = int32_t(topLogprobs.value_or(0));

  VOLT_API_TRY(parseToolChoice(f.get("tool_choice"), r.tools, r.toolChoice));
  std::string ignored;
  VOLT_API_TRY(f.unsupported("echo", false, "not implemented for chat"));
  VOLT_API_TRY(f.unsupported("audio", Json(), "the model takes text only"));
  VOLT_API_TRY(f.unsupported("modalities", Json::array({"text"}), "the model writes text only"));
  VOLT_API_TRY(f.unsupported("functions", Json::array(), "use tools"));
  VOLT_API_TRY(f.unsupported("function_call", "none", "tool calls are not parsed"));
  VOLT_API_TRY(f.unsupported("prediction", Json(), "predicted outputs are not implemented"));
  VOLT_API_TRY(f.unsupported("reasoning_effort", Json(), "set it in chat_template_kwargs"));
  VOLT_API_TRY(f.unsupported("web_search_options", Json(), "no web search"));
  VOLT_API_TRY(f.unsupported("verbosity", Json(), "not implemented"));
  VOLT_API_TRY(validateSampling(r, limits));
  return r;
}

ApiResult<TokenizeRequest> parseTokenizeRequest(std::string_view body, const ParseLimits &limits) {
  auto parsed = parseJsonObject(body);
  if (!parsed)
    return parsed.error();
  JsonFields f(*parsed, "");
  VOLT_API_TRY(
      f.rejectUnknown({"model", "prompt", "messages", "add_special_tokens", "add_generation_prompt",
                       "continue_final_message", "return_token_strs", "tools", "chat_template",
                       "chat_template_kwargs", "documents", "mm_processor_kwargs"}));
  TokenizeRequest r;
  VOLT_API_TRY(f.string("model", r.model));
  VOLT_API_TRY(f.string("prompt", r.prompt));
  const Json *messages = f.get("messages");
  if (r.prompt.has_value() == (messages != nullptr))
    return badRequest("prompt", "prompt: give exactly one of prompt and messages");
  if (messages) {
    r.addSpecialTokens = false;
    VOLT_API_TRY(parseMessages(messages, r.messages));
    VOLT_API_TRY(parseTemplateInputs(f, r.tools, r.templateKwargs, r.addGenerationPrompt,
                                     r.continueFinalMessage));
  } else {
    for (const char *chatOnly : {"add_generation_prompt", "continue_final_message", "tools",
                                 "chat_template_kwargs", "documents", "chat_template"})
      if (f.get(chatOnly))
        return badRequest(chatOnly, std::string(chatOnly) + ": only allowed with messages");
  }
  VOLT_API_TRY(f.boolean("add_special_tokens", r.addSpecialTokens));
  VOLT_API_TRY(f.boolean("return_token_strs", r.returnTokenStrs));
  VOLT_API_TRY(f.unsupported("mm_processor_kwargs", Json(), "the model takes text only"));
  (void)limits;
  return r;
}

ApiResult<DetokenizeRequest> parseDetokenizeRequest(std::string_view body,
                                                    const ParseLimits &limits) {
  auto parsed = parseJsonObject(body);
  if (!parsed)
    return parsed.error();
  JsonFields f(*parsed, "");
  VOLT_API_TRY(f.rejectUnknown({"model", "tokens"}));
  DetokenizeRequest r;
  VOLT_API_TRY(f.string("model", r.model));
  const Json *tokens = f.get("tokens");
  if (!tokens)
    return badRequest("tokens", "tokens: required");
  VOLT_API_TRY(tokenIdArray(*tokens, "tokens", limits, r.tokens));
  return r;
}

} // namespace volt::server
