//===- Launches.cpp -------------------------------------------------------===//
//
// One function per op family. Each builds the kernel request (the
// template's constants), the grid rule and the argument list in the order
// of the template's entry point; the templates' banner comments state the
// same contract from their side.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Launches.h"

#include <algorithm>
#include <numeric>

namespace volt::codegen {

LaunchArg LaunchArg::pointer(const OperandInfo &o, uint64_t offset) {
  LaunchArg a;
  a.kind = Kind::Pointer;
  a.operandKind = o.kind;
  a.operandIndex = o.index;
  a.offset = offset;
  return a;
}

LaunchArg LaunchArg::workspace(uint32_t offset) {
  LaunchArg a;
  a.kind = Kind::Pointer;
  a.operandKind = OperandKind::Workspace;
  a.operandIndex = offset;
  return a;
}

LaunchArg LaunchArg::i32Value(int32_t v) {
  LaunchArg a;
  a.kind = Kind::I32;
  a.i32 = v;
  return a;
}

LaunchArg LaunchArg::f32Value(float v) {
  LaunchArg a;
  a.kind = Kind::F32;
  a.f32 = v;
  return a;
}

LaunchArg LaunchArg::tokenCount() {
  LaunchArg a;
  a.kind = Kind::TokenCount;
  return a;
}

LaunchArg LaunchArg::seqCount() {
  LaunchArg a;
  a.kind = Kind::SeqCount;
  return a;
}

size_t KernelRegistry::add(const KernelRequest &request) {
  std::string key = request.key();
  auto it = byKey_.find(key);
  if (it != byKey_.end())
    return it->second;
  byKey_[key] = requests_.size();
  requests_.push_back(request);
  return requests_.size() - 1;
}

AttentionSplit attentionSplit(int64_t splitKTokens, int64_t maxContext, int64_t heads,
                              int64_t headDim) {
  AttentionSplit s;
  if (splitKTokens <= 0 || maxContext <= splitKTokens)
    return s;
  s.splitTokens =
      std::max(splitKTokens, (maxContext + kMaxAttentionSplits - 1) / kMaxAttentionSplits);
  s.maxSplits = (maxContext + s.splitTokens - 1) / s.splitTokens;
  // Fewer than 2 maxSplits records (templates/paged_attention.cu).
  s.workspaceBytes = static_cast<uint64_t>(2 * s.maxSplits * heads * (headDim + 2)) * 4;
  return s;
}

TiledAttentionShape tiledAttentionShape(int64_t queryTile, int64_t keyTile, int64_t headDim) {
  TiledAttentionShape s;
  s.queryTile = std::clamp<int64_t>(queryTile / 16 * 16, 16, 128);
  s.keyTile = std::clamp<int64_t>(keyTile / 16 * 16, 16, 128);
  // Q, K (or P, which shares its buffer) and V^T, rows padded by 8 halves
  // (templates/paged_attention_tiled.cu).
  const int64_t q = s.queryTile * (headDim + 8);
  const int64_t k = std::max(s.keyTile * (headDim + 8), s.queryTile * (s.keyTile + 8));
  const int64_t vt = headDim * (s.keyTile + 8);
  s.sharedBytes = static_cast<uint64_t>(2 * (q + k + vt));
  return s;
}

uint64_t nvfp4ScalesOffset(const std::vector<int64_t> &shape) {
  uint64_t elements = 1;
  for (int64_t d : shape)
    elements *= static_cast<uint64_t>(d);
  return (elements / 2 + 255) / 256 * 256;
}

namespace {

/// The E2M1 conversion leaves elements 2^-14 of their value; the epilogue
/// puts it back together with the global scale (exact: a power of two).
constexpr float kE2M1Bias = 16384.0f;

/// Token columns of a GEMV tile (templates/common/gemv.cuh).
constexpr int64_t kGemvMaxTokens = 8;

struct Context {
  const OpInfo &op;
  const ProgramInfo &program;
  const TargetInfo &target;
  KernelRegistry &registry;

