//===- Parser.h - tokens to the statements of a chat template --*- C++ -*-===//
//
// A recursive-descent parser with jinja2's grammar and precedence. It also
// checks, while parsing, that every filter, test, method and tag the
// template uses is one the interpreter implements, so that an unsupported
// template is rejected when it is compiled into a plan rather than when a
// user's request first reaches the unsupported branch.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/chat/Ast.h"
#include "runtime/chat/Lexer.h"
#include "runtime/support/Status.h"

#include <string>
#include <vector>

namespace volt::chat {

/// How deeply expressions and blocks may nest before parsing stops with an
/// error, so that a hostile template cannot exhaust the stack.
inline constexpr int kMaxNesting = 128;

/// Parses a token stream from `tokenize`. Errors name `origin:line:column`.
Result<StmtList> parseTemplate(const std::vector<Token> &tokens, const std::string &origin);

} // namespace volt::chat
