//===- VexecDialect.h - the vexec dialect ------------------------*- C++ -*-===//
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/Types.h"

#include "dialects/Vexec/VexecDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/Vexec/VexecTypes.h.inc"