  Error error(const std::string &what) const {
    return Error("op '" + op.name + "' (" + op.kind + "): " + what);
  }
  const OperandInfo &at(size_t i) const { return op.operands[i]; }
};

/// Rows of an activation operand: T, or S for per-sequence buffers.
GridRule rowsRule(const OperandInfo &o, uint32_t perBlock = 1) {
  return o.perSequence ? GridRule{0, 1, 0, perBlock} : GridRule{1, 0, 0, perBlock};
}

LaunchArg rowsArg(const OperandInfo &o) {
  return o.perSequence ? LaunchArg::seqCount() : LaunchArg::tokenCount();
}

uint32_t configThreads(const Variant &v, uint32_t fallback) {
  auto it = v.config.find("threads");
  int64_t t = it == v.config.end() ? fallback : it->second;
  return static_cast<uint32_t>(std::clamp<int64_t>(t / 32 * 32, 32, 1024));
}

PlannedLaunch launch(Context &c, const Variant &v, KernelRequest request) {
  PlannedLaunch l;
  l.maxTokens = static_cast<uint32_t>(std::min<int64_t>(v.maxTokens, UINT32_MAX));
  l.block[0] = request.threads;
  l.sharedBytes = request.dynamicSharedBytes;
  l.kernel = c.registry.add(request);
  return l;
}

// ---- Element-wise and routing ops -----------------------------------------

Result<PlannedLaunch> embedding(Context &c, const Variant &v) {
  const OperandInfo &table = c.at(1);
  int64_t rows =
      c.op.params.vocabRows ? c.op.params.vocabRows : (table.shape.empty() ? 0 : table.shape[0]);
  KernelRequest r{"embedding", {}, configThreads(v, 128), 0};
  r.set("dim", c.op.params.dim).set("vocab_rows", rows);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = GridRule::tokens();
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(table), LaunchArg::pointer(c.at(2)),
            LaunchArg::tokenCount(),
            LaunchArg::i32Value(static_cast<int32_t>(c.op.params.vocabStart))};
  return l;
}

Result<PlannedLaunch> rmsNorm(Context &c, const Variant &v, bool add) {
  const OperandInfo &in = c.at(0);
  KernelRequest r{add ? "add_rms_norm" : "rms_norm", {}, configThreads(v, 256), 0};
  r.set("dim", c.op.params.dim).set("in_f32", in.f32);
  if (add)
    r.set("res_f32", c.at(1).f32);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = rowsRule(in);
  for (size_t i = 0; i < c.op.operands.size(); ++i)
    l.args.push_back(LaunchArg::pointer(c.at(i)));
  l.args.push_back(rowsArg(in));
  l.args.push_back(LaunchArg::f32Value(c.op.params.eps));
  return l;
}

Result<PlannedLaunch> qkNormRope(Context &c, const Variant &v) {
  const OpParamValues &p = c.op.params;
  if (p.headDim <= 0 || p.headDim % 2 != 0 || p.headDim > 2048)
    return c.error("head_dim " + std::to_string(p.headDim) + " (an even size up to 2048 expected)");
  bool norm = c.op.operands.size() == 4;
  KernelRequest r{"qk_norm_rope", {}, static_cast<uint32_t>((p.headDim / 2 + 31) / 32 * 32), 0};
  r.set("heads", p.numHeads).set("kv_heads", p.numKvHeads).set("head_dim", p.headDim);
  r.set("has_norm", norm);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = GridRule::tokens();
  l.grid[1] = {0, 0, static_cast<uint32_t>(p.numHeads + p.numKvHeads), 1};
  for (size_t i = 0; i < c.op.operands.size(); ++i)
    l.args.push_back(LaunchArg::pointer(c.at(i)));
  l.args.push_back(LaunchArg::tokenCount());
  l.args.push_back(LaunchArg::f32Value(p.eps));
  l.args.push_back(LaunchArg::f32Value(p.ropeTheta));
  return l;
}

/// The checks both attention templates share.
Status attentionShape(Context &c) {
  const OpParamValues &p = c.op.params;
  const ProgramInfo &g = c.program;
  if (p.numKvHeads <= 0 || p.numHeads % p.numKvHeads != 0)
    return c.error(std::to_string(p.numHeads) + " query heads over " +
                   std::to_string(p.numKvHeads) + " kv heads");
  if (g.kvHeads != static_cast<uint32_t>(p.numKvHeads) ||
      g.headDim != static_cast<uint32_t>(p.headDim) || g.kvBlockSize == 0)
    return c.error("the KV cache geometry (" + std::to_string(g.kvHeads) + " heads of " +
                   std::to_string(g.headDim) + ") does not match the op's");
  return Status::success();
}

/// The arguments both attention templates start with: qkv, K and V of the
/// layer, slot mapping, sequence starts, context lengths, block tables, out.
std::vector<LaunchArg> attentionArgs(Context &c) {
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

Result<PlannedLaunch> attention(Context &c, const Variant &v) {
  const OpParamValues &p = c.op.params;
  const ProgramInfo &g = c.program;
  if (p.headDim <= 0 || p.headDim % 2 != 0 || p.headDim > 256)
    return c.error("head_dim " + std::to_string(p.headDim) +
                   ": paged_attention serves even sizes up to 256");
  VOLT_RETURN_IF_ERROR(attentionShape(c));
  KernelRequest r{"paged_attention", {}, 128, 0};
  r.set("heads", p.numHeads).set("kv_heads", p.numKvHeads).set("head_dim", p.headDim);
  r.set("block_size", g.kvBlockSize).set("max_blocks", g.maxBlocksPerSeq);
  auto splitTokens = v.config.find("split_k_tokens");
  const AttentionSplit split =
      attentionSplit(splitTokens == v.config.end() ? 0 : splitTokens->second,
                     int64_t{g.maxBlocksPerSeq} * g.kvBlockSize, p.numHeads, p.headDim);
  if (split.maxSplits > 0) {
    if (g.workspaceBytes < split.workspaceBytes)
      return c.error("split-K attention needs " + std::to_string(split.workspaceBytes) +
                     " bytes of kernel workspace; the plan has " +
                     std::to_string(g.workspaceBytes) +
                     " (internal error: memory planning sizes it by the same rule)");
    r.set("split_k_tokens", split.splitTokens).set("max_splits", split.maxSplits);
  }
  PlannedLaunch l = launch(c, v, r);
  // One block per token, then the pool of split chunks.
  l.grid[0] = {1, 0, static_cast<uint32_t>(split.maxSplits), 1};
  l.grid[1] = {0, 0, static_cast<uint32_t>(p.numKvHeads), 1};
  l.args = attentionArgs(c);
  // Without split the kernel never reads it; the output stands in.
  l.args.push_back(split.maxSplits > 0 ? LaunchArg::workspace(0) : LaunchArg::pointer(c.at(6)));
  l.args.push_back(LaunchArg::tokenCount());
  l.args.push_back(LaunchArg::seqCount());
  return l;
}

Result<PlannedLaunch> tiledAttention(Context &c, const Variant &v) {
  const OpParamValues &p = c.op.params;
  const ProgramInfo &g = c.program;
  if (p.headDim <= 0 || p.headDim % 16 != 0 || p.headDim > kTiledAttentionMaxHeadDim)
    return c.error("head_dim " + std::to_string(p.headDim) +
                   ": paged_attention_tiled serves multiples of 16 up to " +
                   std::to_string(kTiledAttentionMaxHeadDim));
  VOLT_RETURN_IF_ERROR(attentionShape(c));
  auto config = [&](const char *name, int64_t fallback) {
    auto it = v.config.find(name);
    return it == v.config.end() ? fallback : it->second;
  };
  const TiledAttentionShape shape =
      tiledAttentionShape(config("query_tile", 64), config("key_tile", 32), p.headDim);
  const int64_t group = p.numHeads / p.numKvHeads;
  if (group > shape.queryTile)
    return c.error("groups of " + std::to_string(group) + " query heads: paged_attention_tiled " +
                   "serves at most query_tile = " + std::to_string(shape.queryTile));
  if (shape.sharedBytes > static_cast<uint64_t>(c.target.sharedMemoryPerBlockOptinBytes))
    return c.error("paged_attention_tiled needs " + std::to_string(shape.sharedBytes) +
                   " bytes of shared memory; the SKU allows " +
                   std::to_string(c.target.sharedMemoryPerBlockOptinBytes));
  KernelRequest r{"paged_attention_tiled",
                  {},
                  static_cast<uint32_t>(shape.queryTile * 2),
                  static_cast<uint32_t>(shape.sharedBytes)};
  r.set("heads", p.numHeads).set("kv_heads", p.numKvHeads).set("head_dim", p.headDim);
  r.set("block_size", g.kvBlockSize).set("max_blocks", g.maxBlocksPerSeq);
  r.set("query_tile", shape.queryTile).set("key_tile", shape.keyTile);
  // Long decodes in the step split as in paged_attention (same rule, same
  // records, so plan-memory's workspace serves both).
  const AttentionSplit split =
      attentionSplit(config("split_k_tokens", 0), int64_t{g.maxBlocksPerSeq} * g.kvBlockSize,
                     p.numHeads, p.headDim);
  if (split.maxSplits > 0) {
    if (g.workspaceBytes < split.workspaceBytes)
      return c.error("split-K attention needs " + std::to_string(split.workspaceBytes) +
                     " bytes of kernel workspace; the plan has " +
                     std::to_string(g.workspaceBytes) +
                     " (internal error: memory planning sizes it by the same rule)");
    r.set("split_k_tokens", split.splitTokens).set("max_splits", split.maxSplits);
  }
  PlannedLaunch l = launch(c, v, r);
  // A sequence of n new tokens has ceil(n / tt) tiles: at most (T + (tt -
  // 1) S) / tt in all; then the pool of split chunks.
  const uint32_t tileTokens = static_cast<uint32_t>(shape.queryTile / group);
  l.grid[0] = {1, tileTokens - 1, static_cast<uint32_t>(split.maxSplits) * tileTokens, tileTokens};
  l.grid[1] = {0, 0, static_cast<uint32_t>(p.numKvHeads), 1};
  l.args = attentionArgs(c);
  l.args.push_back(split.maxSplits > 0 ? LaunchArg::workspace(0) : LaunchArg::pointer(c.at(6)));
  l.args.push_back(LaunchArg::tokenCount());
  l.args.push_back(LaunchArg::seqCount());
  return l;
}

Result<PlannedLaunch> siluMul(Context &c, const Variant &v) {
  KernelRequest r{"silu_mul", {}, configThreads(v, 256), 0};
  r.set("dim", c.op.params.dim);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = rowsRule(c.at(0));
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), rowsArg(c.at(0))};
  return l;
}

