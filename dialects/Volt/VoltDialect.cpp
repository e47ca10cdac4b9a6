//===- VoltDialect.cpp - registration of the volt dialect ----------------===//
#include "dialects/Volt/VoltDialect.h"
#include "dialects/Volt/VoltOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace volt::ir;

#include "dialects/Volt/VoltDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/Volt/VoltTypes.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Volt/VoltAttrs.cpp.inc"

void VoltDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Volt/VoltOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/Volt/VoltTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Volt/VoltAttrs.cpp.inc"
      >();
}
