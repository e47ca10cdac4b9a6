//===- EmaScan.cpp -------------------------------------------------------===//
//
// ema_scan: EmaScan, a moving average with a state slot per sequence.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/KernelDefs.h"
#include "compiler/codegen/LaunchContext.h"

namespace volt::codegen::kernels {

Result<PlannedLaunch> planEmaScan(LaunchContext &c, const Variant &v) {
  const auto &p = c.params<plan::EmaScanParamsT>();
  if (p.dim == 0)
    return c.error("dim 0");
  if (c.at(2).kind != OperandKind::Cache)
    return c.error("operand 2 must be the layer's state");
  const uint32_t threads = std::min<uint32_t>(configThreads(v, 128), (p.dim + 31) / 32 * 32);
  KernelRequest r{"ema_scan", {}, threads, 0};
  r.set("dim", p.dim);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = {0, 1, 0, 1};
  l.grid[1] = {0, 0, (p.dim + threads - 1) / threads, 1};
  for (size_t i = 0; i < 8; ++i)
    l.args.push_back(LaunchArg::pointer(c.at(i)));
  l.args.push_back(LaunchArg::seqCount());
  return l;
}

} // namespace volt::codegen::kernels