Result<PlannedLaunch> sigmoidGateAdd(Context &c, const Variant &v) {
  KernelRequest r{"sigmoid_gate_add", {}, configThreads(v, 256), 0};
  r.set("dim", c.op.params.dim).set("gate_f32", c.at(2).f32);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = rowsRule(c.at(0));
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), LaunchArg::pointer(c.at(2)),
            rowsArg(c.at(0))};
  return l;
}

Result<PlannedLaunch> gatherRows(Context &c, const Variant &v) {
  KernelRequest r{"gather_rows", {}, configThreads(v, 128), 0};
  r.set("dim", c.op.params.dim).set("element_bytes", c.at(0).f32 ? 4 : 2);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = {0, 1, 0, 1};
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), LaunchArg::pointer(c.at(2)),
            LaunchArg::seqCount()};
  return l;
}

Result<PlannedLaunch> moeRouter(Context &c, const Variant &v) {
  const OpParamValues &p = c.op.params;
  if (p.topK < 1 || p.topK > 32 || p.topK > p.numExperts)
    return c.error("top_k " + std::to_string(p.topK) + " of " + std::to_string(p.numExperts) +
                   " experts (moe_router serves 1..32)");
  const uint32_t threads = 128;
  KernelRequest r{"moe_router", {}, threads, 0};
  r.set("experts", p.numExperts).set("top_k", p.topK).set("renormalize", p.renormalize);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = GridRule::tokens(threads / 32);
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), LaunchArg::pointer(c.at(2)),
            LaunchArg::tokenCount()};
  return l;
}

