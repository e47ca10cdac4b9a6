//===- PlanFormat.h - the plan format's version and file names ---*- C++ -*-===//
#pragma once

#include "runtime/schema/plan_generated.h"

#include <string>

namespace volt::plan {

/// The version this build reads and writes. Bump it on any change an older
/// runtime would misread (plan.fbs's header says when).
inline constexpr uint32_t kFormatVersion = 1;

/// Weight-pack entries start on this boundary.
inline constexpr uint64_t kPackAlignment = 256;

/// "weights.rank0.bin": the pack of rank `rank`, beside the plan file.
inline std::string packFileName(uint32_t rank) {
  return "weights.rank" + std::to_string(rank) + ".bin";
}

} // namespace volt::plan
