//===- Status.h - errors as values at library boundaries -------*- C++ -*-===//
//
// Every volt library reports failure by returning a `Status` or a
// `Result<T>`; no exception crosses a library boundary. A message names the
// thing that is wrong (file, tensor, field, line:column), says what was
// expected and what was found, and starts lower-case.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace volt {

/// An error message. Constructing one is the only way to make a failed
/// `Status` or `Result`, so a failure always carries its reason.
struct Error {
  std::string message;
  explicit Error(std::string msg) : message(std::move(msg)) {}
};

/// Success, or an `Error`.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(Error e) : error_(std::move(e.message)) {} // NOLINT: implicit on purpose

  static Status success() { return Status(); }

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  /// The error message; only valid when `!ok()`.
  const std::string &message() const {
    assert(error_ && "message() of a successful Status");
    return *error_;
  }
  Error error() const { return Error(message()); }

private:
  std::optional<std::string> error_;
};

/// A value of type `T`, or an `Error`.
template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : value_(std::move(value)) {} // NOLINT: implicit on purpose
  Result(Error e) : error_(std::move(e.message)) {} // NOLINT
  Result(Status s) : error_(s.message()) { assert(!s.ok()); } // NOLINT

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }

  T &operator*() & { return *value_; }
  const T &operator*() const & { return *value_; }
  T &&operator*() && { return std::move(*value_); }
  T *operator->() { return &*value_; }
  const T *operator->() const { return &*value_; }
  T &value() & { return *value_; }
  const T &value() const & { return *value_; }
  T &&value() && { return std::move(*value_); }

  const std::string &message() const {
    assert(!ok() && "message() of a successful Result");
    return *error_;
  }
  Error error() const { return Error(message()); }
  Status status() const { return ok() ? Status() : Status(error()); }

private:
  std::optional<T> value_;
  std::optional<std::string> error_;
};

} // namespace volt

/// Returns the error of a failed `Status`/`Result` expression from the
/// enclosing function.
#define VOLT_RETURN_IF_ERROR(expr)                                                                 \
  do {                                                                                             \
    auto voltStatus_ = (expr);                                                                     \
    if (!voltStatus_.ok())                                                                         \
      return voltStatus_.error();                                                                  \
  } while (false)

#define VOLT_CONCAT_INNER_(a, b) a##b
#define VOLT_CONCAT_(a, b) VOLT_CONCAT_INNER_(a, b)
/// `VOLT_ASSIGN_OR_RETURN(auto x, f())`: binds the value or returns the error.
#define VOLT_ASSIGN_OR_RETURN(decl, expr)                                                          \
  auto VOLT_CONCAT_(voltResult_, __LINE__) = (expr);                                               \
  if (!VOLT_CONCAT_(voltResult_, __LINE__).ok())                                                   \
    return VOLT_CONCAT_(voltResult_, __LINE__).error();                                            \
  decl = std::move(*VOLT_CONCAT_(voltResult_, __LINE__))