Result<PlannedLaunch> moeAlign(Context &c, const Variant &v) {
  const OpParamValues &p = c.op.params;
  // Per-warp expert counts in static shared memory: keep them within 32 KiB.
  uint32_t threads = 1024;
  while (threads > 64 && (threads / 32 + 1) * p.numExperts * 4 > 32768)
    threads /= 2;
  if ((threads / 32 + 1) * p.numExperts * 4 > 32768)
    return c.error(std::to_string(p.numExperts) + " experts: moe_align serves at most 2730");
  KernelRequest r{"moe_align", {}, threads, 0};
  r.set("experts", p.numExperts).set("top_k", p.topK);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = GridRule::one();
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), LaunchArg::pointer(c.at(2)),
            LaunchArg::tokenCount()};
  return l;
}

Result<PlannedLaunch> moeCombine(Context &c, const Variant &v) {
  const OpParamValues &p = c.op.params;
  constexpr uint32_t kTokens = 8;
  KernelRequest r{"moe_combine", {}, configThreads(v, 256), 0};
  r.set("dim", p.dim).set("top_k", p.topK).set("tokens", kTokens);
  r.set("accumulate", p.accumulate);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = GridRule::tokens(kTokens);
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), LaunchArg::pointer(c.at(2)),
            LaunchArg::pointer(c.at(3)), LaunchArg::tokenCount()};
  return l;
}

