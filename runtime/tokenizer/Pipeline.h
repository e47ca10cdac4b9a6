//===- Pipeline.h - normalizers and pre-tokenizers -------------*- C++ -*-===//
//
// The stages that turn text into the words a model tokenizes, with the
// semantics of the Hugging Face `tokenizers` components of the same names.
// Private to runtime/tokenizer.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/tokenizer/Regex.h"
#include "runtime/tokenizer/Unicode.h"

#include <memory>
#include <string>
#include <vector>

namespace volt::tok {

/// A stretch of text on its way to the model.
struct Piece {
  std::string text;
  /// Starts at byte 0 of the encoded input (Metaspace's "first" scheme).
  bool atOrigin = false;
  /// `text` holds raw bytes that stand for the byte-level alphabet's
  /// characters; the mapping is applied lazily, by the model or by
  /// `materialize` when a later stage needs the characters.
  bool byteMapped = false;
};

/// Writes a byte-mapped piece's characters out.
void materialize(Piece &piece);

class Normalizer {
public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string &text) const = 0;
};

class UnicodeNormalizer : public Normalizer {
public:
  explicit UnicodeNormalizer(NormalForm form) : form_(form) {}
  void normalize(std::string &text) const override;

private:
  NormalForm form_;
};

class LowercaseNormalizer : public Normalizer {
public:
  void normalize(std::string &text) const override;
};

/// Strips Unicode whitespace from the left and/or right.
class StripNormalizer : public Normalizer {
public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string &text) const override;

private:
  bool left_, right_;
};

/// Prepends a string to non-empty text.
class PrependNormalizer : public Normalizer {
public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string &text) const override;

private:
  std::string prefix_;
};

/// Replaces every non-overlapping occurrence of a string or a regex match.
class ReplaceNormalizer : public Normalizer {
public:
  ReplaceNormalizer(std::string literal, std::shared_ptr<const Regex> regex, std::string content)
      : literal_(std::move(literal)), regex_(std::move(regex)), content_(std::move(content)) {}
  void normalize(std::string &text) const override;

private:
  std::string literal_; // used when regex_ is null
  std::shared_ptr<const Regex> regex_;
  std::string content_;
};

class SequenceNormalizer : public Normalizer {
public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> items)
      : items_(std::move(items)) {}
  void normalize(std::string &text) const override;

private:
  std::vector<std::unique_ptr<Normalizer>> items_;
};

/// What a split does with the matched delimiters.
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

class PreTokenizer {
public:
  virtual ~PreTokenizer() = default;
  /// Replaces `pieces` by their pre-tokenized pieces.
  virtual void split(std::vector<Piece> &pieces) const = 0;
};

/// Splits on a regex (or a literal, compiled as one).
class SplitPreTokenizer : public PreTokenizer {
public:
  SplitPreTokenizer(std::shared_ptr<const Regex> regex, SplitBehavior behavior, bool invert)
      : regex_(std::move(regex)), behavior_(behavior), invert_(invert) {}
  void split(std::vector<Piece> &pieces) const override;

private:
  std::shared_ptr<const Regex> regex_;
  SplitBehavior behavior_;
  bool invert_;
};

/// GPT-2's byte-level step: optional prefix space, optional GPT-2 regex
/// split, then every byte stands for one character of the alphabet.
class ByteLevelPreTokenizer : public PreTokenizer {
public:
  ByteLevelPreTokenizer(bool addPrefixSpace, std::shared_ptr<const Regex> gpt2Regex)
      : addPrefixSpace_(addPrefixSpace), regex_(std::move(gpt2Regex)) {}
  void split(std::vector<Piece> &pieces) const override;

private:
  bool addPrefixSpace_;
  std::shared_ptr<const Regex> regex_; // null when use_regex is false
};

enum class PrependScheme { Always, First, Never };

/// SentencePiece's whitespace: spaces become the replacement character
/// (U+2581), one is prepended per the scheme, optionally split before each.
class MetaspacePreTokenizer : public PreTokenizer {
public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool splitWords)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(splitWords) {}
  void split(std::vector<Piece> &pieces) const override;

private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

class SequencePreTokenizer : public PreTokenizer {
public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> items)
      : items_(std::move(items)) {}
  void split(std::vector<Piece> &pieces) const override;

private:
  std::vector<std::unique_ptr<PreTokenizer>> items_;
};

/// Applies a regex split with `behavior` to every piece (shared by the
/// Split, Digits, Whitespace and WhitespaceSplit pre-tokenizers).
void splitPieces(std::vector<Piece> &pieces, const Regex &regex, SplitBehavior behavior,
                 bool invert);

} // namespace volt::tok
