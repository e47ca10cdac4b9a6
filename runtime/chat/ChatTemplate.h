//===- ChatTemplate.h - a model's chat template, parsed and runnable -*- C++ -*-===//
//
// A model directory's `chat_template` (tokenizer_config.json, or the newer
// chat_template.jinja file) is a Jinja2 program that turns a conversation
// into the prompt text. volt renders it with its own interpreter so that
// the prompt is byte-for-byte what Hugging Face's
// `tokenizer.apply_chat_template(..., tokenize=False)` gives. Unsupported
// constructs are rejected by `parse`, with the line and column.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/chat/Interpreter.h"
#include "runtime/support/Status.h"

#include <nlohmann/json.hpp>

#include <ctime>
#include <memory>
#include <optional>
#include <string>

namespace volt::chat {

class ChatTemplate {
public:
  /// Parses `source`. `origin` names the template in messages, e.g.
  /// "models/qwen3/tokenizer_config.json chat_template".
  static Result<ChatTemplate> parse(std::string source, std::string origin);

  /// Renders a conversation the way HF's apply_chat_template does: the
  /// template sees `messages`, `tools` (none when null), `documents` (none
  /// unless given in `extraContext`), `add_generation_prompt`, and every
  /// key of `extraContext` (bos_token, eos_token, enable_thinking, ...).
  /// Objects keep their key order, which `tojson` output depends on (a
  /// plain nlohmann::json converts implicitly, with its keys sorted).
  Result<std::string> apply(const nlohmann::ordered_json &messages, bool addGenerationPrompt,
                            const nlohmann::ordered_json *tools,
                            const nlohmann::ordered_json &extraContext) const;

  /// Renders with exactly the variables of `context` (an object).
  Result<std::string> render(const nlohmann::ordered_json &context) const;

  /// Fixes the time `strftime_now` formats (local time); without it the
  /// current time is used. Tests use this to make renders reproducible.
  void setFixedTime(std::optional<std::tm> now) { now_ = now; }
  void setLimits(const RenderLimits &limits) { limits_ = limits; }

  const std::string &source() const { return *source_; }
  const std::string &origin() const { return origin_; }

private:
  ChatTemplate() = default;
  std::shared_ptr<const std::string> source_;
  std::string origin_;
  std::shared_ptr<const StmtList> body_;
  std::optional<std::tm> now_;
  RenderLimits limits_;
};

/// Converts JSON to a template value. Fails on nesting deeper than
/// `maxDepth` and on integers beyond int64; `what` names the input.
Result<Value> valueFromJson(const nlohmann::ordered_json &json, const std::string &what,
                            uint32_t maxDepth);

/// Loads the chat template of a Hugging Face model directory:
/// chat_template.jinja when present (as transformers prefers it), else the
/// `chat_template` of tokenizer_config.json, which is a string or a list of
/// {"name", "template"} from which `name` is chosen.
Result<ChatTemplate> loadFromModelDir(const std::string &dir, const std::string &name = "default");

/// The special tokens of tokenizer_config.json (bos_token, eos_token,
/// unk_token, pad_token, ...) as strings, which HF passes to the template.
/// Tokens given as {"content": ...} objects are flattened to their content.
Result<nlohmann::ordered_json> loadSpecialTokens(const std::string &dir);

} // namespace volt::chat
