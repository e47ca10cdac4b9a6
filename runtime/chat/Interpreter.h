//===- Interpreter.h - renders a parsed chat template ----------*- C++ -*-===//
//
// Walks the statements of a parsed template over a context of variables and
// writes the output, with jinja2's semantics as Hugging Face configures it
// (sandboxed, undefined values are jinja2's default `Undefined`). Every
// render is bounded: output size, evaluation steps, macro call depth, and
// value nesting, so that a hostile template ends in an error, not a crash
// or a hang.
//
// Errors inside the interpreter are thrown as `RenderFailure` and turned
// into a `Result` by `render`; no exception leaves this library.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/chat/Ast.h"
#include "runtime/chat/Builtins.h"
#include "runtime/support/Status.h"

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

namespace volt::chat {

/// Bounds on one render.
struct RenderLimits {
  size_t maxOutputBytes = 16u << 20;
  /// Largest string or list a template may build.
  size_t maxValueBytes = 16u << 20;
  size_t maxListItems = 1u << 20;
  /// jinja2's sandbox allows ranges up to 100,000 items.
  int64_t maxRange = 100000;
  uint64_t maxSteps = 20'000'000;
  int maxCallDepth = 64;
  uint32_t maxValueDepth = 256;
};

/// A scope of variables: the template's, a loop iteration's, a macro call's.
struct Scope {
  std::shared_ptr<Scope> parent;
  std::unordered_map<std::string, Value> vars;

  const Value *find(const std::string &name) const;
};

/// An error raised while rendering. `raised` marks errors the template
/// raised itself with raise_exception().
struct RenderFailure {
  std::string message;
  int line = 0;
  int column = 0;
  bool raised = false;
};

class Interpreter {
public:
  Interpreter(std::string origin, RenderLimits limits, std::optional<std::tm> now);

  /// Renders `body` with the variables of `context`.
  Result<std::string> render(const StmtList &body, const std::shared_ptr<Scope> &context);

  // --- services for the built-in filters, tests and methods ------------

  /// Fails the render at the expression being evaluated.
  [[noreturn]] void fail(const std::string &message) const;
  /// Fails the render with a message the template chose (raise_exception).
  [[noreturn]] void raise(const std::string &message) const;
  /// Fails with an undefined value's message (it was used, not just read).
  [[noreturn]] void failUndefined(const Value &undefined) const;

  /// `obj.name` with jinja2's sandboxed rules: attribute, then item.
  Value getAttribute(const Value &obj, const std::string &name);
  /// `obj[key]` with jinja2's rules: item, then attribute; never fails
  /// except on an undefined `obj`.
  Value getItem(const Value &obj, const Value &key);
  /// Calls a callable value.
  Value call(const Value &callee, const CallArgs &args);
  /// The items Python's iter() would give (consuming a one-shot iterator).
  ValueList iterate(const Value &v);
  /// Counts one unit of work against the step budget.
  void step() { charge(1); }
  /// Counts `units` of work (items copied, iterations) against the budget.
  void charge(uint64_t units);
  /// Checks a string or list the template is building against the limits.
  void checkSize(size_t bytes, size_t items = 0) const;
  /// Python's `needle in container`.
  bool contains(const Value &container, const Value &needle);
  /// A binary operator with Python's semantics.
  Value binary(BinaryOp op, const Value &a, const Value &b);
  /// The time `strftime_now` formats.
  std::tm now() const;
  const RenderLimits &limits() const { return limits_; }

private:
  enum class Flow { Normal, Break, Continue };

  std::string origin_;
  RenderLimits limits_;
  std::optional<std::tm> now_;
  std::string out_;
  uint64_t steps_ = 0;
  int callDepth_ = 0;
  const Expr *atExpr_ = nullptr;
  int atLine_ = 0;
  int atColumn_ = 0;

  friend struct AtExpr;

  Flow execBlock(const StmtList &body, const std::shared_ptr<Scope> &scope);
  Flow exec(const Stmt &s, const std::shared_ptr<Scope> &scope);
  void execFor(const Stmt &s, const std::shared_ptr<Scope> &scope);
  std::string capture(const StmtList &body, const std::shared_ptr<Scope> &scope);
  void assign(const AssignTarget &target, const Value &value, Scope &scope);
  void write(const std::string &text);

  Value eval(const Expr &e, const std::shared_ptr<Scope> &scope);
  Value evalInner(const Expr &e, const std::shared_ptr<Scope> &scope);
  Value lookup(const std::string &name, const Scope &scope);
  CallArgs evalArgs(const Expr &e, const std::shared_ptr<Scope> &scope);
  Value evalCall(const Expr &e, const std::shared_ptr<Scope> &scope);
  Value evalFilter(const Expr &e, const std::shared_ptr<Scope> &scope, const Value *operand);
  Value evalCompare(const Expr &e, const std::shared_ptr<Scope> &scope);
  Value evalSlice(const Value &obj, const Expr &slice, const std::shared_ptr<Scope> &scope);
  Value callMacro(const Callable &macro, const CallArgs &args);

  bool compare(CompareOp op, const Value &a, const Value &b);
};

/// Python ordering (`<`) of two values; fails through `in` when Python
/// would raise a TypeError.
bool pyLess(Interpreter &in, const Value &a, const Value &b);

} // namespace volt::chat
