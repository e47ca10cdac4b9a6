//===- PieceDetokenizer.h - a table detokenizer for engine tests -*- C++ -*-===//
#pragma once

#include "runtime/engine/Detokenizer.h"

#include <memory>
#include <string>
#include <vector>

namespace volt::engine::testing {

/// Token i's text is pieces[i % pieces.size()]; `finish` returns `tail`.
/// Records every token it was given.
class PieceDetokenizer : public Detokenizer {
public:
  explicit PieceDetokenizer(std::vector<std::string> pieces, std::string tail = "",
                            std::vector<int32_t> *seen = nullptr)
      : pieces_(std::move(pieces)), tail_(std::move(tail)), seen_(seen) {}
  Result<std::string> step(int32_t token) override {
    if (seen_)
      seen_->push_back(token);
    if (token < 0)
      return Error("unknown token " + std::to_string(token));
    return pieces_[size_t(token) % pieces_.size()];
  }
  Result<std::string> finish() override { return tail_; }

private:
  std::vector<std::string> pieces_;
  std::string tail_;
  std::vector<int32_t> *seen_;
};

} // namespace volt::engine::testing
