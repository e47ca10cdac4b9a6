//===- OutputParser.cpp ---------------------------------------------------===//
#include "runtime/server/OutputParser.h"

#include <cctype>
#include <cmath>
#include <cerrno>
#include <cstdlib>

namespace volt::server {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";
constexpr std::string_view kCallOpen = "<tool_call>", kCallClose = "</tool_call>";

bool isSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

bool allSpace(std::string_view s) {
  for (char c : s)
    if (!isSpace(c))
      return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && isSpace(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && isSpace(s.back()))
    s.remove_suffix(1);
  return s;
}

/// The length of the longest end of `text` that `tag` starts with (a tag
/// that may still be arriving), shorter than the tag.
size_t partialTag(std::string_view text, std::string_view tag) {
  for (size_t k = std::min(text.size(), tag.size() - 1); k > 0; --k)
    if (text.substr(text.size() - k) == tag.substr(0, k))
      return k;
  return 0;
}

/// The JSON type a tool's schema gives parameter `param` of function
/// `function` ("" when the schema does not say).
std::string parameterType(const Json *tools, const std::string &function,
                          const std::string &param) {
  if (!tools || !tools->is_array())
    return "";
  for (const Json &tool : *tools) {
    auto fn = tool.find("function");
    if (fn == tool.end() || !fn->is_object())
      continue;
    auto name = fn->find("name");
    if (name == fn->end() || !name->is_string() || name->get_ref<const std::string &>() != function)
      continue;
    auto params = fn->find("parameters");
    if (params == fn->end() || !params->is_object())
      return "";
    auto props = params->find("properties");
    if (props == params->end() || !props->is_object())
      return "";
    auto p = props->find(param);
    if (p == props->end() || !p->is_object())
      return "";
    auto type = p->find("type");
    if (type == p->end())
      return "";
    if (type->is_string())
      return type->get<std::string>();
    if (type->is_array())
      for (const Json &t : *type)
        if (t.is_string() && t.get_ref<const std::string &>() != "null")
          return t.get<std::string>();
    return "";
  }
  return "";
}

/// A qwen3_coder parameter's text as the JSON value its type says; the
/// text itself when it does not read as that type.
Json convertParameter(const std::string &value, const std::string &type) {
  if (value == "null")
    return Json();
  if (type == "integer" || type == "int") {
    errno = 0;
    char *end = nullptr;
    long long v = std::strtoll(value.c_str(), &end, 10);
    if (errno == 0 && !value.empty() && end == value.c_str() + value.size())
      return v;
  } else if (type == "number" || type == "float") {
    errno = 0;
    char *end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (errno == 0 && !value.empty() && end == value.c_str() + value.size() && std::isfinite(v)) {
      if (value.find_first_of(".eE") == std::string::npos)
        return static_cast<long long>(v);
      return v;
    }
  } else if (type == "boolean" || type == "bool") {
    std::string lower;
    for (char c : value)
      lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "true")
      return true;
    if (lower == "false")
      return false;
  } else if (type == "object" || type == "array") {
    Json v = Json::parse(value, nullptr, false);
    if (!v.is_discarded() && (type == "object" ? v.is_object() : v.is_array()))
      return v;
  }
  return value;
}

} // namespace

std::optional<ReasoningParser> reasoningParserByName(std::string_view name) {
  if (name == "qwen3")
    return ReasoningParser::Qwen3;
  return std::nullopt;
}

std::optional<ToolCallParser> toolCallParserByName(std::string_view name) {
  if (name == "hermes")
    return ToolCallParser::Hermes;
  if (name == "qwen3_coder")
    return ToolCallParser::Qwen3Coder;
  return std::nullopt;
}

bool endsInOpenThink(std::string_view prompt) {
  size_t open = prompt.rfind(kThinkOpen);
  if (open == std::string_view::npos)
    return false;
  return prompt.find(kThinkClose, open) == std::string_view::npos;
}

std::string forcedCallOpening(ToolCallParser parser, const std::string &function) {
  std::string out = std::string(kCallOpen) + "\n";
  if (function.empty())
    return out;
  if (parser == ToolCallParser::Hermes)
    return out + "{\"name\": " + Json(function).dump() + ", \"arguments\": ";
  return out + "<function=" + function + ">\n";
}

