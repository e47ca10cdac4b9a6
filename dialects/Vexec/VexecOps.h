//===- VexecOps.h - the ops of the vexec dialect -----------------*- C++ -*-===//
#pragma once

#include "dialects/Vexec/VexecDialect.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/Vexec/VexecOps.h.inc"
