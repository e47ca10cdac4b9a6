//===- Lexer.h - chat template source to tokens ----------------*- C++ -*-===//
//
// Splits template text into text runs and the tokens inside `{{ }}` and
// `{% %}`, applying whitespace control exactly as jinja2's lexer does with
// Hugging Face's settings: `trim_blocks` (the newline after a block tag is
// dropped), `lstrip_blocks` (spaces before a block tag on its own line are
// dropped), `-` on a tag (all whitespace on that side is dropped), `+` (the
// lstrip is suppressed), comments removed, `{% raw %}` kept verbatim, and
// one trailing newline of the template removed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace volt::chat {

struct Token {
  enum class Type : uint8_t {
    Text,          ///< template text to copy to the output
    VariableBegin, ///< `{{`
    VariableEnd,   ///< `}}`
    BlockBegin,    ///< `{%`
    BlockEnd,      ///< `%}`
    Name,
    String,  ///< `text` holds the unescaped value
    Integer, ///< `integer` holds the value
    Float,   ///< `number` holds the value
    Operator,
    End,
  };
  Type type = Type::End;
  std::string text;
  int64_t integer = 0;
  double number = 0;
  int line = 1;
  int column = 1;

  bool isOperator(const char *op) const { return type == Type::Operator && text == op; }
  bool isName(const char *name) const { return type == Type::Name && text == name; }
};

/// Tokenizes `source`. Errors name `origin:line:column`.
Result<std::vector<Token>> tokenize(const std::string &source, const std::string &origin);

} // namespace volt::chat
