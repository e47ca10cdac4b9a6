//===- Passes.h - volt's passes ----------------------------------*- C++ -*-===//
#pragma once

#include "dialects/Vexec/VexecDialect.h"
#include "dialects/Volt/VoltDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace volt {

#define GEN_PASS_DECL
#include "dialects/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/Transforms/Passes.h.inc"

} // namespace volt
