//===- Collectives.cpp - the cpu runners of the collectives --------------===//
//
// Tensor-parallel ranks are threads of one process: the collectives go
// through the in-process communicator, where the ranks meet.
//
//===----------------------------------------------------------------------===//
#include "runtime/executor/OpContext.h"

namespace volt::executor {

void runAllReduce(OpContext &c) {
  c.communicator.allReduce(static_cast<int>(c.rankIndex), c.pointer(0),
                           c.rows(0) * c.op.params_as_AllReduceParams()->dim(), c.dtype(0));
}

void runAllGather(OpContext &c) {
  c.communicator.allGather(static_cast<int>(c.rankIndex), c.pointer(0), c.pointer(1), c.rows(0),
                           c.op.params_as_AllGatherParams()->dim(), c.dtype(0));
}

} // namespace volt::executor
