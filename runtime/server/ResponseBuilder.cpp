//===- ResponseBuilder.cpp ------------------------------------------------===//
#include "runtime/server/ResponseBuilder.h"

#include <algorithm>

namespace volt::server {
namespace {

using Json = nlohmann::ordered_json;

/// vLLM reports -inf log-probabilities as -9999 (JSON has no infinity).
double clampLogprob(float lp) { return std::max(double(lp), -9999.0); }

size_t codePoints(const std::string &s) {
  size_t n = 0;
  for (unsigned char c : s)
    n += (c & 0xC0) != 0x80;
  return n;
}

Json bytesOf(const std::string &s) {
  Json a = Json::array();
  for (unsigned char c : s)
    a.push_back(int(c));
  return a;
}

} // namespace

Json finishReasonJson(engine::FinishReason reason) {
  if (reason == engine::FinishReason::None)
    return Json();
  return engine::finishReasonName(reason);
}

ResponseBuilder::ResponseBuilder(ResponseOptions options, int32_t numChoices)
    : o_(std::move(options)), choices_(size_t(numChoices)), logprobs_(size_t(numChoices)) {
  for (size_t i = 0; i < choices_.size(); ++i) {
    logprobs_[i] = emptyLogprobs();
    size_t prompt = i / size_t(std::max(o_.n, 1));
    if (prompt < o_.echo.size())
      choices_[i].textOffset = codePoints(o_.echo[prompt]);
  }
}

Json ResponseBuilder::emptyLogprobs() const {
  if (o_.endpoint == Endpoint::ChatCompletions)
    return Json{{"content", Json::array()}};
  return Json{{"text_offset", Json::array()},
              {"token_logprobs", Json::array()},
              {"tokens", Json::array()},
              {"top_logprobs", Json::array()}};
}

std::string ResponseBuilder::tokenText(int32_t id) const {
  if (o_.returnTokensAsTokenIds || !o_.tokenizer)
    return "token_id:" + std::to_string(id);
  int32_t ids[1] = {id};
  auto text = o_.tokenizer->decode(ids, false);
  return text ? *text : "";
}

void ResponseBuilder::appendLogprobs(Choice &c, const engine::RequestOutput &out, Json &into) {
  if (!o_.logprobs || !out.token || !out.logprobs)
    return;
  const engine::SampleLogprobs &lp = *out.logprobs;
  std::string token = tokenText(*out.token);
  if (o_.endpoint == Endpoint::ChatCompletions) {
    Json top = Json::array();
    for (size_t i = 0; i < lp.top.size() && int32_t(i) < o_.topLogprobs; ++i) {
      std::string alt = tokenText(lp.top[i].token);
      top.push_back(
          {{"token", alt}, {"logprob", clampLogprob(lp.top[i].logprob)}, {"bytes", bytesOf(alt)}});
    }
    into["content"].push_back({{"token", token},
                               {"logprob", clampLogprob(lp.logprob)},
                               {"bytes", bytesOf(token)},
                               {"top_logprobs", std::move(top)}});
    return;
  }
  // OpenAI's legacy shape: the top alternatives and always the chosen token.
  Json top = Json::object();
  for (size_t i = 0; i < lp.top.size() && int32_t(i) < o_.topLogprobs; ++i)
    top[tokenText(lp.top[i].token)] = clampLogprob(lp.top[i].logprob);
  top[token] = clampLogprob(lp.logprob);
  into["text_offset"].push_back(c.textOffset);
  into["token_logprobs"].push_back(clampLogprob(lp.logprob));
  into["tokens"].push_back(token);
  into["top_logprobs"].push_back(std::move(top));
  c.textOffset += codePoints(token);
}

bool ResponseBuilder::parsing() const {
  return o_.endpoint == Endpoint::ChatCompletions &&
         (o_.parsing.reasoning != ReasoningParser::None ||
          o_.parsing.tools != ToolCallParser::None);
}

Json ResponseBuilder::toolCallJson(const ParsedToolCall &call, int32_t choice,
                                   int32_t number) const {
  return Json{{"id", o_.toolCallIdPrefix + std::to_string(choice) + "-" + std::to_string(number)},
              {"type", "function"},
              {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

Json ResponseBuilder::parsedDelta(const ParsedDelta &d, int32_t choice, int32_t firstCall) const {
  Json delta = Json::object();
  if (!d.reasoning.empty())
    delta["reasoning_content"] = d.reasoning;
  if (!d.content.empty())
    delta["content"] = d.content;
  if (!d.toolCalls.empty()) {
    Json calls = Json::array();
    for (size_t k = 0; k < d.toolCalls.size(); ++k) {
      const int32_t number = firstCall + int32_t(k);
      Json c = Json::object();
      c["index"] = number;
      const Json call = toolCallJson(d.toolCalls[k], choice, number);
      for (auto it = call.begin(); it != call.end(); ++it)
        c[it.key()] = it.value();
      calls.push_back(std::move(c));
    }
    delta["tool_calls"] = std::move(calls);
  }
  return delta;
}

Json ResponseBuilder::choiceJson(int32_t index, const std::string &text, const Json &logprobs,
                                 const Choice *finished, bool calledTools) const {
  Json c = Json::object();
  c["index"] = index;
  bool chat = o_.endpoint == Endpoint::ChatCompletions;
  if (!chat)
    c["text"] = text;
  c["logprobs"] = o_.logprobs ? logprobs : Json();
  c["finish_reason"] = !finished ? Json()
                       : calledTools && o_.toolCallsFinish &&
                               finished->finish == engine::FinishReason::Stop
                           ? Json("tool_calls")
                           : finishReasonJson(finished->finish);
  Json stopReason;
  if (finished && finished->stopString)
    stopReason = *finished->stopString;
  else if (finished && finished->stopTokenId)
    stopReason = *finished->stopTokenId;
  c["stop_reason"] = stopReason;
  return c;
}

Json ResponseBuilder::chunk(Json choices) const {
  bool chat = o_.endpoint == Endpoint::ChatCompletions;
  return Json{{"id", o_.id},
              {"object", chat ? "chat.completion.chunk" : "text_completion"},
              {"created", o_.created},
              {"model", o_.model},
              {"system_fingerprint", fingerprint()},
              {"choices", std::move(choices)}};
}

std::string ResponseBuilder::sse(const Json &data) { return "data: " + dumpJson(data) + "\n\n"; }

std::string ResponseBuilder::streamError(const ApiError &error) {
  return "data: " + error.body() + "\n\n";
}

std::string ResponseBuilder::streamStart() {
  if (o_.endpoint != Endpoint::ChatCompletions)
    return "";
  std::string out;
  for (size_t i = 0; i < choices_.size(); ++i) {
    Json c = Json::object();
    c["index"] = i;
    c["delta"] = {{"role", "assistant"}, {"content", ""}};
    c["logprobs"] = Json();
    c["finish_reason"] = Json();
    out += sse(chunk(Json::array({std::move(c)})));
  }
  return out;
}

std::string ResponseBuilder::streamEvents(const std::vector<ChoiceEvent> &events) {
  std::string out;
  for (const ChoiceEvent &e : events) {
    Choice &c = choices_[size_t(e.choice)];
    const engine::RequestOutput &o = e.output;
    if (o.token)
      c.tokens.push_back(*o.token);
    std::string text = o.text;
    if (!c.echoed) {
      size_t prompt = size_t(e.choice) / size_t(std::max(o_.n, 1));
      if (prompt < o_.echo.size())
        text.insert(0, o_.echo[prompt]);
      c.echoed = true;
    }
    c.text += o.text;
    Json logprobs = emptyLogprobs();
    appendLogprobs(c, o, logprobs);
    if (o.finished) {
      c.finished = true;
      c.finish = o.finishReason;
      c.stopTokenId = o.stopTokenId;
      c.stopString = o.stopString;
      c.cachedPromptTokens = o.usage.cachedPromptTokens;
      if (!o.error.empty() && error_.empty())
        error_ = o.error;
    }
    bool hasLogprobs = o_.logprobs && o.token && o.logprobs;
    Json parsed;
    if (parsing()) {
      if (!c.parser)
        c.parser = std::make_unique<OutputParser>(o_.parsing);
      ParsedDelta d = c.parser->feed(o.text);
      if (o.finished)
        d.append(c.parser->finish());
      if (d.empty() && !hasLogprobs && !o.finished)
        continue;
      parsed = parsedDelta(d, e.choice, c.toolCallsSent);
      c.toolCallsSent += int32_t(d.toolCalls.size());
    } else if (text.empty() && !hasLogprobs && !o.finished) {
      continue;
    }
    Json choice = choiceJson(e.choice, text, logprobs, o.finished ? &c : nullptr,
                             c.toolCallsSent > 0);
    if (o_.endpoint == Endpoint::ChatCompletions) {
      Json delta = Json::object();
      if (parsing())
        delta = std::move(parsed);
      else if (!text.empty() || !o.finished)
        delta["content"] = text;
      // The delta goes right after the index, as in OpenAI's chunks.
      Json ordered = Json::object();
      ordered["index"] = choice["index"];
      ordered["delta"] = std::move(delta);
      for (auto it = choice.begin(); it != choice.end(); ++it)
        if (it.key() != "index")
          ordered[it.key()] = it.value();
      choice = std::move(ordered);
    }
    Json ch = chunk(Json::array({std::move(choice)}));
    if (o_.continuousUsageStats) {
      size_t prompt = size_t(e.choice) / size_t(std::max(o_.n, 1));
      int32_t p = prompt < o_.promptTokens.size() ? o_.promptTokens[prompt] : 0;
      int32_t g = int32_t(c.tokens.size());
      ch["usage"] = {{"prompt_tokens", p}, {"total_tokens", p + g}, {"completion_tokens", g}};
    }
    out += sse(ch);
  }
  return out;
}

std::string ResponseBuilder::streamEnd() {
  std::string out;
  if (o_.includeUsage) {
    Json ch = chunk(Json::array());
    ch["usage"] = usage();
    out += sse(ch);
  }
  return out + "data: [DONE]\n\n";
}

void ResponseBuilder::add(const std::vector<ChoiceEvent> &events) {
  for (const ChoiceEvent &e : events) {
    Choice &c = choices_[size_t(e.choice)];
    const engine::RequestOutput &o = e.output;
    if (o.token)
      c.tokens.push_back(*o.token);
    c.text += o.text;
    appendLogprobs(c, o, logprobs_[size_t(e.choice)]);
    if (o.finished) {
      c.finished = true;
      c.finish = o.finishReason;
      c.stopTokenId = o.stopTokenId;
      c.stopString = o.stopString;
      c.cachedPromptTokens = o.usage.cachedPromptTokens;
      if (!o.error.empty() && error_.empty())
        error_ = o.error;
    }
  }
}

Json ResponseBuilder::response() const {
  bool chat = o_.endpoint == Endpoint::ChatCompletions;
  Json choices = Json::array();
  for (size_t i = 0; i < choices_.size(); ++i) {
    const Choice &c = choices_[i];
    std::string text = c.text;
    size_t prompt = i / size_t(std::max(o_.n, 1));
    if (prompt < o_.echo.size())
      text.insert(0, o_.echo[prompt]);
    Json message = {{"role", "assistant"},
                    {"content", text},
                    {"refusal", Json()},
                    {"tool_calls", Json::array()}};
    bool calledTools = false;
    if (chat && parsing()) {
      // The same parser as a stream's, over the whole text at once.
      OutputParser parser(o_.parsing);
      ParsedDelta d = parser.feed(text);
      d.append(parser.finish());
      message["content"] = d.content.empty() ? Json() : Json(d.content);
      for (size_t k = 0; k < d.toolCalls.size(); ++k)
        message["tool_calls"].push_back(toolCallJson(d.toolCalls[k], int32_t(i), int32_t(k)));
      calledTools = !d.toolCalls.empty();
      if (o_.parsing.reasoning != ReasoningParser::None)
        message["reasoning_content"] = d.reasoning.empty() ? Json() : Json(d.reasoning);
    }
    Json choice = choiceJson(int32_t(i), text, logprobs_[i], &c, calledTools);
    if (chat) {
      Json ordered = Json::object();
      ordered["index"] = i;
      ordered["message"] = std::move(message);
      for (auto it = choice.begin(); it != choice.end(); ++it)
        if (it.key() != "index")
          ordered[it.key()] = it.value();
      choice = std::move(ordered);
    }
    choices.push_back(std::move(choice));
  }
  return Json{{"id", o_.id},
              {"object", chat ? "chat.completion" : "text_completion"},
              {"created", o_.created},
              {"model", o_.model},
              {"system_fingerprint", fingerprint()},
              {"choices", std::move(choices)},
              {"usage", usage()}};
}

int32_t ResponseBuilder::promptTokens() const {
  int32_t total = 0;
  for (int32_t p : o_.promptTokens)
    total += p;
  return total;
}

int32_t ResponseBuilder::completionTokens() const {
  int32_t total = 0;
  for (const Choice &c : choices_)
    total += int32_t(c.tokens.size());
  return total;
}

Json ResponseBuilder::fingerprint() const {
  return o_.systemFingerprint.empty() ? Json() : Json(o_.systemFingerprint);
}

Json ResponseBuilder::usage() const {
  int32_t p = promptTokens(), g = completionTokens();
  // Each prompt is counted once (as prompt_tokens is): its first choice's
  // prefix-cache hits (OpenAI's and vLLM's prompt_tokens_details).
  int32_t cached = 0;
  const size_t n = size_t(std::max(o_.n, 1));
  for (size_t i = 0; i < choices_.size(); i += n)
    cached += choices_[i].cachedPromptTokens;
  return Json{{"prompt_tokens", p},
              {"total_tokens", p + g},
              {"completion_tokens", g},
              {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

std::string ResponseBuilder::finishReasons() const {
  std::string out;
  for (size_t i = 0; i < choices_.size(); ++i) {
    if (i)
      out += ",";
    out += choices_[i].finished ? engine::finishReasonName(choices_[i].finish) : "unfinished";
  }
  return out;
}

} // namespace volt::server