void ParsedDelta::append(ParsedDelta &&other) {
  reasoning += other.reasoning;
  content += other.content;
  for (ParsedToolCall &c : other.toolCalls)
    toolCalls.push_back(std::move(c));
}

std::optional<ParsedToolCall> parseHermesCall(std::string_view body) {
  Json v = Json::parse(trim(body), nullptr, false);
  if (v.is_discarded() || !v.is_object())
    return std::nullopt;
  auto name = v.find("name");
  if (name == v.end() || !name->is_string() || name->get_ref<const std::string &>().empty())
    return std::nullopt;
  ParsedToolCall call;
  call.name = name->get<std::string>();
  auto args = v.find("arguments");
  if (args == v.end())
    args = v.find("parameters");
  if (args == v.end() || args->is_null()) {
    call.arguments = "{}";
  } else if (args->is_object()) {
    call.arguments = args->dump();
  } else if (args->is_string()) {
    // Arguments written as JSON text: kept when they are an object's.
    Json inner = Json::parse(args->get_ref<const std::string &>(), nullptr, false);
    if (inner.is_discarded() || !inner.is_object())
      return std::nullopt;
    call.arguments = inner.dump();
  } else {
    return std::nullopt;
  }
  return call;
}

std::optional<ParsedToolCall> parseQwen3CoderCall(std::string_view body, const Json *tools) {
  constexpr std::string_view kFunction = "<function=", kFunctionEnd = "</function>";
  constexpr std::string_view kParam = "<parameter=", kParamEnd = "</parameter>";
  size_t at = body.find(kFunction);
  if (at == std::string_view::npos || !allSpace(body.substr(0, at)))
    return std::nullopt;
  size_t nameEnd = body.find('>', at);
  if (nameEnd == std::string_view::npos)
    return std::nullopt;
  std::string name(trim(body.substr(at + kFunction.size(), nameEnd - at - kFunction.size())));
  if (name.empty() || name.find_first_of("\n<") != std::string::npos)
    return std::nullopt;
  std::string_view rest = body.substr(nameEnd + 1);
  Json args = Json::object();
  while (true) {
    size_t p = rest.find(kParam);
    size_t end = rest.find(kFunctionEnd);
    if (p == std::string_view::npos || (end != std::string_view::npos && end < p)) {
      // No more parameters: only space (and the closing tag) may follow.
      if (end == std::string_view::npos)
        return allSpace(rest) ? std::optional<ParsedToolCall>(
                                    ParsedToolCall{name, args.dump()})
                              : std::nullopt;
      if (!allSpace(rest.substr(0, end)) || !allSpace(rest.substr(end + kFunctionEnd.size())))
        return std::nullopt;
      return ParsedToolCall{name, args.dump()};
    }
    if (!allSpace(rest.substr(0, p)))
      return std::nullopt;
    size_t pnameEnd = rest.find('>', p);
    if (pnameEnd == std::string_view::npos)
      return std::nullopt;
    std::string param(trim(rest.substr(p + kParam.size(), pnameEnd - p - kParam.size())));
    if (param.empty() || param.find_first_of("\n<") != std::string::npos)
      return std::nullopt;
    std::string_view valueAndRest = rest.substr(pnameEnd + 1);
    // The value ends at its closing tag, or (a tag left out) at the next
    // parameter, the function's end or the text's end.
    size_t close = valueAndRest.find(kParamEnd);
    size_t next = std::min(valueAndRest.find(kParam), valueAndRest.find(kFunctionEnd));
    size_t valueEnd = std::min(close, next);
    std::string_view value = valueAndRest.substr(0, valueEnd);
    if (!value.empty() && value.front() == '\n')
      value.remove_prefix(1);
    if (!value.empty() && value.back() == '\n')
      value.remove_suffix(1);
    args[param] = convertParameter(std::string(value), parameterType(tools, name, param));
    if (valueEnd == std::string_view::npos)
      return ParsedToolCall{name, args.dump()};
    rest = valueAndRest.substr(valueEnd + (valueEnd == close ? kParamEnd.size() : 0));
  }
}

OutputParser::OutputParser(OutputParserOptions options) : o_(std::move(options)) {
  state_ = o_.reasoning == ReasoningParser::None ? State::Content
           : o_.startInReasoning                 ? State::Reasoning
                                                 : State::Start;
  if (!o_.forcedPrefix.empty()) {
    // What the prompt already holds is parsed, never returned.
    std::string prefix = std::move(o_.forcedPrefix);
    o_.forcedPrefix.clear();
    (void)feed(prefix);
  }
}

