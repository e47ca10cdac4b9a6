//===- Ops.cpp - the table of Ops.def -------------------------------------===//
#include "runtime/schema/Ops.h"

#include <vector>

namespace volt::plan::ops {
namespace {

/// Each kind's operands and params, in Ops.def's order, tagged with the
/// kind's name.
struct TaggedOperand {
  std::string_view op;
  OperandDesc desc;
};
struct TaggedParam {
  std::string_view op;
  ParamDesc desc;
};

constexpr std::string_view kNames[] = {
#define VOLT_OP(Kind, Summary) #Kind,
#include "runtime/schema/Ops.def"
};

constexpr std::string_view kSummaries[] = {
#define VOLT_OP(Kind, Summary) Summary,
#include "runtime/schema/Ops.def"
};

constexpr TaggedOperand kOperands[] = {
#define VOLT_OPERAND(Kind, name, R, Doc) {#Kind, {#name, Role::R, Doc}},
#include "runtime/schema/Ops.def"
};

constexpr TaggedParam kParams[] = {
#define VOLT_PARAM(Kind, name, T, Default, Doc) {#Kind, {#name, ParamType::T, Default, Doc}},
#include "runtime/schema/Ops.def"
};

/// The spans of allOps() point into this.
struct Table {
  std::vector<std::vector<OperandDesc>> operands;
  std::vector<std::vector<ParamDesc>> params;
  std::vector<OpDesc> ops;

  Table() : operands(std::size(kNames)), params(std::size(kNames)) {
    for (size_t k = 0; k < std::size(kNames); ++k) {
      for (const TaggedOperand &o : kOperands)
        if (o.op == kNames[k])
          operands[k].push_back(o.desc);
      for (const TaggedParam &p : kParams)
        if (p.op == kNames[k])
          params[k].push_back(p.desc);
      OpDesc d;
      d.kind = static_cast<uint16_t>(k);
      d.name = kNames[k];
      d.summary = kSummaries[k];
      d.operands = operands[k];
      d.params = params[k];
      ops.push_back(d);
    }
  }
};

} // namespace

unsigned OpDesc::minOperands() const {
  unsigned n = 0;
  for (const OperandDesc &o : operands)
    n += o.role != Role::Optional;
  return n;
}

const ParamDesc *OpDesc::param(std::string_view n) const {
  for (const ParamDesc &p : params)
    if (p.name == n)
      return &p;
  return nullptr;
}

std::span<const OpDesc> allOps() {
  static const Table table;
  return table.ops;
}

const OpDesc *opByValue(uint16_t kind) {
  auto ops = allOps();
  return kind < ops.size() ? &ops[kind] : nullptr;
}

const OpDesc *opByName(std::string_view name) {
  for (const OpDesc &d : allOps())
    if (d.name == name)
      return &d;
  return nullptr;
}

std::string_view schemaTypeName(ParamType type) {
  switch (type) {
  case ParamType::U32:
    return "uint";
  case ParamType::F32:
    return "float";
  case ParamType::Bool:
    return "bool";
  case ParamType::DType:
    return "DType";
  case ParamType::Epilogue:
    return "Epilogue";
  }
  return "?";
}

std::string_view describeType(ParamType type) {
  switch (type) {
  case ParamType::U32:
    return "an unsigned 32-bit integer";
  case ParamType::F32:
    return "a float";
  case ParamType::Bool:
    return "a bool";
  case ParamType::DType:
    return "a dtype name";
  case ParamType::Epilogue:
    return "an epilogue name";
  }
  return "?";
}

std::string snakeCase(std::string_view name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool upper = c >= 'A' && c <= 'Z';
    // A capital starts a word after a lower-case letter or digit ("SlotMapping"),
    // not inside a run of capitals ("F8E4M3" stays one word).
    if (upper && i > 0 && name[i - 1] >= 'a' && name[i - 1] <= 'z')
      out += '_';
    out += upper ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return out;
}

} // namespace volt::plan::ops
