//===- VoltDialect.h - the volt dialect --------------------------*- C++ -*-===//
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/Types.h"

#include "dialects/Volt/VoltDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/Volt/VoltTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Volt/VoltAttrs.h.inc"
