//===- VoltOps.h - the ops of the volt dialect -------------------*- C++ -*-===//
#pragma once

#include "dialects/Volt/VoltDialect.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/Volt/VoltOps.h.inc"
