//===- OutputText.h - output text, stop strings, held-back text -*- C++ -*-===//
//
// Builds a request's output text from its detokenizer and ends it at stop
// strings with vLLM's rules: each new piece of text is searched for every
// stop string (in the order given; the first one found wins), only where
// the new text could have completed it; the match is cut from the text
// (kept with include_stop_str_in_output); and while a stop string could
// still be completing, the last (longest stop string - 1) bytes are held
// back from the stream, so that text later cut is never sent.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/Detokenizer.h"
#include "runtime/support/Status.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace volt::engine {

class OutputText {
public:
  OutputText() = default;
  OutputText(std::unique_ptr<Detokenizer> detokenizer, std::vector<std::string> stop,
             bool includeStopStrInOutput);

  bool hasDetokenizer() const { return detokenizer_ != nullptr; }

  /// Adds a token's text; with `checkStop`, searches the new text for stop
  /// strings and returns the one that ended the output, if any (the text is
  /// then cut there and takes no more tokens).
  Result<std::optional<std::string>> addToken(int32_t token, bool checkStop);

  /// Adds the detokenizer's held-back text at the end of generation (not
  /// after a stop string); may still find a stop string.
  Result<std::optional<std::string>> finish(bool checkStop);

  /// The text that may be streamed now and was not yet: everything when
  /// `finished`, otherwise all but the held-back tail. Never splits a
  /// UTF-8 character.
  std::string takeDelta(bool finished);

  /// All output text so far (including held-back text).
  const std::string &text() const { return text_; }

private:
  std::optional<std::string> append(const std::string &piece, bool checkStop);

  std::unique_ptr<Detokenizer> detokenizer_;
  std::vector<std::string> stop_;
  bool includeStop_ = false;
  size_t holdBack_ = 0; // bytes
  std::string text_;
  size_t emitted_ = 0;
  bool stopped_ = false;
};

} // namespace volt::engine
