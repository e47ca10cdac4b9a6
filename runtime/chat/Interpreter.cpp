//===- Interpreter.cpp - statements and expressions -----------------------===//
#include "runtime/chat/Interpreter.h"

#include "runtime/chat/Text.h"

namespace volt::chat {

const Value *Scope::find(const std::string &name) const {
  for (const Scope *s = this; s; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end())
      return &it->second;
  }
  return nullptr;
}

/// Marks the expression being evaluated, for the position of errors.
struct AtExpr {
  Interpreter &in;
  const Expr *saved;
  AtExpr(Interpreter &interp, const Expr &e) : in(interp), saved(interp.atExpr_) {
    in.atExpr_ = &e;
  }
  ~AtExpr() { in.atExpr_ = saved; }
};

Interpreter::Interpreter(std::string origin, RenderLimits limits, std::optional<std::tm> now)
    : origin_(std::move(origin)), limits_(limits), now_(now) {}

Result<std::string> Interpreter::render(const StmtList &body,
                                        const std::shared_ptr<Scope> &context) {
  try {
    auto top = std::make_shared<Scope>();
    top->parent = context;
    execBlock(body, top);
    return std::move(out_);
  } catch (const RenderFailure &f) {
    std::string where = origin_ + ":" + std::to_string(f.line) + ":" + std::to_string(f.column);
    if (f.raised)
      return Error(where + ": the template raised an error: " + f.message);
    return Error(where + ": " + f.message);
  }
}

void Interpreter::fail(const std::string &message) const {
  RenderFailure f;
  f.message = message;
  f.line = atExpr_ ? atExpr_->line : atLine_;
  f.column = atExpr_ ? atExpr_->column : atColumn_;
  throw f;
}

void Interpreter::raise(const std::string &message) const {
  RenderFailure f;
  f.message = message;
  f.line = atExpr_ ? atExpr_->line : atLine_;
  f.column = atExpr_ ? atExpr_->column : atColumn_;
  f.raised = true;
  throw f;
}

void Interpreter::failUndefined(const Value &undefined) const { fail(undefined.str()); }

void Interpreter::charge(uint64_t units) {
  steps_ += units;
  if (steps_ > limits_.maxSteps)
    fail("the template exceeded its budget of " + std::to_string(limits_.maxSteps) +
         " evaluation steps");
}

void Interpreter::checkSize(size_t bytes, size_t items) const {
  if (bytes > limits_.maxValueBytes)
    fail("the template built a value of more than " + std::to_string(limits_.maxValueBytes) +
         " bytes");
  if (items > limits_.maxListItems)
    fail("the template built a list of more than " + std::to_string(limits_.maxListItems) +
         " items");
}

std::tm Interpreter::now() const {
  if (now_)
    return *now_;
  std::time_t t = std::time(nullptr);
  std::tm local{};
  localtime_r(&t, &local);
  return local;
}

void Interpreter::write(const std::string &text) {
  out_ += text;
  if (out_.size() > limits_.maxOutputBytes)
    fail("the template's output exceeds " + std::to_string(limits_.maxOutputBytes) + " bytes");
}

// --- statements -----------------------------------------------------------

Interpreter::Flow Interpreter::execBlock(const StmtList &body,
                                         const std::shared_ptr<Scope> &scope) {
  for (const StmtPtr &s : body) {
    Flow f = exec(*s, scope);
    if (f != Flow::Normal)
      return f;
  }
  return Flow::Normal;
}

std::string Interpreter::capture(const StmtList &body, const std::shared_ptr<Scope> &scope) {
  std::string saved;
  saved.swap(out_);
  try {
    execBlock(body, scope);
  } catch (...) {
    out_.swap(saved);
    throw;
  }
  out_.swap(saved);
  return saved;
}

