//===- Ops.h - every op of the cpu backend -----------------------*- C++ -*-===//
//
// One include for the plan executor: the cpu implementation of each
// volt.plan.OpKind (runtime/schema/plan.fbs), the thread pool they share and
// the in-process collectives. The numerics each op guarantees are written
// down in docs/design/cpu-backend.md.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/Activation.h"   // SiluMul, SigmoidGateAdd, SigmoidMul
#include "runtime/cpu/Attention.h"    // Attention
#include "runtime/cpu/Communicator.h" // AllReduce, AllGather
#include "runtime/cpu/Ema.h"          // EmaScan
#include "runtime/cpu/Gather.h"       // Embedding, GatherRows
#include "runtime/cpu/GatedDeltaNet.h" // CausalConv1d, GatedDeltaRule
#include "runtime/cpu/Linear.h"       // Linear, QLinear
#include "runtime/cpu/Moe.h"          // MoeRouter, MoeAlign, MoeGroupedQLinear, MoeCombine
#include "runtime/cpu/Norm.h"         // RmsNorm, AddRmsNorm
#include "runtime/cpu/Rope.h"         // QkNormRope
#include "runtime/cpu/ThreadPool.h"
#include "runtime/cpu/Types.h"
