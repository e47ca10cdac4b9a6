//===- Detokenizer.h - the text side of a request's output -----*- C++ -*-===//
//
// The engine works in token ids; text (for streaming and for stop strings)
// comes from a detokenizer the caller supplies per request, so that the
// engine does not depend on the tokenizer library. An adapter over
// volt::tok::IncrementalDecoder is a few lines: `step` and `finish` forward
// to it. A detokenizer that needs the prompt as context (to decode the first
// output token the way the whole sequence would) is primed by its creator.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <cstdint>
#include <string>

namespace volt::engine {

/// Incremental detokenization of one request's output tokens.
class Detokenizer {
public:
  virtual ~Detokenizer() = default;
  /// Adds the next output token; returns the text it completes (possibly
  /// empty, e.g. half of a UTF-8 character).
  virtual Result<std::string> step(int32_t token) = 0;
  /// The text still held back at the end of the output.
  virtual Result<std::string> finish() = 0;
};

} // namespace volt::engine