bool OutputParser::active() const {
  return o_.reasoning != ReasoningParser::None || o_.tools != ToolCallParser::None;
}

ParsedDelta OutputParser::feed(std::string_view text) {
  ParsedDelta out;
  pending_.append(text);
  run(out, false);
  return out;
}

ParsedDelta OutputParser::finish() {
  ParsedDelta out;
  run(out, true);
  return out;
}

void OutputParser::emitContent(ParsedDelta &out, std::string text) {
  out.content += text;
}

void OutputParser::closeToolCall(ParsedDelta &out, std::string_view body, std::string_view raw) {
  std::optional<ParsedToolCall> call = o_.tools == ToolCallParser::Hermes
                                           ? parseHermesCall(body)
                                           : parseQwen3CoderCall(body, o_.toolDefinitions.get());
  if (call) {
    out.toolCalls.push_back(std::move(*call));
    ++toolCalls_;
  } else {
    // Malformed: the model's text, as written.
    emitContent(out, std::string(raw));
  }
}

void OutputParser::run(ParsedDelta &out, bool final) {
  while (true) {
    switch (state_) {
    case State::Start: {
      size_t lead = 0;
      while (lead < pending_.size() && isSpace(pending_[lead]))
        ++lead;
      std::string_view rest = std::string_view(pending_).substr(lead);
      if (rest.substr(0, kThinkOpen.size()) == kThinkOpen) {
        pending_.erase(0, lead + kThinkOpen.size());
        state_ = State::Reasoning;
        continue;
      }
      if (!final && kThinkOpen.substr(0, rest.size()) == rest)
        return; // may still become <think>
      state_ = State::Content;
      continue;
    }
    case State::Reasoning: {
      size_t at = pending_.find(kThinkClose);
      if (at != std::string::npos) {
        out.reasoning += pending_.substr(0, at);
        pending_.erase(0, at + kThinkClose.size());
        state_ = State::Content;
        continue;
      }
      size_t keep = final ? 0 : partialTag(pending_, kThinkClose);
      out.reasoning += pending_.substr(0, pending_.size() - keep);
      pending_.erase(0, pending_.size() - keep);
      return;
    }
    case State::Content: {
      // After a call, space is held until text follows it (and dropped at
      // the end), so that a stream and a whole response agree.
      if (toolCalls_ > 0 && allSpace(pending_)) {
        if (final)
          pending_.clear();
        return;
      }
      if (o_.tools == ToolCallParser::None) {
        emitContent(out, std::move(pending_));
        pending_.clear();
        return;
      }
      size_t at = pending_.find(kCallOpen);
      if (at != std::string::npos) {
        // After a call, space before the next one is not content.
        std::string_view before = std::string_view(pending_).substr(0, at);
        if (toolCalls_ > 0)
          while (!before.empty() && isSpace(before.back()))
            before.remove_suffix(1);
        emitContent(out, std::string(before));
        pending_.erase(0, at + kCallOpen.size());
        state_ = State::ToolCall;
        continue;
      }
      size_t keep = final ? 0 : partialTag(pending_, kCallOpen);
      if (toolCalls_ > 0) {
        // Trailing space is held: it is dropped before a next call and at
        // the end.
        size_t end = pending_.size() - keep;
        while (end > 0 && isSpace(pending_[end - 1]))
          --end;
        emitContent(out, pending_.substr(0, end));
        pending_.erase(0, final ? pending_.size() : end);
        return;
      }
      emitContent(out, pending_.substr(0, pending_.size() - keep));
      pending_.erase(0, pending_.size() - keep);
      return;
    }
    case State::ToolCall: {
      size_t at = pending_.find(kCallClose);
      if (at != std::string::npos) {
        std::string body = pending_.substr(0, at);
        std::string raw = std::string(kCallOpen) + body + std::string(kCallClose);
        pending_.erase(0, at + kCallClose.size());
        state_ = State::Content;
        closeToolCall(out, body, raw);
        continue;
      }
      if (!final)
        return;
      std::string body = std::move(pending_);
      pending_.clear();
      state_ = State::Content;
      closeToolCall(out, body, std::string(kCallOpen) + body);
      return;
    }
    }
  }
}

} // namespace volt::server
