//===- OpKinds.h - the plan's op kinds as the compiler names them -*- C++ -*-===//
//
// The names and operand counts of runtime/schema/plan.fbs's OpKind, for
// `vexec.launch` and the plan emitter. The schema is the authority; a unit
// test checks that this table and the generated enum agree.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <string_view>

namespace volt::vexec {

struct OpKindInfo {
  std::string_view name;
  /// Operand counts allowed (optional operands make a range).
  unsigned minOperands;
  unsigned maxOperands;
};

inline constexpr OpKindInfo kOpKinds[] = {
    {"Embedding", 3, 3},         {"RmsNorm", 3, 3},       {"AddRmsNorm", 4, 4},
    {"Linear", 3, 4},            {"QLinear", 3, 4},       {"QkNormRope", 2, 4},
    {"Attention", 7, 7},         {"SiluMul", 2, 2},       {"MoeRouter", 3, 3},
    {"MoeAlign", 3, 3},          {"MoeGroupedQLinear", 5, 5}, {"MoeCombine", 4, 4},
    {"SigmoidGateAdd", 3, 3},    {"AllReduce", 1, 1},     {"AllGather", 2, 2},
    {"GatherRows", 3, 3},        {"MoeGroupedLinear", 5, 5},
};

/// The index of `name` in kOpKinds (= its plan OpKind value).
inline std::optional<unsigned> opKindIndex(std::string_view name) {
  for (unsigned i = 0; i < sizeof(kOpKinds) / sizeof(kOpKinds[0]); ++i)
    if (kOpKinds[i].name == name)
      return i;
  return std::nullopt;
}

/// The step inputs and outputs, by their plan names (StepInput, StepOutput).
inline constexpr std::string_view kStepInputs[] = {"tokens",       "positions",    "slot_mapping",
                                                   "seq_starts",   "context_lens", "block_tables",
                                                   "logits_rows"};
inline constexpr std::string_view kStepOutputs[] = {"logits"};

} // namespace volt::vexec
