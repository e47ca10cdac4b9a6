//===- OutputText.cpp - output text, stop strings, held-back text ---------===//
#include "runtime/engine/OutputText.h"

#include <algorithm>

namespace volt::engine {

OutputText::OutputText(std::unique_ptr<Detokenizer> detokenizer, std::vector<std::string> stop,
                       bool includeStopStrInOutput)
    : detokenizer_(std::move(detokenizer)), stop_(std::move(stop)),
      includeStop_(includeStopStrInOutput) {
  if (!includeStop_)
    for (const std::string &s : stop_)
      holdBack_ = std::max(holdBack_, s.size() - 1);
}

std::optional<std::string> OutputText::append(const std::string &piece, bool checkStop) {
  text_ += piece;
  if (!checkStop || piece.empty())
    return std::nullopt;
  for (const std::string &s : stop_) {
    // Only text that ends inside the new piece is searched: a match
    // entirely in older text would have been found before.
    size_t from = text_.size() >= piece.size() + s.size() - 1
                      ? text_.size() - piece.size() - s.size() + 1
                      : 0;
    size_t at = text_.find(s, from);
    if (at == std::string::npos)
      continue;
    if (includeStop_)
      at += s.size();
    text_.resize(std::min(at, text_.size()));
    stopped_ = true;
    return s;
  }
  return std::nullopt;
}

Result<std::optional<std::string>> OutputText::addToken(int32_t token, bool checkStop) {
  if (!detokenizer_ || stopped_)
    return std::optional<std::string>();
  VOLT_ASSIGN_OR_RETURN(std::string piece, detokenizer_->step(token));
  return append(piece, checkStop);
}

Result<std::optional<std::string>> OutputText::finish(bool checkStop) {
  if (!detokenizer_ || stopped_)
    return std::optional<std::string>();
  VOLT_ASSIGN_OR_RETURN(std::string piece, detokenizer_->finish());
  return append(piece, checkStop);
}

std::string OutputText::takeDelta(bool finished) {
  size_t end = text_.size();
  if (!finished) {
    end = end > holdBack_ ? end - holdBack_ : 0;
    // Back up to the start of a UTF-8 character.
    while (end > emitted_ && end < text_.size() &&
           (static_cast<unsigned char>(text_[end]) & 0xC0) == 0x80)
      --end;
  }
  if (end <= emitted_)
    return std::string();
  std::string delta = text_.substr(emitted_, end - emitted_);
  emitted_ = end;
  return delta;
}

} // namespace volt::engine
