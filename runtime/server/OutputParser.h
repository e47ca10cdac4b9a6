//===- OutputParser.h - reasoning and tool calls in a chat output -*- C++ -*-===//
//
// `--reasoning-parser qwen3` and `--tool-call-parser hermes|qwen3_coder`
// split what a chat model writes into what OpenAI's API returns:
// `reasoning_content` (the text inside <think>...</think>), `content`, and
// `tool_calls`. The parser is fed the output's text as it is detokenized,
// in pieces of any size (a tag may arrive one character at a time), and
// returns what each piece settles; feeding the whole text at once gives the
// same result as feeding it piece by piece, which is what makes a stream
// and a whole response agree.
//
// Formats (facts of the models' chat templates):
//   - reasoning: `<think>` ... `</think>`. The output is reasoning from its
//     start when the prompt ends inside an open `<think>` (Qwen3.5 / 3.6
//     templates with thinking on) or when the output begins with `<think>`
//     (Qwen3); else it is content.
//   - hermes: `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`,
//     any number of them.
//   - qwen3_coder: `<tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n
//     </parameter>\n...</function>\n</tool_call>`; each VALUE is converted
//     by the type its tool's JSON schema gives the parameter.
// A call that does not parse is given back as plain content, never an
// error. A call still open when the output ends is parsed as it stands.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace volt::server {

enum class ReasoningParser { None, Qwen3 };
enum class ToolCallParser { None, Hermes, Qwen3Coder };

/// "qwen3" -> Qwen3; nullopt for an unknown name.
std::optional<ReasoningParser> reasoningParserByName(std::string_view name);
/// "hermes", "qwen3_coder" -> the parser; nullopt for an unknown name.
std::optional<ToolCallParser> toolCallParserByName(std::string_view name);

struct ParsedToolCall {
  std::string name;
  /// The arguments as a JSON object's text.
  std::string arguments;
};

/// What one piece of output settled.
struct ParsedDelta {
  std::string reasoning;
  std::string content;
  std::vector<ParsedToolCall> toolCalls;
  bool empty() const { return reasoning.empty() && content.empty() && toolCalls.empty(); }
  void append(ParsedDelta &&other);
};

struct OutputParserOptions {
  ReasoningParser reasoning = ReasoningParser::None;
  ToolCallParser tools = ToolCallParser::None;
  /// The prompt ends inside an open `<think>`.
  bool startInReasoning = false;
  /// Text the prompt ends with that belongs to the output (a tool call's
  /// opening forced by tool_choice): parsed first, never returned as text.
  std::string forcedPrefix;
  /// The request's `tools` (qwen3_coder reads its parameters' types);
  /// may be null.
  std::shared_ptr<const nlohmann::ordered_json> toolDefinitions;
};

class OutputParser {
public:
  explicit OutputParser(OutputParserOptions options);

  /// Whether this parser changes anything (a reasoning or tool parser is on).
  bool active() const;
  /// The next piece of output text.
  ParsedDelta feed(std::string_view text);
  /// The output has ended: settles what was held back.
  ParsedDelta finish();
  /// Tool calls returned so far.
  int32_t toolCallCount() const { return toolCalls_; }

private:
  enum class State { Start, Reasoning, Content, ToolCall };
  void run(ParsedDelta &out, bool final);
  void emitContent(ParsedDelta &out, std::string text);
  void closeToolCall(ParsedDelta &out, std::string_view body, std::string_view raw);

  OutputParserOptions o_;
  State state_;
  /// Text not yet settled (a tag may be starting at its end), or the open
  /// tool call's text after `<tool_call>`.
  std::string pending_;
  int32_t toolCalls_ = 0;
};

/// Whether a rendered prompt ends inside an open `<think>` (its last
/// `<think>` has no `</think>` after it).
bool endsInOpenThink(std::string_view prompt);
/// The opening of a call in `parser`'s format that tool_choice "required"
/// (`function` empty) or a named choice puts at the end of the prompt.
std::string forcedCallOpening(ToolCallParser parser, const std::string &function);

/// The body of a hermes call (between the tags) as a call; nullopt when it
/// is not a JSON object with a string "name" and object (or JSON-text)
/// "arguments".
std::optional<ParsedToolCall> parseHermesCall(std::string_view body);
/// The body of a qwen3_coder call; `tools` gives the parameters' types.
std::optional<ParsedToolCall> parseQwen3CoderCall(std::string_view body,
                                                  const nlohmann::ordered_json *tools);

} // namespace volt::server
