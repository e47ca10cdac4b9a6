//===- KernelDefs.cpp -----------------------------------------------------===//
#include "compiler/codegen/KernelDefs.h"

#include "compiler/codegen/LaunchContext.h"

#include <vector>

namespace volt::codegen {

std::span<const KernelDef> allKernels() {
  static const std::vector<KernelDef> table = {
#define VOLT_KERNEL(name, Kind, planner, workspace)                                                \
  KernelDef{#name, plan::OpKind::Kind, &kernels::planner, kernels::workspace},
#include "compiler/codegen/Kernels.def"
      // The sampler: top_candidates over the step's logits (PlanKernels).
      KernelDef{"top_candidates", std::nullopt, nullptr, nullptr},
  };
  return table;
}

const KernelDef *kernelNamed(std::string_view name) {
  for (const KernelDef &k : allKernels())
    if (k.name == name)
      return &k;
  return nullptr;
}

} // namespace volt::codegen