// ---- GEMMs ----------------------------------------------------------------

/// The facts every GEMM form shares.
struct GemmShape {
  int64_t k = 0, n = 0;
  bool nvfp4 = false, silu = false, outF32 = false, hasBias = false;
  bool moe = false;
  std::vector<uint32_t> partRows;
  /// 2^14 x global scale per (expert, part) for NVFP4.
  std::vector<float> epilogueScales;
};

Result<GemmShape> gemmShape(Context &c, const OperandInfo &weight, bool moe) {
  GemmShape s;
  const OpParamValues &p = c.op.params;
  s.k = p.dim;
  s.n = p.outFeatures;
  s.nvfp4 = weight.nvfp4;
  s.silu = p.siluEpilogue;
  s.outF32 = p.outF32;
  s.moe = moe;
  if (s.k <= 0 || s.k % 16 != 0)
    return c.error("K = " + std::to_string(s.k) + " (a positive multiple of 16 expected)");
  if (s.n <= 0 || (s.silu && s.n % 2 != 0))
    return c.error("N = " + std::to_string(s.n) + (s.silu ? " (even for SiluMul)" : ""));
  int64_t rows = moe ? (weight.shape.size() == 3 ? weight.shape[1] : -1)
                     : (weight.shape.size() == 2 ? weight.shape[0] : -1);
  int64_t cols = weight.shape.empty() ? -1 : weight.shape.back();
  if (rows != s.n || cols != s.k)
    return c.error("weight of shape [" +
                   [&] {
                     std::string t;
                     for (size_t i = 0; i < weight.shape.size(); ++i)
                       t += (i ? ", " : "") + std::to_string(weight.shape[i]);
                     return t;
                   }() +
                   "] for N = " + std::to_string(s.n) + ", K = " + std::to_string(s.k));
  if (!s.nvfp4)
    return s;
  s.partRows =
      weight.partRows.empty() ? std::vector<uint32_t>{static_cast<uint32_t>(s.n)} : weight.partRows;
  if (s.partRows.size() > 4)
    return c.error(std::to_string(s.partRows.size()) + " fused parts (at most 4 supported)");
  if (std::accumulate(s.partRows.begin(), s.partRows.end(), int64_t{0}) != s.n)
    return c.error("fused part rows do not add up to N = " + std::to_string(s.n));
  size_t experts = moe ? static_cast<size_t>(c.op.params.numExperts) : 1;
  if (weight.globalScales.size() != experts * s.partRows.size())
    return c.error(std::to_string(weight.globalScales.size()) + " global scales for " +
                   std::to_string(experts) + " x " + std::to_string(s.partRows.size()) + " parts");
  for (float g : weight.globalScales)
    s.epilogueScales.push_back(g * kE2M1Bias);
  return s;
}

void setParts(KernelRequest &r, const GemmShape &s) {
  if (!s.nvfp4)
    return;
  r.set("parts", static_cast<int64_t>(s.partRows.size()));
  int64_t end = 0;
  for (int i = 0; i < 3; ++i) {
    end += i < static_cast<int>(s.partRows.size()) ? s.partRows[static_cast<size_t>(i)] : 0;
    r.set("part_end" + std::to_string(i), i + 1 < static_cast<int>(s.partRows.size()) ? end : 0);
  }
}

