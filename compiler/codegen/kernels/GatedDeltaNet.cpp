//===- GatedDeltaNet.cpp -------------------------------------------------===//
//
// causal_conv1d, gated_delta_rule and gated_delta_rule_chunked: the Gated
// DeltaNet mixer's kernels, each walking a sequence's tokens in order with
// its state slot (the chunked form CHUNK tokens at a time).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/KernelDefs.h"
#include "compiler/codegen/LaunchContext.h"

namespace volt::codegen::kernels {

Result<PlannedLaunch> planCausalConv1d(LaunchContext &c, const Variant &v) {
  const auto &p = c.params<plan::CausalConv1dParamsT>();
  if (p.dim == 0 || p.kernel < 2 || p.kernel > 8)
    return c.error("dim " + std::to_string(p.dim) + ", kernel " + std::to_string(p.kernel) +
                   " (a kernel of 2 to 8 expected)");
  if (c.at(2).kind != OperandKind::Cache)
    return c.error("operand 2 must be the layer's conv state");
  const uint32_t threads = std::min<uint32_t>(configThreads(v, 128), (p.dim + 31) / 32 * 32);
  KernelRequest r{"causal_conv1d", {}, threads, 0};
  r.set("dim", p.dim).set("kernel", p.kernel);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = {0, 1, 0, 1};
  l.grid[1] = {0, 0, (p.dim + threads - 1) / threads, 1};
  for (size_t i = 0; i < 8; ++i)
    l.args.push_back(LaunchArg::pointer(c.at(i)));
  l.args.push_back(LaunchArg::seqCount());
  return l;
}

namespace {

/// Both delta-rule kernels: a block per (sequence, value head), the op's
/// twelve operands, S and the norm's epsilon.
PlannedLaunch deltaRuleLaunch(LaunchContext &c, const Variant &v, const KernelRequest &r,
                              const plan::GatedDeltaRuleParamsT &p) {
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = {0, 1, 0, 1};
  l.grid[1] = {0, 0, p.value_heads, 1};
  for (size_t i = 0; i < 12; ++i)
    l.args.push_back(LaunchArg::pointer(c.at(i)));
  l.args.push_back(LaunchArg::seqCount());
  l.args.push_back(LaunchArg::f32Value(p.eps));
  return l;
}

} // namespace

Result<PlannedLaunch> planGatedDeltaRule(LaunchContext &c, const Variant &v) {
  const auto &p = c.params<plan::GatedDeltaRuleParamsT>();
  // A thread holds kKeyBlock rows of a state column in registers; a block
  // holds a head's state.
  const uint32_t block = std::min<uint32_t>(32, p.key_dim);
  const uint32_t threads = p.key_dim ? p.value_dim * (p.key_dim / block) : 0;
  if (p.key_heads == 0 || p.value_heads % p.key_heads != 0 || p.key_dim == 0 ||
      p.key_dim % block != 0 || p.value_dim == 0 || threads > 1024)
    return c.error("key_heads " + std::to_string(p.key_heads) + ", value_heads " +
                   std::to_string(p.value_heads) + ", key_dim " + std::to_string(p.key_dim) +
                   ", value_dim " + std::to_string(p.value_dim) +
                   " (key_dim at most 32 or a multiple of 32, value_dim x key_dim / 32 at most "
                   "1024, value heads a multiple of key heads expected)");
  if (c.at(6).kind != OperandKind::Cache)
    return c.error("operand 6 must be the layer's recurrent state");
  KernelRequest r{"gated_delta_rule", {}, threads, 0};
  r.set("key_heads", p.key_heads).set("value_heads", p.value_heads);
  r.set("key_dim", p.key_dim).set("value_dim", p.value_dim).set("key_block", block);
  return deltaRuleLaunch(c, v, r, p);
}

Result<PlannedLaunch> planGatedDeltaRuleChunked(LaunchContext &c, const Variant &v) {
  const auto &p = c.params<plan::GatedDeltaRuleParamsT>();
  auto config = [&](const char *name, int64_t fallback) {
    auto it = v.config.find(name);
    return it == v.config.end() ? fallback : it->second;
  };
  const int64_t split = config("dv_split", 1), maxSeqs = config("max_seqs", 0);
  const GatedDeltaChunkedShape shape = gatedDeltaChunkedShape(
      config("chunk", kGatedDeltaChunk), p.key_dim, p.value_dim, split);
  if (p.key_heads == 0 || p.value_heads % p.key_heads != 0 || !shape.supported)
    return c.error("key_heads " + std::to_string(p.key_heads) + ", value_heads " +
                   std::to_string(p.value_heads) + ", key_dim " + std::to_string(p.key_dim) +
                   ", value_dim " + std::to_string(p.value_dim) +
                   ", dv_split " + std::to_string(split) +
                   ": gated_delta_rule_chunked serves key and value dims that are multiples of "
                   "16 up to 128, value heads a multiple of key heads, chunks of 32 or 64, the "
                   "value dims split into multiples of 16");
  if (split > 1 && maxSeqs < 1)
    return c.error("gated_delta_rule_chunked with dv_split " + std::to_string(split) +
                   " needs max_seqs (the counters of its blocks)");
  if (shape.sharedBytes > static_cast<uint64_t>(c.target.sharedMemoryPerBlockOptinBytes))
    return c.error("gated_delta_rule_chunked needs " + std::to_string(shape.sharedBytes) +
                   " bytes of shared memory; the SKU allows " +
                   std::to_string(c.target.sharedMemoryPerBlockOptinBytes));
  if (c.at(6).kind != OperandKind::Cache)
    return c.error("operand 6 must be the layer's recurrent state");
  KernelRequest r{"gated_delta_rule_chunked", {}, kGatedDeltaChunkedThreads,
                  static_cast<uint32_t>(shape.sharedBytes)};
  r.set("key_heads", p.key_heads).set("value_heads", p.value_heads);
  r.set("key_dim", p.key_dim).set("value_dim", p.value_dim).set("chunk", shape.chunk);
  if (split > 1)
    r.set("dv_split", split).set("max_seqs", maxSeqs);
  PlannedLaunch l = deltaRuleLaunch(c, v, r, p);
  l.grid[2] = {0, 0, static_cast<uint32_t>(split), 1};
  return l;
}

} // namespace volt::codegen::kernels
