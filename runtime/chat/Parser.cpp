//===- Parser.cpp - tokens to the statements of a chat template -----------===//
#include "runtime/chat/Parser.h"

#include "runtime/chat/Builtins.h"
#include "runtime/support/Strings.h"

#include <initializer_list>

namespace volt::chat {

namespace {

struct ParseError {
  std::string message;
};

using TT = Token::Type;

class Parser {
public:
  Parser(const std::vector<Token> &tokens, const std::string &origin)
      : tokens_(tokens), origin_(origin) {}

  StmtList parse() {
    StmtList body = subparse(nullptr);
    if (current().type != TT::End)
      fail(current(), "unexpected " + describe(current()));
    return body;
  }

private:
  const std::vector<Token> &tokens_;
  const std::string &origin_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loopDepth_ = 0;

  /// Counts nesting for the duration of one recursive step.
  struct Nest {
    Parser &p;
    Nest(Parser &parser, const Token &at) : p(parser) {
      if (++p.depth_ > kMaxNesting)
        p.fail(at, "the template nests deeper than " + std::to_string(kMaxNesting) + " levels");
    }
    ~Nest() { --p.depth_; }
  };

  [[noreturn]] void fail(const Token &at, const std::string &message) const {
    throw ParseError{origin_ + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
                     ": " + message};
  }

  static std::string describe(const Token &t) {
    switch (t.type) {
    case TT::Text:
      return "template text";
    case TT::VariableBegin:
      return "'{{'";
    case TT::VariableEnd:
      return "'}}'";
    case TT::BlockBegin:
      return "'{%'";
    case TT::BlockEnd:
      return "'%}'";
    case TT::Name:
    case TT::Operator:
      return "'" + t.text + "'";
    case TT::String:
      return "string literal";
    case TT::Integer:
    case TT::Float:
      return "number";
    case TT::End:
      return "end of template";
    }
    return "token";
  }

  const Token &current() const { return tokens_[pos_]; }
  const Token &look() const { return tokens_[pos_ + 1 < tokens_.size() ? pos_ + 1 : pos_]; }
  const Token &next() {
    const Token &t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size())
      ++pos_;
    return t;
  }
  bool skipOperator(const char *op) {
    if (!current().isOperator(op))
      return false;
    next();
    return true;
  }
  bool skipName(const char *name) {
    if (!current().isName(name))
      return false;
    next();
    return true;
  }
  const Token &expectType(TT type, const char *what) {
    if (current().type != type)
      fail(current(), std::string("expected ") + what + ", found " + describe(current()));
    return next();
  }
  const Token &expectOperator(const char *op) {
    if (!current().isOperator(op))
      fail(current(), std::string("expected '") + op + "', found " + describe(current()));
    return next();
  }
  const Token &expectName(const char *name) {
    if (!current().isName(name))
      fail(current(), std::string("expected '") + name + "', found " + describe(current()));
    return next();
  }

  ExprPtr makeExpr(ExprKind kind, const Token &at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->column = at.column;
    return e;
  }
  StmtPtr makeStmt(StmtKind kind, const Token &at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = at.line;
    s->column = at.column;
    return s;
  }

  // --- statements -------------------------------------------------------

  bool atEndToken(const std::vector<std::string> *endTokens) const {
    if (!endTokens || current().type != TT::Name)
      return false;
    for (const std::string &e : *endTokens)
      if (current().text == e)
        return true;
    return false;
  }

  StmtList subparse(const std::vector<std::string> *endTokens) {
    StmtList body;
    while (current().type != TT::End) {
      const Token &t = current();
      if (t.type == TT::Text) {
        auto s = makeStmt(StmtKind::Text, t);
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.type == TT::VariableBegin) {
        next();
        auto s = makeStmt(StmtKind::Output, t);
        s->expr = parseTuple(true, {}, false);
        expectType(TT::VariableEnd, "'}}'");
        body.push_back(std::move(s));
      } else if (t.type == TT::BlockBegin) {
        next();
        if (atEndToken(endTokens))
          return body;
        parseStatement(body);
        expectType(TT::BlockEnd, "'%}'");
      } else {
        fail(t, "unexpected " + describe(t));
      }
    }
    return body;
  }

