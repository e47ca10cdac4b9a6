//===- Regex.h - PCRE2 regular expressions for pre-tokenizers --*- C++ -*-===//
//
// Hugging Face tokenizer files carry Oniguruma-flavoured patterns (`\p{L}`,
// `(?i:...)`, `\s+(?!\S)`); PCRE2 in UTF + UCP mode reads them alike. Each
// pattern is JIT-compiled once; matching is thread-safe (match data is per
// call).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace volt::tok {

class Regex {
public:
  /// Compiles `pattern`; the error names the offset of the problem.
  static Result<std::shared_ptr<const Regex>> compile(std::string_view pattern);
  /// A pattern that matches `literal` exactly.
  static Result<std::shared_ptr<const Regex>> literal(std::string_view literal);
  ~Regex();
  Regex(const Regex &) = delete;
  Regex &operator=(const Regex &) = delete;

  struct Match {
    size_t begin, end;
  };
  /// Every non-overlapping, non-empty match in `text` (valid UTF-8), left
  /// to right, appended to `out`.
  void findAll(std::string_view text, std::vector<Match> &out) const;

  const std::string &pattern() const { return pattern_; }

private:
  Regex() = default;
  std::string pattern_;
  void *code_ = nullptr; // pcre2_code_8
  bool jit_ = false;
};

} // namespace volt::tok
