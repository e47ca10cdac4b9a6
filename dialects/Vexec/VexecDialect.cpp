//===- VexecDialect.cpp - registration of the vexec dialect --------------===//
#include "dialects/Vexec/VexecDialect.h"
#include "dialects/Vexec/VexecOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace volt::vexec;

#include "dialects/Vexec/VexecDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/Vexec/VexecTypes.cpp.inc"

void VexecDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Vexec/VexecOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/Vexec/VexecTypes.cpp.inc"
      >();
}