  /// The body of a block up to one of `endTokens`; the end token stays
  /// current unless `dropNeedle`.
  StmtList parseStatements(const Token &opener, const std::vector<std::string> &endTokens,
                           bool dropNeedle) {
    Nest nest(*this, opener);
    skipOperator(":");
    expectType(TT::BlockEnd, "'%}'");
    StmtList body = subparse(&endTokens);
    if (current().type == TT::End) {
      std::vector<std::string> quoted;
      quoted.reserve(endTokens.size());
      for (const std::string &e : endTokens)
        quoted.push_back("'" + e + "'");
      fail(current(), "unexpected end of template: expected " + joinList(quoted, " or ") +
                          " to close the '" + opener.text + "' opened at " +
                          std::to_string(opener.line) + ":" + std::to_string(opener.column));
    }
    if (dropNeedle)
      next();
    return body;
  }

  void parseStatement(StmtList &out) {
    const Token &t = current();
    if (t.type != TT::Name)
      fail(t, "expected a tag name, found " + describe(t));
    const std::string &tag = t.text;
    if (tag == "if")
      out.push_back(parseIf());
    else if (tag == "for")
      out.push_back(parseFor());
    else if (tag == "set")
      out.push_back(parseSet());
    else if (tag == "macro")
      out.push_back(parseMacro());
    else if (tag == "filter")
      out.push_back(parseFilterBlock());
    else if (tag == "with")
      out.push_back(parseWith());
    else if (tag == "generation")
      out.push_back(parseGeneration());
    else if (tag == "print")
      parsePrint(out);
    else if (tag == "break" || tag == "continue") {
      if (loopDepth_ == 0)
        fail(t, "'" + tag + "' outside of a for loop");
      out.push_back(makeStmt(tag == "break" ? StmtKind::Break : StmtKind::Continue, next()));
    } else if (tag == "block" || tag == "extends" || tag == "include" || tag == "import" ||
               tag == "from" || tag == "call" || tag == "autoescape")
      fail(t, "unsupported tag '" + tag + "'");
    else if (tag.rfind("end", 0) == 0 || tag == "elif" || tag == "else")
      fail(t, "unexpected '" + tag + "' (no open block that it closes)");
    else
      fail(t, "unknown tag '" + tag + "'");
  }

  StmtPtr parseIf() {
    const Token &opener = next();
    auto result = makeStmt(StmtKind::If, opener);
    while (true) {
      ExprPtr test = parseTuple(false, {}, false);
      StmtList body = parseStatements(opener, {"elif", "else", "endif"}, false);
      result->branches.emplace_back(std::move(test), std::move(body));
      const Token &end = next();
      if (end.text == "elif")
        continue;
      if (end.text == "else")
        result->elseBody = parseStatements(opener, {"endif"}, true);
      break;
    }
    return result;
  }

  StmtPtr parseFor() {
    const Token &opener = next();
    auto s = makeStmt(StmtKind::For, opener);
    s->target = parseAssignTarget(true, false, {"in"});
    expectName("in");
    s->expr = parseTuple(false, {"recursive"}, false);
    if (skipName("if"))
      s->condition = parseExpression(true);
    if (current().isName("recursive"))
      fail(current(), "unsupported for-loop option 'recursive'");
    ++loopDepth_;
    s->body = parseStatements(opener, {"endfor", "else"}, false);
    --loopDepth_;
    if (next().text == "else")
      s->elseBody = parseStatements(opener, {"endfor"}, true);
    return s;
  }

  StmtPtr parseSet() {
    const Token &opener = next();
    AssignTarget target = parseAssignTarget(true, true, {});
    if (skipOperator("=")) {
      auto s = makeStmt(StmtKind::Set, opener);
      s->target = std::move(target);
      s->expr = parseTuple(true, {}, false);
      return s;
    }
    auto s = makeStmt(StmtKind::SetBlock, opener);
    s->target = std::move(target);
    if (current().isOperator("|"))
      s->expr = parseFilterChain(nullptr, false);
    s->body = parseStatements(opener, {"endset"}, true);
    return s;
  }

  StmtPtr parseMacro() {
    const Token &opener = next();
    auto s = makeStmt(StmtKind::Macro, opener);
    s->name = expectType(TT::Name, "a macro name").text;
    expectOperator("(");
    while (!current().isOperator(")")) {
      if (!s->params.empty())
        expectOperator(",");
      s->params.push_back(expectType(TT::Name, "a parameter name").text);
      if (skipOperator("="))
        s->defaults.push_back(parseExpression(true));
      else if (!s->defaults.empty() && s->defaults.back())
        fail(current(), "a parameter without a default follows one with a default");
      else
        s->defaults.push_back(nullptr);
    }
    expectOperator(")");
    int savedLoops = loopDepth_;
    loopDepth_ = 0;
    s->body = parseStatements(opener, {"endmacro"}, true);
    loopDepth_ = savedLoops;
    return s;
  }

