//===- Moe.cpp -----------------------------------------------------------===//
//
// The MoE routing kernels: router, align and combine.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/KernelDefs.h"
#include "compiler/codegen/LaunchContext.h"

namespace volt::codegen::kernels {

Result<PlannedLaunch> planMoeRouter(LaunchContext &c, const Variant &v) {
  const auto &p = c.params<plan::MoeRouterParamsT>();
  if (p.top_k < 1 || p.top_k > 32 || p.top_k > p.num_experts)
    return c.error("top_k " + std::to_string(p.top_k) + " of " + std::to_string(p.num_experts) +
                   " experts (moe_router serves 1..32)");
  const uint32_t threads = 128;
  KernelRequest r{"moe_router", {}, threads, 0};
  r.set("experts", p.num_experts).set("top_k", p.top_k).set("renormalize", p.renormalize);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = GridRule::tokens(threads / 32);
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), LaunchArg::pointer(c.at(2)),
            LaunchArg::tokenCount()};
  return l;
}

Result<PlannedLaunch> planMoeAlign(LaunchContext &c, const Variant &v) {
  const auto &p = c.params<plan::MoeAlignParamsT>();
  // Per-warp expert counts in static shared memory: keep them within 32 KiB.
  uint64_t threads = 1024;
  while (threads > 64 && (threads / 32 + 1) * p.num_experts * 4 > 32768)
    threads /= 2;
  if ((threads / 32 + 1) * p.num_experts * 4 > 32768)
    return c.error(std::to_string(p.num_experts) + " experts: moe_align serves at most 2730");
  KernelRequest r{"moe_align", {}, static_cast<uint32_t>(threads), 0};
  r.set("experts", p.num_experts).set("top_k", p.top_k);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = GridRule::one();
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), LaunchArg::pointer(c.at(2)),
            LaunchArg::tokenCount()};
  return l;
}

Result<PlannedLaunch> planMoeCombine(LaunchContext &c, const Variant &v) {
  const auto &p = c.params<plan::MoeCombineParamsT>();
  constexpr uint32_t kTokens = 8;
  KernelRequest r{"moe_combine", {}, configThreads(v, 256), 0};
  r.set("dim", p.dim).set("top_k", p.top_k).set("tokens", kTokens);
  r.set("accumulate", p.accumulate);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = GridRule::tokens(kTokens);
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), LaunchArg::pointer(c.at(2)),
            LaunchArg::pointer(c.at(3)), LaunchArg::tokenCount()};
  return l;
}

} // namespace volt::codegen::kernels
