// Fuzzes plan verification: any bytes are accepted as a consistent plan or
// refused with a message; never a crash or a read outside the buffer.
#include "runtime/plan/PlanFile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto status = volt::plan::LoadedPlan::verifyBuffer({data, size}, "fuzz.vplan");
  if (!status.ok())
    return 0;
  // A verified plan can be walked without bounds surprises.
  const volt::plan::Plan *plan = volt::plan::GetPlan(data);
  size_t ops = 0;
  for (const volt::plan::Rank *rank : *plan->ranks())
    for (const volt::plan::Op *op : *rank->ops())
      ops += op->operands()->size();
  volatile size_t sink = ops;
  (void)sink;
  return 0;
}
