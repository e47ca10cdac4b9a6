//===- Tokenizer.h - Hugging Face tokenizer.json, in C++ -------*- C++ -*-===//
//
// Turns text into the token ids that Hugging Face `tokenizers` gives for the
// same tokenizer.json, and ids back into text. Supported: the BPE model
// (byte-level, as Qwen and Llama 3 use; SentencePiece-style with byte
// fallback, as Llama 2 and Mistral use), the normalizers, pre-tokenizers,
// decoders and post-processors those files use, and added/special tokens.
// Anything else is rejected when loading, naming the JSON path of the
// thing. See docs/tokenizer.md.
//
// Text that is not valid UTF-8 is repaired before encoding: each ill-formed
// sequence becomes U+FFFD (one per maximal subpart, as Python's
// `bytes.decode(errors='replace')` does), so `encode(bytes)` equals HF's
// `encode(bytes.decode('utf-8', 'replace'))`.
//
// A Tokenizer is immutable after loading; encode and decode may be called
// from many threads at once.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace volt::tok {

class BpeModel;
class AddedTokenMatcher;
class Normalizer;
class PreTokenizer;
class Decoder;
struct AddedToken;
struct PostProcessor;
struct Piece;

class Tokenizer {
public:
  /// Parses a tokenizer.json document. `origin` names it in messages
  /// ("tokenizer.json: model.type: unsupported 'WordPiece' (supported: BPE)").
  static Result<std::unique_ptr<Tokenizer>> fromJson(std::string_view json,
                                                     std::string_view origin);
  /// Reads and parses a tokenizer.json file.
  static Result<std::unique_ptr<Tokenizer>> fromFile(const std::string &path);
  ~Tokenizer();
  Tokenizer(const Tokenizer &) = delete;
  Tokenizer &operator=(const Tokenizer &) = delete;

  /// The ids of `text` (any bytes; see the file comment for invalid UTF-8).
  /// With `addSpecialTokens`, the post-processor's template is applied
  /// (e.g. a BOS token first).
  std::vector<int32_t> encode(std::string_view text, bool addSpecialTokens) const;

  /// The text of `ids`; with `skipSpecialTokens`, added tokens marked
  /// special are left out. An id that is no token is an error naming it.
  Result<std::string> decode(std::span<const int32_t> ids, bool skipSpecialTokens) const;

  /// The id of a token string (added tokens first, then the model's), if any.
  std::optional<int32_t> tokenToId(std::string_view token) const;
  /// The token string of an id, if any.
  std::optional<std::string> idToToken(int32_t id) const;
  /// One past the largest id (model and added tokens).
  size_t vocabSize() const { return vocabSize_; }
  /// Whether `id` is an added token marked special.
  bool isSpecial(int32_t id) const;
  /// The added tokens, in file order.
  const std::vector<AddedToken> &addedTokens() const { return addedTokens_; }

  /// Whether the decoder makes text of a run of `<0xAB>` tokens as a whole
  /// (streaming then waits for the run to end).
  bool joinsByteTokens() const;

private:
  friend class TokenizerLoader;
  Tokenizer();
  void encodeText(std::string_view text, bool atOrigin, std::vector<int32_t> &ids) const;
  void tokenizePieces(std::vector<Piece> &pieces, std::vector<int32_t> &ids) const;

  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> preTokenizer_;
  std::unique_ptr<Decoder> decoder_;
  std::unique_ptr<PostProcessor> postProcessor_;
  std::vector<AddedToken> addedTokens_;
  std::unique_ptr<AddedTokenMatcher> rawMatcher_;        // tokens with normalized: false
  std::unique_ptr<AddedTokenMatcher> normalizedMatcher_; // tokens with normalized: true
  std::vector<int32_t> addedById_;                       // id -> index in addedTokens_, or -1
  size_t vocabSize_ = 0;
};

/// Streams text out of ids as they are generated, with the semantics of
/// HF's `DecodeStream`: each step returns the text that the new id
/// completes, never half a UTF-8 character; `finish` returns what is left,
/// so that the concatenation of all outputs equals `decode` of all ids.
class IncrementalDecoder {
public:
  IncrementalDecoder(const Tokenizer &tokenizer, bool skipSpecialTokens)
      : tokenizer_(tokenizer), skipSpecialTokens_(skipSpecialTokens) {}

  /// Adds one id; returns the text it completes (possibly empty).
  Result<std::string> step(int32_t id);
  /// The text held back at the end of the stream (e.g. an incomplete
  /// character, which decodes to U+FFFD).
  Result<std::string> finish();

private:
  const Tokenizer &tokenizer_;
  bool skipSpecialTokens_;
  std::vector<int32_t> window_; // context ids, then ids not yet emitted
  size_t contextIds_ = 0;       // how many of window_ are context
  std::string contextText_;     // decode of the context ids
};

} // namespace volt::tok