  StmtPtr parseFilterBlock() {
    const Token &opener = next();
    auto s = makeStmt(StmtKind::FilterBlock, opener);
    s->expr = parseFilterChain(nullptr, true);
    s->body = parseStatements(opener, {"endfilter"}, true);
    return s;
  }

  StmtPtr parseWith() {
    const Token &opener = next();
    auto s = makeStmt(StmtKind::With, opener);
    while (current().type != TT::BlockEnd) {
      if (!s->withTargets.empty())
        expectOperator(",");
      s->withTargets.push_back(parseAssignTarget(true, false, {}));
      expectOperator("=");
      s->withValues.push_back(parseExpression(true));
    }
    s->body = parseStatements(opener, {"endwith"}, true);
    return s;
  }

  StmtPtr parseGeneration() {
    const Token &opener = next();
    auto s = makeStmt(StmtKind::Scope, opener);
    s->body = parseStatements(opener, {"endgeneration"}, true);
    return s;
  }

  void parsePrint(StmtList &out) {
    next();
    bool first = true;
    while (current().type != TT::BlockEnd) {
      if (!first)
        expectOperator(",");
      first = false;
      auto s = makeStmt(StmtKind::Output, current());
      s->expr = parseExpression(true);
      out.push_back(std::move(s));
    }
  }

  AssignTarget parseAssignTarget(bool withTuple, bool withNamespace,
                                 const std::vector<std::string> &extraEnd) {
    AssignTarget target;
    if (withNamespace && current().type == TT::Name && look().isOperator(".")) {
      target.kind = AssignTarget::Kind::NamespaceAttribute;
      target.names.push_back(next().text);
      next();
      target.attribute = expectType(TT::Name, "an attribute name").text;
      return target;
    }
    const Token &start = current();
    bool parenthesized = skipOperator("(");
    bool tuple = parenthesized;
    while (true) {
      if (!target.names.empty()) {
        if (!current().isOperator(","))
          break;
        next();
        tuple = true;
      }
      if (current().type == TT::VariableEnd || current().type == TT::BlockEnd ||
          current().isOperator(")") ||
          (current().type == TT::Name && !extraEnd.empty() && current().text == extraEnd[0]))
        break;
      const Token &name = current();
      if (name.type != TT::Name)
        fail(name, "can only assign to names, found " + describe(name));
      if (name.text == "true" || name.text == "false" || name.text == "none" ||
          name.text == "True" || name.text == "False" || name.text == "None")
        fail(name, "cannot assign to '" + name.text + "'");
      target.names.push_back(next().text);
      if (!withTuple)
        break;
    }
    if (parenthesized)
      expectOperator(")");
    if (target.names.empty())
      fail(start, "expected a name to assign to, found " + describe(start));
    if (tuple)
      target.kind = AssignTarget::Kind::Tuple;
    return target;
  }

  // --- expressions ------------------------------------------------------

  bool isTupleEnd(const std::vector<std::string> &extraEnd) const {
    const Token &t = current();
    if (t.type == TT::VariableEnd || t.type == TT::BlockEnd || t.isOperator(")"))
      return true;
    if (t.type == TT::Name)
      for (const std::string &e : extraEnd)
        if (t.text == e)
          return true;
    return false;
  }

  ExprPtr parseTuple(bool withCondExpr, const std::vector<std::string> &extraEnd,
                     bool explicitParentheses) {
    const Token &start = current();
    std::vector<ExprPtr> items;
    bool isTuple = false;
    while (true) {
      if (!items.empty())
        expectOperator(",");
      if (isTupleEnd(extraEnd))
        break;
      items.push_back(parseExpression(withCondExpr));
      if (current().isOperator(","))
        isTuple = true;
      else
        break;
    }
    if (!isTuple) {
      if (!items.empty())
        return std::move(items[0]);
      if (!explicitParentheses)
        fail(current(), "expected an expression, found " + describe(current()));
    }
    auto e = makeExpr(ExprKind::Tuple, start);
    e->args = std::move(items);
    return e;
  }

  ExprPtr parseExpression(bool withCondExpr) {
    Nest nest(*this, current());
    return withCondExpr ? parseCondExpr() : parseOr();
  }

