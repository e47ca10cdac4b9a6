//===- Tokenizer.cpp - encode, decode and streaming decode ---------------===//
#include "runtime/tokenizer/Tokenizer.h"

#include "runtime/tokenizer/AddedVocabulary.h"
#include "runtime/tokenizer/Bpe.h"
#include "runtime/tokenizer/Decoding.h"
#include "runtime/tokenizer/Pipeline.h"

namespace volt::tok {

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

void Tokenizer::tokenizePieces(std::vector<Piece> &pieces, std::vector<int32_t> &ids) const {
  if (preTokenizer_)
    preTokenizer_->split(pieces);
  for (const Piece &p : pieces)
    model_->tokenize(p, ids);
}

void Tokenizer::encodeText(std::string_view text, bool atOrigin, std::vector<int32_t> &ids) const {
  std::string normalized(text);
  if (normalizer_)
    normalizer_->normalize(normalized);
  std::vector<Piece> pieces;
  if (normalizedMatcher_->empty()) {
    if (!normalized.empty())
      pieces.push_back(Piece{std::move(normalized), atOrigin, false});
    tokenizePieces(pieces, ids);
    return;
  }
  std::vector<Segment> segments;
  normalizedMatcher_->split(normalized, segments);
  for (const Segment &s : segments) {
    if (s.id >= 0) {
      tokenizePieces(pieces, ids);
      pieces.clear();
      ids.push_back(s.id);
      continue;
    }
    pieces.push_back(
        Piece{normalized.substr(s.begin, s.end - s.begin), atOrigin && s.begin == 0, false});
  }
  tokenizePieces(pieces, ids);
}

std::vector<int32_t> Tokenizer::encode(std::string_view input, bool addSpecialTokens) const {
  std::string repaired;
  std::string_view text = input;
  if (!isValidUtf8(input)) {
    repaired = repairUtf8(input);
    text = repaired;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (addSpecialTokens && postProcessor_)
    ids = postProcessor_->before;
  std::vector<Segment> segments;
  rawMatcher_->split(text, segments);
  for (const Segment &s : segments) {
    if (s.id >= 0)
      ids.push_back(s.id);
    else
      encodeText(text.substr(s.begin, s.end - s.begin), s.begin == 0, ids);
  }
  if (addSpecialTokens && postProcessor_)
    ids.insert(ids.end(), postProcessor_->after.begin(), postProcessor_->after.end());
  return ids;
}

Result<std::string> Tokenizer::decode(std::span<const int32_t> ids, bool skipSpecialTokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    int32_t id = ids[i];
    if (id >= 0 && static_cast<size_t>(id) < addedById_.size() && addedById_[id] >= 0) {
      const AddedToken &t = addedTokens_[addedById_[id]];
      if (!(skipSpecialTokens && t.special))
        tokens.push_back(t.content);
      continue;
    }
    const std::string *token = model_->idToToken(id);
    if (!token)
      return Error("decode: id " + std::to_string(id) + " (position " + std::to_string(i) +
                   ") is not a token of this tokenizer (vocabulary size " +
                   std::to_string(vocabSize_) + ")");
    tokens.push_back(*token);
  }
  if (!decoder_) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i)
        out += ' ';
      out += tokens[i];
    }
    return out;
  }
  decoder_->decodeChain(tokens);
  std::string out;
  for (const std::string &t : tokens)
    out += t;
  return out;
}

std::optional<int32_t> Tokenizer::tokenToId(std::string_view token) const {
  for (const AddedToken &t : addedTokens_)
    if (t.content == token)
      return t.id;
  auto it = model_->vocab().find(token);
  if (it != model_->vocab().end())
    return it->second;
  return std::nullopt;
}

std::optional<std::string> Tokenizer::idToToken(int32_t id) const {
  if (id >= 0 && static_cast<size_t>(id) < addedById_.size() && addedById_[id] >= 0)
    return addedTokens_[addedById_[id]].content;
  if (const std::string *t = model_->idToToken(id))
    return *t;
  return std::nullopt;
}

bool Tokenizer::isSpecial(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < addedById_.size() && addedById_[id] >= 0 &&
         addedTokens_[addedById_[id]].special;
}

bool Tokenizer::joinsByteTokens() const { return decoder_ && decoder_->joinsByteTokens(); }

namespace {
bool endsWithReplacementChar(const std::string &s) {
  return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}
bool isByteToken(const Tokenizer &t, int32_t id) {
  std::optional<std::string> s = t.idToToken(id);
  return s && s->size() == 6 && s->compare(0, 3, "<0x") == 0 && (*s)[5] == '>';
}
} // namespace

Result<std::string> IncrementalDecoder::step(int32_t id) {
  window_.push_back(id);
  // The text of a byte-fallback run depends on all of its bytes: wait for
  // the run to end.
  if (tokenizer_.joinsByteTokens() && isByteToken(tokenizer_, id)) {
    if (!tokenizer_.idToToken(id))
      return Error("decode: id " + std::to_string(id) + " is not a token of this tokenizer");
    return std::string();
  }
  VOLT_ASSIGN_OR_RETURN(std::string text, tokenizer_.decode(window_, skipSpecialTokens_));
  if (text.size() <= contextText_.size() || endsWithReplacementChar(text) ||
      text.compare(0, contextText_.size(), contextText_) != 0)
    return std::string();
  std::string out = text.substr(contextText_.size());
  // The ids just emitted are the context of the next ones.
  window_.erase(window_.begin(), window_.begin() + static_cast<ptrdiff_t>(contextIds_));
  contextIds_ = window_.size();
  VOLT_ASSIGN_OR_RETURN(contextText_, tokenizer_.decode(window_, skipSpecialTokens_));
  return out;
}

Result<std::string> IncrementalDecoder::finish() {
  VOLT_ASSIGN_OR_RETURN(std::string text, tokenizer_.decode(window_, skipSpecialTokens_));
  std::string out;
  if (text.size() > contextText_.size() && text.compare(0, contextText_.size(), contextText_) == 0)
    out = text.substr(contextText_.size());
  window_.clear();
  contextIds_ = 0;
  contextText_.clear();
  return out;
}

} // namespace volt::tok