Interpreter::Flow Interpreter::exec(const Stmt &s, const std::shared_ptr<Scope> &scope) {
  step();
  atLine_ = s.line;
  atColumn_ = s.column;
  switch (s.kind) {
  case StmtKind::Text:
    write(s.text);
    return Flow::Normal;
  case StmtKind::Output:
    write(pyStr(eval(*s.expr, scope)));
    return Flow::Normal;
  case StmtKind::If:
    for (const auto &[test, body] : s.branches)
      if (eval(*test, scope).truthy())
        return execBlock(body, scope);
    return execBlock(s.elseBody, scope);
  case StmtKind::For:
    execFor(s, scope);
    return Flow::Normal;
  case StmtKind::Set:
    assign(s.target, eval(*s.expr, scope), *scope);
    return Flow::Normal;
  case StmtKind::SetBlock: {
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    Value text = Value::string(capture(s.body, inner));
    if (s.expr)
      text = evalFilter(*s.expr, scope, &text);
    assign(s.target, text, *scope);
    return Flow::Normal;
  }
  case StmtKind::Macro: {
    auto c = std::make_shared<Callable>();
    c->kind = Callable::Kind::Macro;
    c->name = s.name;
    c->macro = &s;
    c->closure = scope;
    scope->vars[s.name] = Value::callable(std::move(c));
    return Flow::Normal;
  }
  case StmtKind::FilterBlock: {
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    Value text = Value::string(capture(s.body, inner));
    write(pyStr(evalFilter(*s.expr, scope, &text)));
    return Flow::Normal;
  }
  case StmtKind::With: {
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    for (size_t i = 0; i < s.withTargets.size(); ++i)
      assign(s.withTargets[i], eval(*s.withValues[i], scope), *inner);
    return execBlock(s.body, inner);
  }
  case StmtKind::Scope: {
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    return execBlock(s.body, inner);
  }
  case StmtKind::Break:
    return Flow::Break;
  case StmtKind::Continue:
    return Flow::Continue;
  }
  return Flow::Normal;
}

void Interpreter::execFor(const Stmt &s, const std::shared_ptr<Scope> &scope) {
  ValueList all = iterate(eval(*s.expr, scope));
  ValueList items;
  if (s.condition) {
    for (Value &item : all) {
      step();
      auto inner = std::make_shared<Scope>();
      inner->parent = scope;
      assign(s.target, item, *inner);
      if (eval(*s.condition, inner).truthy())
        items.push_back(std::move(item));
    }
  } else {
    items = std::move(all);
  }
  if (items.empty()) {
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    execBlock(s.elseBody, inner);
    return;
  }
  auto state = std::make_shared<LoopState>();
  state->items = std::make_shared<const ValueList>(std::move(items));
  Value loopValue = Value::loop(state);
  for (size_t i = 0; i < state->items->size(); ++i) {
    step();
    state->index0 = static_cast<int64_t>(i);
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    assign(s.target, (*state->items)[i], *inner);
    inner->vars["loop"] = loopValue;
    if (execBlock(s.body, inner) == Flow::Break)
      break;
  }
}

void Interpreter::assign(const AssignTarget &target, const Value &value, Scope &scope) {
  switch (target.kind) {
  case AssignTarget::Kind::Name:
    scope.vars[target.names[0]] = value;
    return;
  case AssignTarget::Kind::Tuple: {
    if (!(value.isListOrTuple() || value.isString() || value.isDict() || value.isIterator() ||
          value.isUndefined()))
      fail("cannot unpack non-iterable " + value.typeName() + " object");
    ValueList items = iterate(value);
    if (items.size() < target.names.size())
      fail("not enough values to unpack (expected " + std::to_string(target.names.size()) +
           ", got " + std::to_string(items.size()) + ")");
    if (items.size() > target.names.size())
      fail("too many values to unpack (expected " + std::to_string(target.names.size()) + ")");
    for (size_t i = 0; i < items.size(); ++i)
      scope.vars[target.names[i]] = items[i];
    return;
  }
  case AssignTarget::Kind::NamespaceAttribute: {
    const Value *ns = scope.find(target.names[0]);
    if (!ns || !ns->isNamespace())
      fail("cannot assign attribute on non-namespace object");
    if (value.holdsReferences())
      fail("a namespace attribute cannot hold a namespace, loop, iterator or macro");
    ns->namespaceAttributes().set(Value::string(target.attribute), value);
    return;
  }
  }
}

// --- expressions ----------------------------------------------------------

Value Interpreter::eval(const Expr &e, const std::shared_ptr<Scope> &scope) {
  AtExpr at(*this, e);
  step();
  Value v = evalInner(e, scope);
  if (v.depth() > limits_.maxValueDepth)
    fail("the template built values nested deeper than " + std::to_string(limits_.maxValueDepth) +
         " levels");
  return v;
}

