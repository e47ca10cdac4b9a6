//===- LaunchArgs.cpp -----------------------------------------------------===//
#include "runtime/cuda/LaunchArgs.h"

#include <cstring>

namespace volt::cuda {

const plan::Launch *selectLaunch(const plan::Op &op, uint32_t tokens) {
  if (!op.launches())
    return nullptr;
  for (const plan::Launch *l : *op.launches())
    if (l->max_tokens() >= tokens)
      return l;
  return nullptr;
}

uint64_t gridExtent(const plan::GridDim *rule, uint64_t tokens, uint64_t seqs, uint64_t rows) {
  if (!rule)
    return 1;
  uint64_t divisor = rule->divisor() ? rule->divisor() : 1;
  uint64_t n = uint64_t{rule->per_token()} * tokens + uint64_t{rule->per_seq()} * seqs +
               uint64_t{rule->per_row()} * rows + rule->fixed();
  return (n + divisor - 1) / divisor;
}

Result<std::vector<uint8_t>> packArguments(const plan::Launch &launch,
                                           const OperandAddress &address, uint32_t tokens,
                                           uint32_t seqs, uint32_t rows) {
  std::vector<uint8_t> buffer;
  auto put = [&](const void *value, size_t size) {
    size_t at = (buffer.size() + size - 1) / size * size;
    buffer.resize(at + size);
    std::memcpy(buffer.data() + at, value, size);
  };
  if (!launch.args())
    return buffer;
  for (const plan::Arg *a : *launch.args()) {
    switch (a->kind()) {
    case plan::ArgKind::Pointer: {
      if (!a->operand())
        return Error("a pointer argument has no operand");
      auto base = address(*a->operand());
      if (!base)
        return base.error();
      uint64_t p = *base + a->offset();
      put(&p, 8);
      break;
    }
    case plan::ArgKind::I32: {
      int32_t v = a->i32();
      put(&v, 4);
      break;
    }
    case plan::ArgKind::F32: {
      float v = a->f32();
      put(&v, 4);
      break;
    }
    case plan::ArgKind::TokenCount: {
      int32_t v = static_cast<int32_t>(tokens);
      put(&v, 4);
      break;
    }
    case plan::ArgKind::SeqCount: {
      int32_t v = static_cast<int32_t>(seqs);
      put(&v, 4);
      break;
    }
    case plan::ArgKind::RowCount: {
      int32_t v = static_cast<int32_t>(rows);
      put(&v, 4);
      break;
    }
    default:
      return Error("argument of unknown kind " + std::to_string(static_cast<int>(a->kind())));
    }
  }
  return buffer;
}

} // namespace volt::cuda
