//===- OpContext.cpp ------------------------------------------------------===//
#include "runtime/executor/OpContext.h"

#include <iterator>

namespace volt::executor {

uint8_t *OpContext::pointer(unsigned i) const {
  auto place = plan::operandPlace(rank, operand(i));
  if (!place)
    return nullptr;
  switch (place->region) {
  case plan::Region::Arena:
    return memory_.arena + place->offset;
  case plan::Region::Weights:
    return const_cast<uint8_t *>(memory_.weights) + place->offset;
  case plan::Region::Output:
    return reinterpret_cast<uint8_t *>(memory_.output);
  case plan::Region::Input: {
    // An input the step leaves empty (StateSnapshots: no copies) is null.
    std::span<const int32_t> in = plan::stepInput(batch, place->input);
    return in.empty() ? nullptr : reinterpret_cast<uint8_t *>(const_cast<int32_t *>(in.data()));
  }
  case plan::Region::Cache:
    return memory_.caches + place->offset;
  case plan::Region::Workspace:
    return memory_.workspace + place->offset;
  case plan::Region::Hidden:
    return memory_.hidden;
  }
  return nullptr;
}

int64_t OpContext::rows(unsigned i) const {
  return static_cast<int64_t>(plan::operandRows(rank, operand(i),
                                                static_cast<uint64_t>(batch.numTokens),
                                                static_cast<uint64_t>(batch.numRows())));
}

cpu::DType OpContext::dtype(unsigned i) const {
  return plan::operandDtype(rank, operand(i)) == plan::DType::F32 ? cpu::DType::F32
                                                                  : cpu::DType::F16;
}

const plan::WeightEntry *OpContext::weight(unsigned i) const {
  const plan::Operand &o = operand(i);
  return o.kind() == plan::OperandKind::Weight ? rank.weights()->Get(o.index()) : nullptr;
}

cpu::Nvfp4Matrix OpContext::nvfp4(unsigned i) const {
  const plan::WeightEntry *w = weight(i);
  cpu::Nvfp4Matrix m;
  m.packed = pointer(i);
  m.scales = m.packed + w->scales_offset();
  auto shape = w->shape();
  m.cols = shape->Get(shape->size() - 1);
  m.rows = shape->size() == 3 ? shape->Get(0) * shape->Get(1) : shape->Get(0);
  return m;
}

cpu::Fp8Matrix OpContext::fp8(unsigned i) const {
  const plan::WeightEntry *w = weight(i);
  cpu::Fp8Matrix m;
  m.bytes = pointer(i);
  m.rowScales = reinterpret_cast<const float *>(m.bytes + w->scales_offset());
  // [rows, cols], or [experts, rows, cols]: experts x rows rows (the
  // loader checked the shape).
  const auto *shape = w->shape();
  m.rows = 1;
  for (uint32_t d = 0; d + 1 < shape->size(); ++d)
    m.rows *= shape->Get(d);
  m.cols = shape->Get(shape->size() - 1);
  return m;
}

std::span<const uint32_t> OpContext::partRows(unsigned i) const {
  const plan::WeightEntry *w = weight(i);
  return {w->part_rows()->data(), w->part_rows()->size()};
}

std::span<const float> OpContext::globalScales(unsigned i) const {
  const plan::WeightEntry *w = weight(i);
  return {w->global_scales()->data(), w->global_scales()->size()};
}

OpRunner runnerOf(plan::OpKind kind) {
  static constexpr OpRunner kRunners[] = {
#define VOLT_OP(Kind, Summary) &run##Kind,
#include "runtime/schema/Ops.def"
  };
  const auto index = static_cast<size_t>(kind);
  return index < std::size(kRunners) ? kRunners[index] : nullptr;
}

} // namespace volt::executor
