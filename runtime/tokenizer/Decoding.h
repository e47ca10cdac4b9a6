//===- Decoding.h - decoders and post-processors ---------------*- C++ -*-===//
//
// Decoders turn token strings back into text (HF's `decode_chain`: each
// decoder maps the list of token strings to a new list, and the result is
// their concatenation). Post-processors add the special tokens of a
// template when encoding with `add_special_tokens`.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/tokenizer/Regex.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace volt::tok {

class Decoder {
public:
  virtual ~Decoder() = default;
  virtual void decodeChain(std::vector<std::string> &tokens) const = 0;
  /// Whether a change to the last tokens can change the text of earlier
  /// ones (byte-fallback runs decode as a whole), which streaming must wait
  /// out.
  virtual bool joinsByteTokens() const { return false; }
};

/// Byte-level alphabet characters back to bytes, then lossy UTF-8.
class ByteLevelDecoder : public Decoder {
public:
  void decodeChain(std::vector<std::string> &tokens) const override;
};

/// Runs of `<0xAB>` tokens become their bytes when those are valid UTF-8,
/// else one U+FFFD per byte.
class ByteFallbackDecoder : public Decoder {
public:
  void decodeChain(std::vector<std::string> &tokens) const override;
  bool joinsByteTokens() const override { return true; }
};

/// All tokens joined into one.
class FuseDecoder : public Decoder {
public:
  void decodeChain(std::vector<std::string> &tokens) const override;
};

/// Removes up to `start` leading and `stop` trailing `content` characters
/// from each token.
class StripDecoder : public Decoder {
public:
  StripDecoder(char32_t content, size_t start, size_t stop)
      : content_(content), start_(start), stop_(stop) {}
  void decodeChain(std::vector<std::string> &tokens) const override;

private:
  char32_t content_;
  size_t start_, stop_;
};

/// Replaces a string or regex in each token.
class ReplaceDecoder : public Decoder {
public:
  ReplaceDecoder(std::string literal, std::shared_ptr<const Regex> regex, std::string content)
      : literal_(std::move(literal)), regex_(std::move(regex)), content_(std::move(content)) {}
  void decodeChain(std::vector<std::string> &tokens) const override;

private:
  std::string literal_;
  std::shared_ptr<const Regex> regex_;
  std::string content_;
};

/// The replacement character back to spaces; in the first token it is
/// dropped unless the prepend scheme is "never".
class MetaspaceDecoder : public Decoder {
public:
  MetaspaceDecoder(std::string replacement, bool dropInFirst)
      : replacement_(std::move(replacement)), dropInFirst_(dropInFirst) {}
  void decodeChain(std::vector<std::string> &tokens) const override;

private:
  std::string replacement_;
  bool dropInFirst_;
};

class SequenceDecoder : public Decoder {
public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> items)
      : items_(std::move(items)) {}
  void decodeChain(std::vector<std::string> &tokens) const override;
  bool joinsByteTokens() const override;

private:
  std::vector<std::unique_ptr<Decoder>> items_;
};

/// Special tokens around a single sequence: `before` + ids + `after`.
struct PostProcessor {
  std::vector<int32_t> before, after;
};

} // namespace volt::tok
