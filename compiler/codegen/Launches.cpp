//===- Launches.cpp -------------------------------------------------------===//
//
// One function per op family. Each builds the kernel request (the
// template's constants), the grid rule and the argument list in the order
// of the template's entry point; the templates' banner comments state the
// same contract from their side.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Launches.h"

#include "runtime/schema/Ops.h"

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
    return Error("op '" + op.name + "' (" + plan::EnumNameOpKind(op.kind) + "): " + what);
  }
  const OperandInfo &at(size_t i) const { return op.operands[i]; }
  /// The op's params table (planLaunches checked its type).
  template <typename T> const T &params() const { return *static_cast<const T *>(op.params.value); }
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
  const auto &p = c.params<plan::EmbeddingParamsT>();
  int64_t rows = p.vocab_rows ? p.vocab_rows : (table.shape.empty() ? 0 : table.shape[0]);
  KernelRequest r{"embedding", {}, configThreads(v, 128), 0};
  r.set("dim", p.dim).set("vocab_rows", rows);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = GridRule::tokens();
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(table), LaunchArg::pointer(c.at(2)),
            LaunchArg::tokenCount(),
            LaunchArg::i32Value(static_cast<int32_t>(
                plan::vocabStart(p.vocab_rows, p.vocab_parallel, c.program.rank)))};
  return l;
}

Result<PlannedLaunch> rmsNorm(Context &c, const Variant &v, bool add) {
  const OperandInfo &in = c.at(0);
  const uint32_t dim =
      add ? c.params<plan::AddRmsNormParamsT>().dim : c.params<plan::RmsNormParamsT>().dim;
  const float eps =
      add ? c.params<plan::AddRmsNormParamsT>().eps : c.params<plan::RmsNormParamsT>().eps;
  KernelRequest r{add ? "add_rms_norm" : "rms_norm", {}, configThreads(v, 256), 0};
  r.set("dim", dim).set("in_f32", in.f32);
  if (add)
    r.set("res_f32", c.at(1).f32);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = rowsRule(in);
  for (size_t i = 0; i < c.op.operands.size(); ++i)
    l.args.push_back(LaunchArg::pointer(c.at(i)));
  l.args.push_back(rowsArg(in));
  l.args.push_back(LaunchArg::f32Value(eps));
  return l;
}

Result<PlannedLaunch> qkNormRope(Context &c, const Variant &v) {
  const auto &p = c.params<plan::QkNormRopeParamsT>();
  if (p.head_dim == 0 || p.head_dim % 2 != 0 || p.head_dim > 2048)
    return c.error("head_dim " + std::to_string(p.head_dim) +
                   " (an even size up to 2048 expected)");
  bool norm = c.op.operands.size() == 4;
  KernelRequest r{"qk_norm_rope", {}, (p.head_dim / 2 + 31) / 32 * 32, 0};
  r.set("heads", p.num_heads).set("kv_heads", p.num_kv_heads).set("head_dim", p.head_dim);
  r.set("has_norm", norm);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = GridRule::tokens();
  l.grid[1] = {0, 0, p.num_heads + p.num_kv_heads, 1};
  for (size_t i = 0; i < c.op.operands.size(); ++i)
    l.args.push_back(LaunchArg::pointer(c.at(i)));
  l.args.push_back(LaunchArg::tokenCount());
  l.args.push_back(LaunchArg::f32Value(p.eps));
  l.args.push_back(LaunchArg::f32Value(p.rope_theta));
  return l;
}