/// Decode-size GEMV: 8 weight rows per block, warps split K.
KernelRequest gemvRequest(const std::string &kernel, const GemmShape &s) {
  const int64_t laneChunk = s.nvfp4 ? 32 : 8, unroll = s.nvfp4 ? 2 : 4;
  const int64_t chunks = (s.k + 4 * laneChunk - 1) / (4 * laneChunk);
  const int64_t warps = std::clamp<int64_t>(chunks / unroll, 1, 8);
  KernelRequest r{kernel, {}, static_cast<uint32_t>(warps * 32), 0};
  r.set("k", s.k).set("n", s.n).set("warps", warps).set("silu", s.silu);
  if (!s.moe)
    r.set("out_f32", s.outF32).set("has_bias", s.hasBias);
  setParts(r, s);
  return r;
}

uint32_t gemvTiles(const GemmShape &s) {
  int64_t columns = s.silu ? s.n / 2 : s.n, perTile = s.silu ? 4 : 8;
  return static_cast<uint32_t>((columns + perTile - 1) / perTile);
}

/// Prefill-size GEMM tile from the variant's tile_m / tile_n / stages,
/// fitted to the SKU's shared memory.
Result<KernelRequest> gemmRequest(Context &c, const std::string &kernel, const GemmShape &s,
                                  const Variant &v) {
  auto config = [&](const char *name, int64_t fallback) {
    auto it = v.config.find(name);
    return it == v.config.end() ? fallback : it->second;
  };
  int64_t tileM = config("tile_m", 64), tileN = config("tile_n", 128);
  int64_t stages = std::clamp<int64_t>(config("stages", 2), 1, 2);
  tileM = std::clamp<int64_t>(tileM / 32 * 32, 32, 128);
  tileN = tileN >= 128 ? 128 : 64;
  auto bytes = [&](int64_t st) { return st * (tileM + tileN) * 72 * 2; };
  while (stages > 1 && bytes(stages) > c.target.sharedMemoryPerBlockOptinBytes)
    --stages;
  while (bytes(stages) > c.target.sharedMemoryPerBlockOptinBytes && tileM > 32)
    tileM /= 2;
  if (bytes(stages) > c.target.sharedMemoryPerBlockOptinBytes)
    return c.error("no GEMM tile fits " + std::to_string(c.target.sharedMemoryPerBlockOptinBytes) +
                   " bytes of shared memory");
  int64_t threads = (tileN / (tileM >= 64 ? 64 : 32)) * (tileM / 32) * 32;
  KernelRequest r{kernel, {}, static_cast<uint32_t>(threads), static_cast<uint32_t>(bytes(stages))};
  r.set("k", s.k).set("n", s.n).set("tile_m", tileM).set("tile_n", tileN).set("stages", stages);
  r.set("silu", s.silu);
  if (!s.moe)
    r.set("out_f32", s.outF32).set("has_bias", s.hasBias);
  setParts(r, s);
  return r;
}

uint32_t gemmTiles(const GemmShape &s, int64_t tileN) {
  int64_t columns = s.silu ? s.n / 2 : s.n, perTile = s.silu ? tileN / 2 : tileN;
  return static_cast<uint32_t>((columns + perTile - 1) / perTile);
}

/// Grouped GEMMs receive at least this many epilogue scales (zeros after
/// the real ones): templates/nvfp4_moe_*.cu pad their parameter array so
/// that it is read in place rather than copied to local memory.
constexpr size_t kMinMoeScales = 64;

void epilogueArgs(PlannedLaunch &l, const GemmShape &s) {
  for (float g : s.epilogueScales)
    l.args.push_back(LaunchArg::f32Value(g));
  if (s.moe && s.nvfp4)
    for (size_t i = s.epilogueScales.size(); i < kMinMoeScales; ++i)
      l.args.push_back(LaunchArg::f32Value(0.0f));
}