  ExprPtr parseCondExpr() {
    ExprPtr expr = parseOr();
    while (current().isName("if")) {
      const Token &at = next();
      auto e = makeExpr(ExprKind::CondExpr, at);
      e->target = parseOr();
      e->args.push_back(std::move(expr));
      if (skipName("else"))
        e->args.push_back(parseCondExpr());
      else
        e->args.push_back(nullptr);
      expr = std::move(e);
    }
    return expr;
  }

  ExprPtr parseOr() {
    ExprPtr left = parseAnd();
    while (current().isName("or")) {
      auto e = makeExpr(ExprKind::Or, next());
      e->args.push_back(std::move(left));
      e->args.push_back(parseAnd());
      left = std::move(e);
    }
    return left;
  }

  ExprPtr parseAnd() {
    ExprPtr left = parseNot();
    while (current().isName("and")) {
      auto e = makeExpr(ExprKind::And, next());
      e->args.push_back(std::move(left));
      e->args.push_back(parseNot());
      left = std::move(e);
    }
    return left;
  }

  ExprPtr parseNot() {
    if (current().isName("not")) {
      Nest nest(*this, current());
      auto e = makeExpr(ExprKind::Not, next());
      e->target = parseNot();
      return e;
    }
    return parseCompare();
  }

  ExprPtr parseCompare() {
    const Token &start = current();
    ExprPtr expr = parseMath1();
    ExprPtr cmp;
    while (true) {
      const Token &t = current();
      CompareOp op;
      if (t.isOperator("=="))
        op = CompareOp::Eq;
      else if (t.isOperator("!="))
        op = CompareOp::Ne;
      else if (t.isOperator("<"))
        op = CompareOp::Lt;
      else if (t.isOperator("<="))
        op = CompareOp::Le;
      else if (t.isOperator(">"))
        op = CompareOp::Gt;
      else if (t.isOperator(">="))
        op = CompareOp::Ge;
      else if (t.isName("in"))
        op = CompareOp::In;
      else if (t.isName("not") && look().isName("in")) {
        next();
        op = CompareOp::NotIn;
      } else
        break;
      next();
      if (!cmp) {
        cmp = makeExpr(ExprKind::Compare, start);
        cmp->target = std::move(expr);
      }
      cmp->compareOps.push_back(op);
      cmp->args.push_back(parseMath1());
    }
    return cmp ? std::move(cmp) : std::move(expr);
  }

  ExprPtr binary(BinaryOp op, const Token &at, ExprPtr left, ExprPtr right) {
    auto e = makeExpr(ExprKind::Binary, at);
    e->binaryOp = op;
    e->args.push_back(std::move(left));
    e->args.push_back(std::move(right));
    return e;
  }

  ExprPtr parseMath1() {
    ExprPtr left = parseConcat();
    while (current().isOperator("+") || current().isOperator("-")) {
      const Token &at = next();
      left = binary(at.text == "+" ? BinaryOp::Add : BinaryOp::Sub, at, std::move(left),
                    parseConcat());
    }
    return left;
  }

  ExprPtr parseConcat() {
    const Token &start = current();
    ExprPtr first = parseMath2();
    if (!current().isOperator("~"))
      return first;
    auto e = makeExpr(ExprKind::Concat, start);
    e->args.push_back(std::move(first));
    while (skipOperator("~"))
      e->args.push_back(parseMath2());
    return e;
  }

  ExprPtr parseMath2() {
    ExprPtr left = parsePow();
    while (true) {
      const Token &t = current();
      BinaryOp op;
      if (t.isOperator("*"))
        op = BinaryOp::Mul;
      else if (t.isOperator("/"))
        op = BinaryOp::Div;
      else if (t.isOperator("//"))
        op = BinaryOp::FloorDiv;
      else if (t.isOperator("%"))
        op = BinaryOp::Mod;
      else
        break;
      const Token &at = next();
      left = binary(op, at, std::move(left), parsePow());
    }
    return left;
  }

  ExprPtr parsePow() {
    ExprPtr left = parseUnary(true);
    while (current().isOperator("**")) {
      const Token &at = next();
      left = binary(BinaryOp::Pow, at, std::move(left), parseUnary(true));
    }
    return left;
  }