/// The checks both attention templates share.
Status attentionShape(Context &c) {
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
  const auto &p = c.params<plan::AttentionParamsT>();
  const ProgramInfo &g = c.program;
  if (p.head_dim == 0 || p.head_dim % 2 != 0 || p.head_dim > 256)
    return c.error("head_dim " + std::to_string(p.head_dim) +
                   ": paged_attention serves even sizes up to 256");
  VOLT_RETURN_IF_ERROR(attentionShape(c));
  KernelRequest r{"paged_attention", {}, 128, 0};
  r.set("heads", p.num_heads).set("kv_heads", p.num_kv_heads).set("head_dim", p.head_dim);
  r.set("block_size", g.kvBlockSize).set("max_blocks", g.maxBlocksPerSeq);
  auto splitTokens = v.config.find("split_k_tokens");
  const AttentionSplit split =
      attentionSplit(splitTokens == v.config.end() ? 0 : splitTokens->second,
                     int64_t{g.maxBlocksPerSeq} * g.kvBlockSize, p.num_heads, p.head_dim);
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
  l.grid[1] = {0, 0, static_cast<uint32_t>(p.num_kv_heads), 1};
  l.args = attentionArgs(c);
  // Without split the kernel never reads it; the output stands in.
  l.args.push_back(split.maxSplits > 0 ? LaunchArg::workspace(0) : LaunchArg::pointer(c.at(6)));
  l.args.push_back(LaunchArg::tokenCount());
  l.args.push_back(LaunchArg::seqCount());
  return l;
}

Result<PlannedLaunch> tiledAttention(Context &c, const Variant &v) {
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
                  static_cast<uint32_t>(shape.queryTile * 2),
                  static_cast<uint32_t>(shape.sharedBytes)};
  r.set("heads", p.num_heads).set("kv_heads", p.num_kv_heads).set("head_dim", p.head_dim);
  r.set("block_size", g.kvBlockSize).set("max_blocks", g.maxBlocksPerSeq);
  r.set("query_tile", shape.queryTile).set("key_tile", shape.keyTile);
  // Long decodes in the step split as in paged_attention (same rule, same
  // records, so plan-memory's workspace serves both).
  const AttentionSplit split =
      attentionSplit(config("split_k_tokens", 0), int64_t{g.maxBlocksPerSeq} * g.kvBlockSize,
                     p.num_heads, p.head_dim);
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
  l.grid[1] = {0, 0, static_cast<uint32_t>(p.num_kv_heads), 1};
  l.args = attentionArgs(c);
  l.args.push_back(split.maxSplits > 0 ? LaunchArg::workspace(0) : LaunchArg::pointer(c.at(6)));
  l.args.push_back(LaunchArg::tokenCount());
  l.args.push_back(LaunchArg::seqCount());
  return l;
}

Result<PlannedLaunch> siluMul(Context &c, const Variant &v) {
  KernelRequest r{"silu_mul", {}, configThreads(v, 256), 0};
  r.set("dim", c.params<plan::SiluMulParamsT>().dim);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = rowsRule(c.at(0));
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), rowsArg(c.at(0))};
  return l;
}

Result<PlannedLaunch> sigmoidGateAdd(Context &c, const Variant &v) {
  KernelRequest r{"sigmoid_gate_add", {}, configThreads(v, 256), 0};
  r.set("dim", c.params<plan::SigmoidGateAddParamsT>().dim).set("gate_f32", c.at(2).f32);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = rowsRule(c.at(0));
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), LaunchArg::pointer(c.at(2)),
            rowsArg(c.at(0))};
  return l;
}

Result<PlannedLaunch> gatherRows(Context &c, const Variant &v) {
  KernelRequest r{"gather_rows", {}, configThreads(v, 128), 0};
  r.set("dim", c.params<plan::GatherRowsParamsT>().dim).set("element_bytes", c.at(0).f32 ? 4 : 2);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = {0, 1, 0, 1};
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), LaunchArg::pointer(c.at(2)),
            LaunchArg::seqCount()};
  return l;
}

Result<PlannedLaunch> emaScan(Context &c, const Variant &v) {
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
  for (size_t i = 0; i < 7; ++i)
    l.args.push_back(LaunchArg::pointer(c.at(i)));
  l.args.push_back(LaunchArg::seqCount());
  return l;
}

