//===- NgramProposer.h - draft tokens by n-gram prompt lookup --*- C++ -*-===//
//
// vLLM's `method: ngram` draft source: the sequence's last n tokens
// (promptLookupMax >= n >= promptLookupMin, longest first) are looked for
// earlier in the sequence, prompt and output alike; the tokens that
// followed the most recent occurrence with enough of them are the drafts. No model,
// no state: the cost is one backward pass over the sequence.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <span>

namespace volt::engine {

/// Writes up to `out.size()` drafts for `tokens` into `out` and returns
/// how many (0 when no suffix of at least `minN` tokens recurs). The drafts
/// are the tokens after an earlier occurrence of the longest recurring
/// suffix of at most `maxN` tokens: of its occurrences, the one followed by
/// the most tokens (up to `out.size()`), the most recent among those.
int32_t proposeNgram(std::span<const int32_t> tokens, int32_t minN, int32_t maxN,
                     std::span<int32_t> out);

} // namespace volt::engine