Value Interpreter::lookup(const std::string &name, const Scope &scope) {
  if (const Value *v = scope.find(name))
    return *v;
  if (globalSupport(name) == Support::Supported) {
    auto c = std::make_shared<Callable>();
    c->kind = Callable::Kind::Global;
    c->name = name;
    return Value::callable(std::move(c));
  }
  return Value::undefined("'" + name + "' is undefined");
}

CallArgs Interpreter::evalArgs(const Expr &e, const std::shared_ptr<Scope> &scope) {
  CallArgs args;
  for (const ExprPtr &a : e.args)
    args.positional.push_back(eval(*a, scope));
  for (const auto &[key, value] : e.kwargs)
    args.keyword.emplace_back(key, eval(*value, scope));
  return args;
}

Value Interpreter::evalCall(const Expr &e, const std::shared_ptr<Scope> &scope) {
  const Expr &callee = *e.target;
  if (callee.kind == ExprKind::Getattr) {
    Value self = eval(*callee.target, scope);
    if (!self.isUndefined() && !self.isNamespace() && hasMethod(self, callee.name)) {
      CallArgs args = evalArgs(e, scope);
      return callMethod(*this, self, callee.name, args);
    }
    Value fn = getAttribute(self, callee.name);
    return call(fn, evalArgs(e, scope));
  }
  Value fn = eval(callee, scope);
  return call(fn, evalArgs(e, scope));
}

Value Interpreter::call(const Value &callee, const CallArgs &args) {
  if (callee.isUndefined())
    failUndefined(callee);
  if (!callee.isCallable())
    fail("'" + callee.typeName() + "' object is not callable");
  const Callable &c = callee.callable();
  switch (c.kind) {
  case Callable::Kind::Global:
    return callGlobal(*this, c.name, args);
  case Callable::Kind::Method:
    return callMethod(*this, c.self, c.name, args);
  case Callable::Kind::Macro:
    return callMacro(c, args);
  }
  fail("object is not callable");
}

Value Interpreter::callMacro(const Callable &macro, const CallArgs &args) {
  const Stmt &def = *macro.macro;
  if (++callDepth_ > limits_.maxCallDepth) {
    --callDepth_;
    fail("macro calls nest deeper than " + std::to_string(limits_.maxCallDepth) + " levels");
  }
  auto scope = std::make_shared<Scope>();
  scope->parent = macro.closure.lock();
  if (!scope->parent) {
    --callDepth_;
    fail("macro '" + def.name + "' is called after the block that defined it ended");
  }
  if (args.positional.size() > def.params.size()) {
    --callDepth_;
    fail("macro '" + def.name + "' takes not more than " + std::to_string(def.params.size()) +
         " argument(s)");
  }
  std::vector<bool> bound(def.params.size(), false);
  for (size_t i = 0; i < args.positional.size(); ++i) {
    scope->vars[def.params[i]] = args.positional[i];
    bound[i] = true;
  }
  for (const auto &[key, value] : args.keyword) {
    size_t i = 0;
    while (i < def.params.size() && def.params[i] != key)
      ++i;
    if (i == def.params.size())
      fail("macro '" + def.name + "' takes no keyword argument '" + key + "'");
    if (bound[i])
      fail("macro '" + def.name + "' got multiple values for argument '" + key + "'");
    scope->vars[key] = value;
    bound[i] = true;
  }
  for (size_t i = 0; i < def.params.size(); ++i) {
    if (bound[i])
      continue;
    scope->vars[def.params[i]] = def.defaults[i]
                                     ? eval(*def.defaults[i], scope)
                                     : Value::undefined("'" + def.params[i] + "' is undefined");
  }
  std::string text;
  try {
    text = capture(def.body, scope);
  } catch (...) {
    --callDepth_;
    throw;
  }
  --callDepth_;
  return Value::string(std::move(text));
}

