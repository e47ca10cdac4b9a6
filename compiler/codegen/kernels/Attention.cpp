//===- Attention.cpp -----------------------------------------------------===//
//
// paged_attention and paged_attention_tiled: Attention over the paged KV
// cache, and the split-K workspace they share.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/KernelDefs.h"
#include "compiler/codegen/LaunchContext.h"

namespace volt::codegen::kernels {

namespace {

/// The checks both attention templates share.
Status attentionShape(LaunchContext &c) {
  const auto &p = c.params<plan::AttentionParamsT>();
  const ProgramInfo &g = c.program;
  if (p.num_kv_heads == 0 || p.num_heads % p.num_kv_heads != 0)
    return c.error(std::to_string(p.num_heads) + " query heads over " +
                   std::to_string(p.num_kv_heads) + " kv heads");
  if (g.kvHeads != p.num_kv_heads || g.headDim != p.head_dim || g.kvBlockSize == 0)
    return c.error("the KV cache geometry (" + std::to_string(g.kvHeads) + " heads of " +
                   std::to_string(g.headDim) + ") does not match the op's");
  return Status::success();
}

/// The arguments both attention templates start with: qkv, K and V of the
/// layer, slot mapping, sequence starts, context lengths, block tables, out.
std::vector<LaunchArg> attentionArgs(LaunchContext &c) {
  const OperandInfo &kv = c.at(1);
  return {LaunchArg::pointer(c.at(0)),
          LaunchArg::pointer(kv, 0),
          LaunchArg::pointer(kv, c.program.kvLayerBytes()),
          LaunchArg::pointer(c.at(2)),
          LaunchArg::pointer(c.at(3)),
          LaunchArg::pointer(c.at(4)),
          LaunchArg::pointer(c.at(5)),
          LaunchArg::pointer(c.at(6))};
}

/// The split-K split of the variant (dialects/Transforms/KernelRules.h),
/// its constants set on `r`; an error when the plan's workspace is smaller
/// than it needs.
Result<AttentionSplit> splitOf(LaunchContext &c, const Variant &v, KernelRequest &r) {
  const auto &p = c.params<plan::AttentionParamsT>();
  const ProgramInfo &g = c.program;
  auto splitTokens = v.config.find("split_k_tokens");
  const AttentionSplit split =
      attentionSplit(splitTokens == v.config.end() ? 0 : splitTokens->second,
                     int64_t{g.maxBlocksPerSeq} * g.kvBlockSize, p.num_heads, p.head_dim);
  if (split.maxSplits == 0)
    return split;
  if (g.workspaceBytes < split.workspaceBytes)
    return c.error("split-K attention needs " + std::to_string(split.workspaceBytes) +
                   " bytes of kernel workspace; the plan has " + std::to_string(g.workspaceBytes) +
                   " (internal error: memory planning sizes it by the same rule)");
  r.set("split_k_tokens", split.splitTokens).set("max_splits", split.maxSplits);
  return split;
}

} // namespace

Result<PlannedLaunch> planPagedAttention(LaunchContext &c, const Variant &v) {
  const auto &p = c.params<plan::AttentionParamsT>();
  const ProgramInfo &g = c.program;
  if (p.head_dim == 0 || p.head_dim % 2 != 0 || p.head_dim > 256)
    return c.error("head_dim " + std::to_string(p.head_dim) +
                   ": paged_attention serves even sizes up to 256");
  VOLT_RETURN_IF_ERROR(attentionShape(c));
  KernelRequest r{"paged_attention", {}, 128, 0};
  r.set("heads", p.num_heads).set("kv_heads", p.num_kv_heads).set("head_dim", p.head_dim);
  r.set("block_size", g.kvBlockSize).set("max_blocks", g.maxBlocksPerSeq);
  VOLT_ASSIGN_OR_RETURN(const AttentionSplit split, splitOf(c, v, r));
  PlannedLaunch l = launch(c, v, r);
  // One block per token, then the pool of split chunks.
  l.grid[0] = {1, 0, static_cast<uint32_t>(split.maxSplits), 1};
  l.grid[1] = {0, 0, static_cast<uint32_t>(p.num_kv_heads), 1};
  l.args = attentionArgs(c);
  // Without split the kernel never reads it; the output stands in.
  l.args.push_back(split.maxSplits > 0 ? LaunchArg::workspace(0) : LaunchArg::pointer(c.at(6)));
  l.args.push_back(LaunchArg::tokenCount());
  l.args.push_back(LaunchArg::seqCount());
  return l;
}

Result<PlannedLaunch> planTiledAttention(LaunchContext &c, const Variant &v) {
  const auto &p = c.params<plan::AttentionParamsT>();
  const ProgramInfo &g = c.program;
  if (p.head_dim == 0 || p.head_dim % 16 != 0 || p.head_dim > kTiledAttentionMaxHeadDim)
    return c.error("head_dim " + std::to_string(p.head_dim) +
                   ": paged_attention_tiled serves multiples of 16 up to " +
                   std::to_string(kTiledAttentionMaxHeadDim));
  VOLT_RETURN_IF_ERROR(attentionShape(c));
  auto config = [&](const char *name, int64_t fallback) {
    auto it = v.config.find(name);
    return it == v.config.end() ? fallback : it->second;
  };
  const TiledAttentionShape shape =
      tiledAttentionShape(config("query_tile", 64), config("key_tile", 32), p.head_dim);
  const int64_t group = p.num_heads / p.num_kv_heads;
  if (group > shape.queryTile)
    return c.error("groups of " + std::to_string(group) + " query heads: paged_attention_tiled " +
                   "serves at most query_tile = " + std::to_string(shape.queryTile));
  if (shape.sharedBytes > static_cast<uint64_t>(c.target.sharedMemoryPerBlockOptinBytes))
    return c.error("paged_attention_tiled needs " + std::to_string(shape.sharedBytes) +
                   " bytes of shared memory; the SKU allows " +
                   std::to_string(c.target.sharedMemoryPerBlockOptinBytes));
  KernelRequest r{"paged_attention_tiled",
                  {},
                  static_cast<uint32_t>(shape.threads),
                  static_cast<uint32_t>(shape.sharedBytes)};
  r.set("heads", p.num_heads).set("kv_heads", p.num_kv_heads).set("head_dim", p.head_dim);
  r.set("block_size", g.kvBlockSize).set("max_blocks", g.maxBlocksPerSeq);
  r.set("query_tile", shape.queryTile).set("key_tile", shape.keyTile);
  // Long decodes in the step split as in paged_attention (same rule, same
  // records, so plan-memory's workspace serves both).
  VOLT_ASSIGN_OR_RETURN(const AttentionSplit split, splitOf(c, v, r));
  PlannedLaunch l = launch(c, v, r);
  // A sequence of n new tokens has ceil(n / tt) tiles: at most (T + (tt -
  // 1) S) / tt in all; then the pool of split chunks.
  const uint32_t tileTokens = static_cast<uint32_t>(shape.queryTile / group);
  l.grid[0] = {1, tileTokens - 1, static_cast<uint32_t>(split.maxSplits) * tileTokens, tileTokens};
  l.grid[1] = {0, 0, static_cast<uint32_t>(p.num_kv_heads), 1};
  l.args = attentionArgs(c);
  l.args.push_back(split.maxSplits > 0 ? LaunchArg::workspace(0) : LaunchArg::pointer(c.at(6)));
  l.args.push_back(LaunchArg::tokenCount());
  l.args.push_back(LaunchArg::seqCount());
  return l;
}

uint64_t attentionWorkspace(const OpInfo &op, const Variant &v, const ProgramInfo &g) {
  const auto &p = *op.params.AsAttentionParams();
  auto split = v.config.find("split_k_tokens");
  return attentionSplit(split == v.config.end() ? 0 : split->second,
                        int64_t{g.maxBlocksPerSeq} * g.kvBlockSize, p.num_heads, p.head_dim)
      .workspaceBytes;
}

} // namespace volt::codegen::kernels
