//===- Text.h - Python string semantics over UTF-8 -------------*- C++ -*-===//
//
// Python strings are sequences of code points: `len`, indexing, slicing and
// `strip` count code points, not bytes. Template strings are kept as UTF-8;
// these helpers give them Python's behaviour where it differs from bytes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace volt::chat {

/// The code points of UTF-8 text. A byte that does not start a valid
/// sequence decodes as U+FFFD, so any input decodes.
std::u32string decodeUtf8(std::string_view s);

/// Appends the UTF-8 encoding of `c` to `out`.
void appendUtf8(std::string &out, char32_t c);
std::string encodeUtf8(std::u32string_view s);

/// Whether `s` is well-formed UTF-8.
bool isValidUtf8(std::string_view s);

/// The number of code points in `s` (Python's `len`).
size_t codepointCount(std::string_view s);

/// Python's `str.isspace` for one code point.
bool isPySpace(char32_t c);

/// `str.strip` / `lstrip` / `rstrip`: strips `chars`, or whitespace when
/// `chars` is empty-optional.
std::string pyStrip(std::string_view s, const std::optional<std::string> &chars, bool left,
                    bool right);

/// `str.split(sep, maxsplit)`; no separator splits on runs of whitespace.
std::vector<std::string> pySplit(std::string_view s, const std::optional<std::string> &sep,
                                 int64_t maxSplit);
/// `str.rsplit(sep, maxsplit)`.
std::vector<std::string> pyRSplit(std::string_view s, const std::optional<std::string> &sep,
                                  int64_t maxSplit);
/// `str.splitlines()` (without keepends).
std::vector<std::string> pySplitLines(std::string_view s);

/// `str.replace(old, new, count)`; a negative count replaces all.
std::string pyReplace(std::string_view s, std::string_view from, std::string_view to,
                      int64_t count);

/// ASCII-only case mapping, for matching keywords and numbers.
std::string asciiUpper(std::string_view s);
std::string asciiLower(std::string_view s);
/// `str.upper` / `str.lower` with Python's Unicode mappings (including
/// ß → SS); the context-dependent final sigma of `lower` is not applied.
std::string pyUpper(std::string_view s);
std::string pyLower(std::string_view s);
/// `str.capitalize`: first character title case, the rest lower.
std::string pyCapitalize(std::string_view s);
/// `str.title`: each run of cased letters starts title case, continues
/// lower.
std::string pyTitle(std::string_view s);

/// JSON string literal the way Python's json.dumps writes it: `"`, `\`, and
/// control characters escaped; everything above U+007F escaped as \uXXXX
/// (surrogate pairs beyond the BMP) only when `ensureAscii`.
void appendJsonString(std::string &out, std::string_view s, bool ensureAscii);

} // namespace volt::chat