Value Interpreter::evalFilter(const Expr &e, const std::shared_ptr<Scope> &scope,
                              const Value *operand) {
  // Filter chains nest through `target`; a null innermost target takes the
  // block's text (filter blocks and `set` blocks).
  Value input;
  if (e.target)
    input = e.target->kind == ExprKind::Filter && operand ? evalFilter(*e.target, scope, operand)
                                                          : eval(*e.target, scope);
  else if (operand)
    input = *operand;
  AtExpr at(*this, e);
  CallArgs args = evalArgs(e, scope);
  return applyFilter(*this, e.name, input, args);
}

Value Interpreter::evalInner(const Expr &e, const std::shared_ptr<Scope> &scope) {
  switch (e.kind) {
  case ExprKind::Const:
    return e.constant;
  case ExprKind::Name:
    return lookup(e.name, *scope);
  case ExprKind::List:
  case ExprKind::Tuple: {
    ValueList items;
    for (const ExprPtr &a : e.args)
      items.push_back(eval(*a, scope));
    return e.kind == ExprKind::List ? Value::list(std::move(items))
                                    : Value::tuple(std::move(items));
  }
  case ExprKind::Dict: {
    auto d = std::make_shared<Dict>();
    for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
      Value key = eval(*e.args[i], scope);
      if (key.isList() || key.isDict() || key.isNamespace() || key.isUndefined())
        fail("unhashable type: '" + key.typeName() + "'");
      d->set(std::move(key), eval(*e.args[i + 1], scope));
    }
    return Value::dict(std::move(d));
  }
  case ExprKind::Getattr:
    return getAttribute(eval(*e.target, scope), e.name);
  case ExprKind::Getitem: {
    Value obj = eval(*e.target, scope);
    if (e.args[0]->kind == ExprKind::Slice)
      return evalSlice(obj, *e.args[0], scope);
    Value key = eval(*e.args[0], scope);
    return getItem(obj, key);
  }
  case ExprKind::Slice:
    fail("a slice is only allowed inside []");
  case ExprKind::Call:
    return evalCall(e, scope);
  case ExprKind::Filter:
    return evalFilter(e, scope, nullptr);
  case ExprKind::Test: {
    Value operand = eval(*e.target, scope);
    CallArgs args = evalArgs(e, scope);
    return Value::boolean(applyTest(*this, e.name, operand, args));
  }
  case ExprKind::Neg:
  case ExprKind::Pos: {
    Value v = eval(*e.target, scope);
    if (v.isUndefined())
      failUndefined(v);
    bool neg = e.kind == ExprKind::Neg;
    if (v.isFloat())
      return Value::number(neg ? -v.asDouble() : v.asDouble());
    if (v.isIntegral()) {
      if (neg && v.asInt() == INT64_MIN)
        fail("integer overflow");
      return Value::integer(neg ? -v.asInt() : v.asInt());
    }
    fail(std::string("bad operand type for unary ") + (neg ? "-" : "+") + ": '" + v.typeName() +
         "'");
  }
  case ExprKind::Not:
    return Value::boolean(!eval(*e.target, scope).truthy());
  case ExprKind::And: {
    Value left = eval(*e.args[0], scope);
    return left.truthy() ? eval(*e.args[1], scope) : left;
  }
  case ExprKind::Or: {
    Value left = eval(*e.args[0], scope);
    return left.truthy() ? left : eval(*e.args[1], scope);
  }
  case ExprKind::Binary: {
    Value a = eval(*e.args[0], scope);
    Value b = eval(*e.args[1], scope);
    return binary(e.binaryOp, a, b);
  }
  case ExprKind::Concat: {
    std::string out;
    for (const ExprPtr &a : e.args) {
      out += pyStr(eval(*a, scope));
      checkSize(out.size());
    }
    return Value::string(std::move(out));
  }
  case ExprKind::Compare:
    return evalCompare(e, scope);
  case ExprKind::CondExpr:
    if (eval(*e.target, scope).truthy())
      return eval(*e.args[0], scope);
    if (e.args[1])
      return eval(*e.args[1], scope);
    return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                            " evaluated to false and no else section was defined.");
  }
  fail("unknown expression");
}

Value Interpreter::evalCompare(const Expr &e, const std::shared_ptr<Scope> &scope) {
  Value left = eval(*e.target, scope);
  for (size_t i = 0; i < e.args.size(); ++i) {
    Value right = eval(*e.args[i], scope);
    if (!compare(e.compareOps[i], left, right))
      return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

} // namespace volt::chat