/// Linear and QLinear: (in, weight, bias?, out).
Result<PlannedLaunch> linear(Context &c, const Variant &v) {
  const bool quantized = c.op.kind == "QLinear";
  const OperandInfo &in = c.at(0), &weight = c.at(1), &out = c.op.operands.back();
  if (weight.kind != OperandKind::Weight || weight.nvfp4 != quantized)
    return c.error(std::string("operand 1 must be ") + (quantized ? "an NVFP4" : "a dense") +
                   " weight");
  auto shape = gemmShape(c, weight, false);
  if (!shape)
    return shape.error();
  shape->hasBias = c.op.operands.size() == 4;
  const std::string family = quantized ? "nvfp4" : "dense";
  const bool gemv = v.kernel.ends_with("_gemv");
  if (v.kernel != family + "_gemv" && v.kernel != family + "_gemm")
    return c.error("kernel '" + v.kernel + "' does not implement " + c.op.kind);
  if (gemv && v.maxTokens > kGemvMaxTokens)
    return c.error(v.kernel + " serves at most " + std::to_string(kGemvMaxTokens) +
                   " tokens, selected up to " + std::to_string(v.maxTokens));
  Result<KernelRequest> request = gemv ? Result<KernelRequest>(gemvRequest(v.kernel, *shape))
                                       : gemmRequest(c, v.kernel, *shape, v);
  if (!request)
    return request.error();
  PlannedLaunch l = launch(c, v, *request);
  if (gemv) {
    l.grid[0] = {0, 0, gemvTiles(*shape), 1};
  } else {
    l.grid[0] = {0, 0, gemmTiles(*shape, request->get("tile_n")), 1};
    l.grid[1] = rowsRule(in, static_cast<uint32_t>(request->get("tile_m")));
  }
  l.args.push_back(LaunchArg::pointer(in));
  l.args.push_back(LaunchArg::pointer(weight));
  if (quantized)
    l.args.push_back(LaunchArg::pointer(weight, nvfp4ScalesOffset(weight.shape)));
  if (shape->hasBias)
    l.args.push_back(LaunchArg::pointer(c.at(2)));
  l.args.push_back(LaunchArg::pointer(out));
  l.args.push_back(rowsArg(in));
  epilogueArgs(l, *shape);
  return l;
}

/// MoeGroupedQLinear and MoeGroupedLinear: (in, order, expert_starts,
/// weights, out).
Result<PlannedLaunch> moeLinear(Context &c, const Variant &v) {
  const bool quantized = c.op.kind == "MoeGroupedQLinear";
  const OpParamValues &p = c.op.params;
  const OperandInfo &weight = c.at(3);
  if (weight.kind != OperandKind::Weight || weight.nvfp4 != quantized)
    return c.error(std::string("operand 3 must be ") + (quantized ? "NVFP4" : "dense") +
                   " expert weights");
  if (p.numExperts < 1 || p.topK < 1 ||
      (weight.shape.size() == 3 && weight.shape[0] != p.numExperts))
    return c.error("expert weights for " + std::to_string(p.numExperts) + " experts, top_k " +
                   std::to_string(p.topK));
  auto shape = gemmShape(c, weight, true);
  if (!shape)
    return shape.error();
  const std::string family = quantized ? "nvfp4_moe" : "dense_moe";
  const bool gemv = v.kernel.ends_with("_gemv");
  if (v.kernel != family + "_gemv" && v.kernel != family + "_gemm")
    return c.error("kernel '" + v.kernel + "' does not implement " + c.op.kind);
  if (gemv && v.maxTokens > kGemvMaxTokens)
    return c.error(v.kernel + " serves at most " + std::to_string(kGemvMaxTokens) +
                   " tokens, selected up to " + std::to_string(v.maxTokens));
  Result<KernelRequest> request = gemv ? Result<KernelRequest>(gemvRequest(v.kernel, *shape))
                                       : gemmRequest(c, v.kernel, *shape, v);
  if (!request)
    return request.error();
  request->set("experts", p.numExperts).set("top_k", p.topK).set("gather", p.gatherTokens);
  PlannedLaunch l = launch(c, v, *request);
  const uint32_t k = static_cast<uint32_t>(p.topK);
  if (gemv) {
    l.grid[0] = {0, 0, gemvTiles(*shape), 1};
    // At most T * k experts have pairs; each needs one tile of 8 rows.
    l.grid[1] = {k, 0, 0, 1};
  } else {
    const uint32_t tileM = static_cast<uint32_t>(request->get("tile_m"));
    l.grid[0] = {0, 0, gemmTiles(*shape, request->get("tile_n")), 1};
    // sum over experts of ceil(rows_e / tileM) <= (T k + E (tileM - 1)) / tileM.
    l.grid[1] = {k, 0, static_cast<uint32_t>(p.numExperts) * (tileM - 1), tileM};
  }
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), LaunchArg::pointer(c.at(2)),
            LaunchArg::pointer(weight)};
  if (quantized)
    l.args.push_back(LaunchArg::pointer(weight, nvfp4ScalesOffset(weight.shape)));
  l.args.push_back(LaunchArg::pointer(c.at(4)));
  l.args.push_back(LaunchArg::tokenCount());
  epilogueArgs(l, *shape);
  return l;
}

