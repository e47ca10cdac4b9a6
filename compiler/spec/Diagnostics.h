//===- Diagnostics.h - errors of one input file, with places ---*- C++ -*-===//
//
// The spec and SKU parsers report every problem of a file they can find, not
// just the first, each as "file:line:column: error: message" (1-based, the
// form compilers use, so editors can jump to it).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <string>
#include <vector>

namespace volt::spec {

/// A place in a text file; 1-based. Line 0 means "the file as a whole".
struct SourceLocation {
  int line = 0;
  int column = 0;
};

/// Collects the errors found in one file.
class Diagnostics {
public:
  explicit Diagnostics(std::string fileName) : fileName_(std::move(fileName)) {}

  /// Records "file:line:col: error: message".
  void error(SourceLocation where, const std::string &message);
  /// Records an already formatted block of lines (errors from a nested file).
  void appendFormatted(const std::string &text);

  bool hasErrors() const { return !errors_.empty(); }
  size_t errorCount() const { return errors_.size(); }
  const std::string &fileName() const { return fileName_; }
  const std::vector<std::string> &errors() const { return errors_; }

  /// All errors, one per line; at most `kMaxReported`, then a count of the rest.
  Error toError() const;

  static constexpr size_t kMaxReported = 50;

private:
  std::string fileName_;
  std::vector<std::string> errors_;
};

} // namespace volt::spec
