//===- Diagnostics.cpp ----------------------------------------------------===//
#include "compiler/spec/Diagnostics.h"

namespace volt::spec {

void Diagnostics::error(SourceLocation where, const std::string &message) {
  std::string line = fileName_;
  if (where.line > 0) {
    line += ':';
    line += std::to_string(where.line);
    line += ':';
    line += std::to_string(where.column);
  }
  line += ": error: ";
  line += message;
  errors_.push_back(std::move(line));
}

void Diagnostics::appendFormatted(const std::string &text) { errors_.push_back(text); }

Error Diagnostics::toError() const {
  std::string out;
  size_t shown = std::min(errors_.size(), kMaxReported);
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0)
      out += '\n';
    out += errors_[i];
  }
  if (errors_.size() > shown)
    out += "\n" + fileName_ + ": note: " + std::to_string(errors_.size() - shown) +
           " more errors not shown";
  return Error(out);
}

} // namespace volt::spec
