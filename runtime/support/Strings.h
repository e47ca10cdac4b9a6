//===- Strings.h - small text helpers for messages -------------*- C++ -*-===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace volt {

/// Levenshtein distance, for "did you mean" suggestions.
size_t editDistance(std::string_view a, std::string_view b);

/// The candidate closest to `word`, if one is close enough to be a likely
/// typo (distance at most a third of the word's length, and at least 1 off).
/// Cheap for any input: candidates whose length alone rules them out are not
/// compared, and words over 256 bytes get no suggestion.
std::optional<std::string> closestMatch(std::string_view word,
                                        const std::vector<std::string> &candidates);

/// `text` cut to at most `max` bytes (at a UTF-8 character boundary) with
/// "… (N bytes)" after it, for messages and logs that echo client input:
/// an 8 MB field name must not become an 8 MB error.
std::string clipForMessage(std::string_view text, size_t max);

/// "a, b, c" — for listing valid values in a message.
std::string joinList(const std::vector<std::string> &items, std::string_view sep = ", ");

/// 17.20 GiB / 512.00 MiB / 1.50 KiB / 12 B (binary units, as nvidia-smi and
/// memory planners report device memory).
std::string formatBytes(uint64_t bytes);

/// 1,234,567
std::string formatCount(uint64_t n);

/// fnmatch-style wildcard match ('*' and '?'), as ModelOpt's exclude lists use.
bool wildcardMatch(std::string_view pattern, std::string_view text);

} // namespace volt