  ExprPtr parseUnary(bool withFilter) {
    Nest nest(*this, current());
    ExprPtr node;
    if (current().isOperator("-") || current().isOperator("+")) {
      const Token &at = next();
      node = makeExpr(at.text == "-" ? ExprKind::Neg : ExprKind::Pos, at);
      node->target = parseUnary(false);
    } else {
      node = parsePrimary();
    }
    node = parsePostfix(std::move(node));
    if (withFilter)
      node = parseFilterExpr(std::move(node));
    return node;
  }

  ExprPtr parsePrimary() {
    const Token &t = current();
    if (t.type == TT::Name) {
      next();
      if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False") {
        auto e = makeExpr(ExprKind::Const, t);
        e->constant = Value::boolean(t.text == "true" || t.text == "True");
        return e;
      }
      if (t.text == "none" || t.text == "None") {
        auto e = makeExpr(ExprKind::Const, t);
        e->constant = Value::none();
        return e;
      }
      auto e = makeExpr(ExprKind::Name, t);
      e->name = t.text;
      return e;
    }
    if (t.type == TT::String) {
      std::string text;
      while (current().type == TT::String)
        text += next().text;
      auto e = makeExpr(ExprKind::Const, t);
      e->constant = Value::string(std::move(text));
      return e;
    }
    if (t.type == TT::Integer || t.type == TT::Float) {
      next();
      auto e = makeExpr(ExprKind::Const, t);
      e->constant = t.type == TT::Integer ? Value::integer(t.integer) : Value::number(t.number);
      return e;
    }
    if (t.isOperator("(")) {
      next();
      ExprPtr e = parseTuple(true, {}, true);
      expectOperator(")");
      return e;
    }
    if (t.isOperator("[")) {
      next();
      auto e = makeExpr(ExprKind::List, t);
      while (!current().isOperator("]")) {
        if (!e->args.empty())
          expectOperator(",");
        if (current().isOperator("]"))
          break;
        e->args.push_back(parseExpression(true));
      }
      expectOperator("]");
      return e;
    }
    if (t.isOperator("{")) {
      next();
      auto e = makeExpr(ExprKind::Dict, t);
      while (!current().isOperator("}")) {
        if (!e->args.empty())
          expectOperator(",");
        if (current().isOperator("}"))
          break;
        e->args.push_back(parseExpression(true));
        expectOperator(":");
        e->args.push_back(parseExpression(true));
      }
      expectOperator("}");
      return e;
    }
    fail(t, "unexpected " + describe(t));
  }

  ExprPtr parsePostfix(ExprPtr node) {
    while (true) {
      if (current().isOperator(".") || current().isOperator("["))
        node = parseSubscript(std::move(node));
      else if (current().isOperator("("))
        node = parseCall(std::move(node));
      else
        return node;
    }
  }

  ExprPtr parseFilterExpr(ExprPtr node) {
    while (true) {
      if (current().isOperator("|"))
        node = parseFilterChain(std::move(node), false);
      else if (current().isName("is"))
        node = parseTest(std::move(node));
      else if (current().isOperator("("))
        node = parseCall(std::move(node));
      else
        return node;
    }
  }

  ExprPtr parseSubscript(ExprPtr node) {
    const Token &at = next();
    if (at.text == ".") {
      const Token &attr = next();
      if (attr.type == TT::Name) {
        auto e = makeExpr(ExprKind::Getattr, at);
        e->target = std::move(node);
        e->name = attr.text;
        return e;
      }
      if (attr.type != TT::Integer)
        fail(attr, "expected an attribute name or number after '.', found " + describe(attr));
      auto e = makeExpr(ExprKind::Getitem, at);
      e->target = std::move(node);
      auto index = makeExpr(ExprKind::Const, attr);
      index->constant = Value::integer(attr.integer);
      e->args.push_back(std::move(index));
      return e;
    }
    std::vector<ExprPtr> args;
    while (!current().isOperator("]")) {
      if (!args.empty())
        expectOperator(",");
      args.push_back(parseSubscribed());
    }
    expectOperator("]");
    auto e = makeExpr(ExprKind::Getitem, at);
    e->target = std::move(node);
    if (args.size() == 1) {
      e->args.push_back(std::move(args[0]));
    } else {
      auto tuple = makeExpr(ExprKind::Tuple, at);
      tuple->args = std::move(args);
      e->args.push_back(std::move(tuple));
    }
    return e;
  }