Result<PlannedLaunch> moeRouter(Context &c, const Variant &v) {
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

Result<PlannedLaunch> moeAlign(Context &c, const Variant &v) {
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

Result<PlannedLaunch> moeCombine(Context &c, const Variant &v) {
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

Result<GemmShape> gemmShape(Context &c, const OperandInfo &weight, const GemmParams &p) {
  GemmShape s;
  const bool moe = p.experts > 0;
  s.k = p.k;
  s.n = p.n;
  s.nvfp4 = weight.nvfp4;
  s.silu = p.silu;
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
  size_t experts = moe ? static_cast<size_t>(p.experts) : 1;
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
  const bool quantized = c.op.kind == plan::OpKind::QLinear;
  const OperandInfo &in = c.at(0), &weight = c.at(1), &out = c.op.operands.back();
  if (weight.kind != OperandKind::Weight || weight.nvfp4 != quantized)
    return c.error(std::string("operand 1 must be ") + (quantized ? "an NVFP4" : "a dense") +
                   " weight");
  VOLT_ASSIGN_OR_RETURN(const GemmParams gp, gemmParams(c.op));
  auto shape = gemmShape(c, weight, gp);
  if (!shape)
    return shape.error();
  shape->hasBias = c.op.operands.size() == 4;
  const std::string family = quantized ? "nvfp4" : "dense";
  const bool gemv = v.kernel.ends_with("_gemv");
  if (v.kernel != family + "_gemv" && v.kernel != family + "_gemm")
    return c.error("kernel '" + v.kernel + "' does not implement " +
                   plan::EnumNameOpKind(c.op.kind));
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
  const bool quantized = c.op.kind == plan::OpKind::MoeGroupedQLinear;
  VOLT_ASSIGN_OR_RETURN(const GemmParams p, gemmParams(c.op));
  const OperandInfo &weight = c.at(3);
  if (weight.kind != OperandKind::Weight || weight.nvfp4 != quantized)
    return c.error(std::string("operand 3 must be ") + (quantized ? "NVFP4" : "dense") +
                   " expert weights");
  if (p.experts < 1 || p.topK < 1 || (weight.shape.size() == 3 && weight.shape[0] != p.experts))
    return c.error("expert weights for " + std::to_string(p.experts) + " experts, top_k " +
                   std::to_string(p.topK));
  auto shape = gemmShape(c, weight, p);
  if (!shape)
    return shape.error();
  const std::string family = quantized ? "nvfp4_moe" : "dense_moe";
  const bool gemv = v.kernel.ends_with("_gemv");
  if (v.kernel != family + "_gemv" && v.kernel != family + "_gemm")
    return c.error("kernel '" + v.kernel + "' does not implement " +
                   plan::EnumNameOpKind(c.op.kind));
  if (gemv && v.maxTokens > kGemvMaxTokens)
    return c.error(v.kernel + " serves at most " + std::to_string(kGemvMaxTokens) +
                   " tokens, selected up to " + std::to_string(v.maxTokens));
  Result<KernelRequest> request = gemv ? Result<KernelRequest>(gemvRequest(v.kernel, *shape))
                                       : gemmRequest(c, v.kernel, *shape, v);
  if (!request)
    return request.error();
  request->set("experts", p.experts).set("top_k", p.topK).set("gather", p.gatherTokens);
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
    l.grid[1] = {k, 0, static_cast<uint32_t>(p.experts) * (tileM - 1), tileM};
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

} // namespace

Result<GemmParams> gemmParams(const OpInfo &op) {
  if (op.params.type != plan::paramsTypeOf(op.kind) || !op.params.value)
    return Error("op '" + op.name + "': params of type " + plan::EnumNameOpParams(op.params.type));
  GemmParams g;
  auto grouped = [&](const auto &p) {
    g = {p.dim,   p.out_features, p.epilogue == plan::Epilogue::SiluMul, false, p.num_experts,
         p.top_k, p.gather_tokens};
  };
  switch (op.kind) {
  case plan::OpKind::Linear: {
    const auto &p = *op.params.AsLinearParams();
    g.k = p.dim;
    g.n = p.out_features;
    g.outF32 = p.out_dtype == plan::DType::F32;
    return g;
  }
  case plan::OpKind::QLinear: {
    const auto &p = *op.params.AsQLinearParams();
    g.k = p.dim;
    g.n = p.out_features;
    g.silu = p.epilogue == plan::Epilogue::SiluMul;
    g.outF32 = p.out_dtype == plan::DType::F32;
    return g;
  }
  case plan::OpKind::MoeGroupedQLinear:
    grouped(*op.params.AsMoeGroupedQLinearParams());
    return g;
  case plan::OpKind::MoeGroupedLinear:
    grouped(*op.params.AsMoeGroupedLinearParams());
    return g;
  default:
    return Error("op '" + op.name + "' (" + plan::EnumNameOpKind(op.kind) + ") is not a GEMM");
  }
}

Result<std::vector<PlannedLaunch>>
planLaunches(const OpInfo &op, const std::vector<Variant> &variants, const ProgramInfo &program,
             const TargetInfo &target, KernelRegistry &registry) {
  Context c{op, program, target, registry};
  const plan::ops::OpDesc *desc = plan::ops::opByValue(static_cast<uint16_t>(op.kind));
  if (!desc)
    return Error("op '" + op.name + "': unknown op kind " +
                 std::to_string(static_cast<int>(op.kind)));
  if (op.operands.size() != desc->minOperands() && op.operands.size() != desc->maxOperands())
    return c.error(std::to_string(op.operands.size()) + " operands");
  if (op.params.type != plan::paramsTypeOf(op.kind) || !op.params.value)
    return c.error(std::string("params of type ") + plan::EnumNameOpParams(op.params.type) +
                   " (expected " + std::string(desc->name) + "Params)");
  if (op.kind == plan::OpKind::AllReduce || op.kind == plan::OpKind::AllGather)
    return std::vector<PlannedLaunch>{};
  if (variants.empty())
    return c.error("no kernel was selected for it (run --volt-select-kernels for a GPU target)");
  std::vector<PlannedLaunch> launches;
  for (const Variant &v : variants) {
    Result<PlannedLaunch> l = Error("");
    switch (op.kind) {
    case plan::OpKind::Embedding:
      l = embedding(c, v);
      break;
    case plan::OpKind::RmsNorm:
    case plan::OpKind::AddRmsNorm:
      l = rmsNorm(c, v, op.kind == plan::OpKind::AddRmsNorm);
      break;
    case plan::OpKind::Linear:
    case plan::OpKind::QLinear:
      l = linear(c, v);
      break;
    case plan::OpKind::QkNormRope:
      l = qkNormRope(c, v);
      break;
    case plan::OpKind::Attention:
      l = v.kernel == "paged_attention_tiled" ? tiledAttention(c, v) : attention(c, v);
      break;
    case plan::OpKind::SiluMul:
      l = siluMul(c, v);
      break;
    case plan::OpKind::MoeRouter:
      l = moeRouter(c, v);
      break;
    case plan::OpKind::MoeAlign:
      l = moeAlign(c, v);
      break;
    case plan::OpKind::MoeGroupedQLinear:
    case plan::OpKind::MoeGroupedLinear:
      l = moeLinear(c, v);
      break;
    case plan::OpKind::MoeCombine:
      l = moeCombine(c, v);
      break;
    case plan::OpKind::SigmoidGateAdd:
      l = sigmoidGateAdd(c, v);
      break;
    case plan::OpKind::GatherRows:
      l = gatherRows(c, v);
      break;
    case plan::OpKind::EmaScan:
      l = emaScan(c, v);
      break;
    case plan::OpKind::AllReduce:
    case plan::OpKind::AllGather:
      break;
    }
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