struct KindInfo {
  const char *kind;
  size_t minOperands, maxOperands;
};

constexpr KindInfo kKinds[] = {
    {"Embedding", 3, 3},      {"RmsNorm", 3, 3},           {"AddRmsNorm", 4, 4},
    {"Linear", 3, 4},         {"QLinear", 3, 4},           {"QkNormRope", 2, 4},
    {"Attention", 7, 7},      {"SiluMul", 2, 2},           {"MoeRouter", 3, 3},
    {"MoeAlign", 3, 3},       {"MoeGroupedQLinear", 5, 5}, {"MoeCombine", 4, 4},
    {"SigmoidGateAdd", 3, 3}, {"AllReduce", 1, 1},         {"AllGather", 2, 2},
    {"GatherRows", 3, 3},     {"MoeGroupedLinear", 5, 5},
};

} // namespace

Result<std::vector<PlannedLaunch>>
planLaunches(const OpInfo &op, const std::vector<Variant> &variants, const ProgramInfo &program,
             const TargetInfo &target, KernelRegistry &registry) {
  Context c{op, program, target, registry};
  const KindInfo *kind = nullptr;
  for (const KindInfo &k : kKinds)
    if (op.kind == k.kind)
      kind = &k;
  if (!kind)
    return c.error("unknown op kind");
  if (op.operands.size() < kind->minOperands || op.operands.size() > kind->maxOperands)
    return c.error(std::to_string(op.operands.size()) + " operands");
  if (op.kind == "AllReduce" || op.kind == "AllGather")
    return std::vector<PlannedLaunch>{};
  if (variants.empty())
    return c.error("no kernel was selected for it (run --volt-select-kernels for a GPU target)");
  std::vector<PlannedLaunch> launches;
  for (const Variant &v : variants) {
    Result<PlannedLaunch> l = Error("");
    if (op.kind == "Embedding")
      l = embedding(c, v);
    else if (op.kind == "RmsNorm" || op.kind == "AddRmsNorm")
      l = rmsNorm(c, v, op.kind == "AddRmsNorm");
    else if (op.kind == "Linear" || op.kind == "QLinear")
      l = linear(c, v);
    else if (op.kind == "QkNormRope")
      l = qkNormRope(c, v);
    else if (op.kind == "Attention")
      l = v.kernel == "paged_attention_tiled" ? tiledAttention(c, v) : attention(c, v);
    else if (op.kind == "SiluMul")
      l = siluMul(c, v);
    else if (op.kind == "MoeRouter")
      l = moeRouter(c, v);
    else if (op.kind == "MoeAlign")
      l = moeAlign(c, v);
    else if (op.kind == "MoeGroupedQLinear" || op.kind == "MoeGroupedLinear")
      l = moeLinear(c, v);
    else if (op.kind == "MoeCombine")
      l = moeCombine(c, v);
    else if (op.kind == "SigmoidGateAdd")
      l = sigmoidGateAdd(c, v);
    else if (op.kind == "GatherRows")
      l = gatherRows(c, v);
    if (!l)
      return l.error();
    launches.push_back(std::move(*l));
  }
  std::stable_sort(
      launches.begin(), launches.end(),
      [](const PlannedLaunch &a, const PlannedLaunch &b) { return a.maxTokens < b.maxTokens; });
  return launches;
}

} // namespace volt::codegen
