//===- Ast.h - the parsed form of a chat template --------------*- C++ -*-===//
//
// Expressions and statements as jinja2's parser builds them (same shapes and
// precedence), each with the line and column it came from so that errors at
// render time can point into the template.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/chat/Value.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace volt::chat {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using StmtList = std::vector<StmtPtr>;

enum class ExprKind : uint8_t {
  Const,    ///< `constant`
  Name,     ///< `name`
  List,     ///< `args`
  Tuple,    ///< `args`
  Dict,     ///< `args` holds key, value, key, value...
  Getattr,  ///< `target`.`name`
  Getitem,  ///< `target`[`args[0]`]
  Slice,    ///< `args` = start, stop, step (each may be null)
  Call,     ///< `target`(`args`, `kwargs`)
  Filter,   ///< `target` | `name`(`args`, `kwargs`); null target in filter blocks
  Test,     ///< `target` is `name`(`args`, `kwargs`)
  Neg,      ///< -`target`
  Pos,      ///< +`target`
  Not,      ///< not `target`
  And,      ///< `args[0]` and `args[1]`
  Or,       ///< `args[0]` or `args[1]`
  Binary,   ///< `args[0]` `binaryOp` `args[1]`
  Concat,   ///< `args` joined with ~
  Compare,  ///< `target` `compareOps[i]` `args[i]`...
  CondExpr, ///< `args[0]` if `target` else `args[1]` (args[1] may be null)
};

enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, FloorDiv, Mod, Pow };
enum class CompareOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct Expr {
  ExprKind kind;
  int line = 0;
  int column = 0;
  Value constant;
  std::string name;
  BinaryOp binaryOp = BinaryOp::Add;
  ExprPtr target;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<CompareOp> compareOps;
};

/// What `set`, `for` and `with` assign to.
struct AssignTarget {
  enum class Kind : uint8_t { Name, Tuple, NamespaceAttribute };
  Kind kind = Kind::Name;
  /// The name, the tuple's names, or the namespace variable.
  std::vector<std::string> names;
  /// The attribute for `ns.attr`.
  std::string attribute;
};

enum class StmtKind : uint8_t {
  Text,        ///< `text`
  Output,      ///< {{ `expr` }}
  If,          ///< `branches`, `elseBody`
  For,         ///< for `target` in `expr` if `condition`: `body` else `elseBody`
  Set,         ///< set `target` = `expr`
  SetBlock,    ///< set `target` | `expr` (a filter chain or null): `body`
  Macro,       ///< macro `name`(`params` = `defaults`): `body`
  FilterBlock, ///< filter `expr`: `body`
  With,        ///< with `withTargets` = `withValues`: `body`
  Scope,       ///< a body that only groups (HF's {% generation %})
  Break,
  Continue,
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  int column = 0;
  std::string text;
  std::string name;
  ExprPtr expr;
  ExprPtr condition;
  AssignTarget target;
  std::vector<std::pair<ExprPtr, StmtList>> branches;
  StmtList body;
  StmtList elseBody;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;
  std::vector<AssignTarget> withTargets;
  std::vector<ExprPtr> withValues;
};

} // namespace volt::chat
