//===- Unicode.h - UTF-8 and Unicode helpers for the tokenizer -*- C++ -*-===//
//
// UTF-8 decoding and repair, the GPT-2 byte-to-character table that
// byte-level BPE vocabularies are written in, Unicode normalization (ICU),
// and the character classes that Hugging Face `tokenizers` consults when it
// matches added tokens (Rust's `\w` and `\s`).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace volt::tok {

/// The code point at `s[i]` and its length in bytes. `s` must be valid UTF-8.
struct Utf8Char {
  char32_t cp;
  uint32_t len;
};
Utf8Char decodeUtf8(std::string_view s, size_t i);

/// Length in bytes of the UTF-8 sequence that starts with byte `lead` (1 for
/// a continuation byte, so that loops always advance).
inline uint32_t utf8Length(uint8_t lead) {
  if (lead < 0xC0)
    return 1;
  if (lead < 0xE0)
    return 2;
  if (lead < 0xF0)
    return 3;
  return 4;
}

/// Appends `cp` encoded as UTF-8.
void appendUtf8(std::string &out, char32_t cp);

/// Whether `s` is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool isValidUtf8(std::string_view s);

/// `s` with every ill-formed sequence replaced by U+FFFD, one per maximal
/// subpart (the Unicode "best practice" that Python's `errors='replace'`
/// and Rust's `String::from_utf8_lossy` follow).
std::string repairUtf8(std::string_view s);

/// The GPT-2 byte-level alphabet: every byte maps to one printable
/// character (bytes that are printable Latin-1 map to themselves, the others
/// to U+0100 onwards, in byte order).
struct ByteLevelAlphabet {
  std::array<char32_t, 256> byteToChar;
  /// UTF-8 of `byteToChar[b]`.
  std::array<std::string, 256> byteToUtf8;
  /// The byte that `cp` stands for, or -1 when `cp` is not in the alphabet.
  int charToByte(char32_t cp) const {
    if (cp < 0x100) {
      int b = latin1ToByte[cp];
      return b;
    }
    if (cp < 0x100 + 68)
      return highToByte[cp - 0x100];
    return -1;
  }
  std::array<int16_t, 256> latin1ToByte;
  std::array<int16_t, 68> highToByte;
};
const ByteLevelAlphabet &byteLevelAlphabet();

/// Rust `char::is_whitespace` (the Unicode White_Space property).
bool isWhiteSpace(char32_t cp);
/// Rust regex's `\w`: Alphabetic, marks, decimal digits, connector
/// punctuation and Join_Control.
bool isWordChar(char32_t cp);

/// Unicode normalization forms, as the NFC/NFD/NFKC/NFKD normalizers apply.
enum class NormalForm { NFC, NFD, NFKC, NFKD };
/// `text` in normal form `form`; `text` must be valid UTF-8.
std::string normalizeUnicode(std::string_view text, NormalForm form);
/// Full Unicode lowercasing (as Rust's `str::to_lowercase`).
std::string lowercaseUnicode(std::string_view text);

} // namespace volt::tok
