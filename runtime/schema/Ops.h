//===- Ops.h - the op kinds' operands and params, as data -------*- C++ -*-===//
//
// The table Ops.def defines, for code that checks or builds ops by kind
// without knowing each kind: the `vexec.launch` verifier, the decoding of
// its params, the plan loader's checks, the schema generator. It needs no
// generated header (the generator that writes ops.fbs includes it), so
// kinds are their index here; PlanFormat.h relates them to plan::OpKind.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace volt::plan::ops {

/// How an op uses an operand.
enum class Role : uint8_t {
  In,
  Out,
  /// Read and written in place.
  InOut,
  /// An input a launch may leave out (all of an op's optional operands, or
  /// none of them).
  Optional,
};

/// The type of a param: in the plan, a field of the kind's params table; in
/// `vexec.launch`, an attribute of its params dictionary.
enum class ParamType : uint8_t {
  /// uint; an i64 integer attribute in [0, 2^32).
  U32,
  /// float; a float attribute.
  F32,
  /// bool; a bool attribute.
  Bool,
  /// plan.DType; a string attribute naming it in lower case ("f16").
  DType,
  /// plan.Epilogue; a string attribute naming it in snake case ("silu_mul").
  Epilogue,
};

struct OperandDesc {
  std::string_view name;
  Role role = Role::In;
  std::string_view doc;
};

struct ParamDesc {
  std::string_view name;
  ParamType type = ParamType::U32;
  /// The schema's spelling of the default; empty when every launch must
  /// give the param.
  std::string_view defaultValue;
  std::string_view doc;

  bool required() const { return defaultValue.empty(); }
};

struct OpDesc {
  /// The kind's value in plan::OpKind.
  uint16_t kind = 0;
  std::string_view name;
  std::string_view summary;
  std::span<const OperandDesc> operands;
  std::span<const ParamDesc> params;

  /// Operand counts a launch may give: without and with the optional ones.
  unsigned minOperands() const;
  unsigned maxOperands() const { return static_cast<unsigned>(operands.size()); }
  /// The param named `name`, if the kind has one.
  const ParamDesc *param(std::string_view name) const;
};

/// Every kind, in value order.
std::span<const OpDesc> allOps();

/// The kind of value `kind`; null past the last kind.
const OpDesc *opByValue(uint16_t kind);

/// The kind named `name` ("QLinear").
const OpDesc *opByName(std::string_view name);

/// The name of a param type as the schema spells it ("uint", "DType").
std::string_view schemaTypeName(ParamType type);

/// The name of a param type for messages ("an unsigned 32-bit integer").
std::string_view describeType(ParamType type);

/// A schema name in snake case, as IR attributes and messages spell it:
/// "SlotMapping" -> "slot_mapping", "F16" -> "f16", "SiluMul" -> "silu_mul".
std::string snakeCase(std::string_view name);

} // namespace volt::plan::ops