  ExprPtr parseSubscribed() {
    const Token &start = current();
    ExprPtr first;
    if (!current().isOperator(":")) {
      first = parseExpression(true);
      if (!current().isOperator(":"))
        return first;
    }
    next();
    auto slice = makeExpr(ExprKind::Slice, start);
    slice->args.push_back(std::move(first));
    auto endsPart = [&] { return current().isOperator("]") || current().isOperator(","); };
    if (current().isOperator(":") || endsPart())
      slice->args.push_back(nullptr);
    else
      slice->args.push_back(parseExpression(true));
    if (skipOperator(":") && !endsPart())
      slice->args.push_back(parseExpression(true));
    else
      slice->args.push_back(nullptr);
    return slice;
  }

  void parseCallArgs(Expr &call) {
    expectOperator("(");
    bool requireComma = false;
    while (!current().isOperator(")")) {
      if (requireComma) {
        expectOperator(",");
        if (current().isOperator(")"))
          break;
      }
      if (current().isOperator("*") || current().isOperator("**"))
        fail(current(), "unsupported argument unpacking ('*' or '**') in a call");
      if (current().type == TT::Name && look().isOperator("=")) {
        std::string key = next().text;
        next();
        call.kwargs.emplace_back(std::move(key), parseExpression(true));
      } else {
        if (!call.kwargs.empty())
          fail(current(), "a positional argument follows a keyword argument");
        call.args.push_back(parseExpression(true));
      }
      requireComma = true;
    }
    expectOperator(")");
  }

  ExprPtr parseCall(ExprPtr node) {
    const Token &at = current();
    if (node->kind == ExprKind::Getattr && methodSupport(node->name) == Support::Unsupported)
      fail(at, "unsupported method '" + node->name + "'");
    if (node->kind == ExprKind::Name && globalSupport(node->name) == Support::Unsupported)
      fail(at, "unsupported function '" + node->name + "'");
    auto e = makeExpr(ExprKind::Call, at);
    e->target = std::move(node);
    parseCallArgs(*e);
    return e;
  }

  std::string dottedName(const char *what) {
    std::string name = expectType(TT::Name, what).text;
    while (skipOperator("."))
      name += "." + expectType(TT::Name, what).text;
    return name;
  }

  void checkName(const Token &at, const std::string &name, bool filter) {
    Support s = filter ? filterSupport(name) : testSupport(name);
    const char *what = filter ? "filter" : "test";
    if (s == Support::Unsupported)
      fail(at, std::string("unsupported ") + what + " '" + name + "'");
    if (s == Support::Unknown) {
      std::string message = std::string("unknown ") + what + " '" + name + "'";
      if (auto m = closestMatch(name, filter ? supportedFilters() : supportedTests()))
        message += " (did you mean '" + *m + "'?)";
      fail(at, message);
    }
  }

  ExprPtr parseFilterChain(ExprPtr node, bool startInline) {
    while (current().isOperator("|") || startInline) {
      if (!startInline)
        next();
      startInline = false;
      const Token &at = current();
      std::string name = dottedName("a filter name");
      checkName(at, name, true);
      auto e = makeExpr(ExprKind::Filter, at);
      e->target = std::move(node);
      e->name = std::move(name);
      if (current().isOperator("("))
        parseCallArgs(*e);
      node = std::move(e);
    }
    return node;
  }

  ExprPtr parseTest(ExprPtr node) {
    const Token &isToken = next();
    bool negated = skipName("not");
    const Token &at = current();
    std::string name = dottedName("a test name");
    checkName(at, name, false);
    auto e = makeExpr(ExprKind::Test, isToken);
    e->target = std::move(node);
    e->name = std::move(name);
    const Token &t = current();
    if (t.isOperator("(")) {
      parseCallArgs(*e);
    } else if ((t.type == TT::Name || t.type == TT::String || t.type == TT::Integer ||
                t.type == TT::Float || t.isOperator("(") || t.isOperator("[") ||
                t.isOperator("{")) &&
               !t.isName("else") && !t.isName("or") && !t.isName("and")) {
      if (t.isName("is"))
        fail(t, "tests cannot be chained with 'is'");
      e->args.push_back(parsePostfix(parsePrimary()));
    }
    if (!negated)
      return e;
    auto n = makeExpr(ExprKind::Not, isToken);
    n->target = std::move(e);
    return n;
  }
};

} // namespace

Result<StmtList> parseTemplate(const std::vector<Token> &tokens, const std::string &origin) {
  try {
    Parser parser(tokens, origin);
    return parser.parse();
  } catch (const ParseError &e) {
    return Error(e.message);
  }
}

} // namespace volt::chat
