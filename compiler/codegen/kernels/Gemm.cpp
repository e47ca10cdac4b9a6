//===- Gemm.cpp ----------------------------------------------------------===//
//
// The GEMMs: GEMV and tensor-core tiles for Linear and QLinear, and the
// grouped ones of the MoE experts.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/KernelDefs.h"
#include "compiler/codegen/LaunchContext.h"

#include <numeric>

namespace volt::codegen::kernels {

namespace {

// ---- GEMMs ----------------------------------------------------------------

/// The facts every GEMM form shares.
struct GemmShape {
  int64_t k = 0, n = 0;
  bool nvfp4 = false, fp8 = false, silu = false, outF32 = false, hasBias = false;
  bool moe = false;
  std::vector<uint32_t> partRows;
  /// 2^14 x global scale per (expert, part) for NVFP4.
  std::vector<float> epilogueScales;
};

Result<GemmShape> gemmShape(LaunchContext &c, const OperandInfo &weight, const GemmParams &p) {
  GemmShape s;
  const bool moe = p.experts > 0;
  s.k = p.k;
  s.n = p.n;
  s.nvfp4 = weight.nvfp4;
  s.fp8 = weight.fp8;
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
  // Dense QLinears take their (at most 4) scales by value; the grouped
  // kernels read theirs from the weight entry (epilogueArgs).
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
  const int64_t laneChunk = s.nvfp4 ? 32 : s.fp8 ? 16 : 8, unroll = s.nvfp4 ? 2 : 4;
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
Result<KernelRequest> gemmRequest(LaunchContext &c, const std::string &kernel, const GemmShape &s,
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

/// The epilogue scales: by value for a dense QLinear (one per fused part);
/// for the grouped GEMMs a pointer to the f32 scales the packer stores in
/// the weight entry after its block scales (experts x parts of them: 512
/// experts with gate and up fused would not fit sm_70's 4,096-byte
/// parameter space by value).
void epilogueArgs(PlannedLaunch &l, const GemmShape &s, const OperandInfo &weight) {
  if (s.moe && s.nvfp4) {
    l.args.push_back(LaunchArg::pointer(weight, nvfp4EpilogueOffset(weight.shape)));
    return;
  }
  for (float g : s.epilogueScales)
    l.args.push_back(LaunchArg::f32Value(g));
}

/// Linear and QLinear: (in, weight, bias?, out).
/// The instance of the variant's kernel (a GEMV of at most kGemvMaxTokens
/// tokens, or a GEMM tile) for `shape`.
Result<KernelRequest> requestOf(LaunchContext &c, const Variant &v, const GemmShape &shape) {
  if (!v.kernel.ends_with("_gemv"))
    return gemmRequest(c, v.kernel, shape, v);
  if (v.maxTokens > kGemvMaxTokens)
    return c.error(v.kernel + " serves at most " + std::to_string(kGemvMaxTokens) +
                   " tokens, selected up to " + std::to_string(v.maxTokens));
  return gemvRequest(v.kernel, shape);
}

} // namespace

Result<PlannedLaunch> planLinear(LaunchContext &c, const Variant &v) {
  const bool quantized = c.op.kind == plan::OpKind::QLinear;
  const bool fp8 = v.kernel.rfind("fp8_", 0) == 0;
  const OperandInfo &in = c.at(0), &weight = c.at(1), &out = c.op.operands.back();
  if (weight.kind != OperandKind::Weight || weight.nvfp4 != quantized || weight.fp8 != fp8)
    return c.error(std::string("operand 1 must be ") +
                   (quantized ? "an NVFP4"
                    : fp8     ? "an FP8 (E4M3 with row scales)"
                              : "a dense") +
                   " weight for " + v.kernel);
  VOLT_ASSIGN_OR_RETURN(const GemmParams gp, gemmParams(c.op));
  auto shape = gemmShape(c, weight, gp);
  if (!shape)
    return shape.error();
  shape->hasBias = c.op.operands.size() == 4;
  const bool gemv = v.kernel.ends_with("_gemv");
  VOLT_ASSIGN_OR_RETURN(KernelRequest request, requestOf(c, v, *shape));
  PlannedLaunch l = launch(c, v, request);
  if (gemv) {
    l.grid[0] = {0, 0, gemvTiles(*shape), 1};
  } else {
    l.grid[0] = {0, 0, gemmTiles(*shape, request.get("tile_n")), 1};
    l.grid[1] = rowsRule(in, static_cast<uint32_t>(request.get("tile_m")));
  }
  l.args.push_back(LaunchArg::pointer(in));
  l.args.push_back(LaunchArg::pointer(weight));
  if (quantized)
    l.args.push_back(LaunchArg::pointer(weight, nvfp4ScalesOffset(weight.shape)));
  if (fp8)
    l.args.push_back(LaunchArg::pointer(weight, fp8ScalesOffset(weight.shape)));
  if (shape->hasBias)
    l.args.push_back(LaunchArg::pointer(c.at(2)));
  l.args.push_back(LaunchArg::pointer(out));
  l.args.push_back(rowsArg(in));
  epilogueArgs(l, *shape, weight);
  return l;
}

/// MoeGroupedQLinear and MoeGroupedLinear: (in, order, expert_starts,
/// weights, out).
Result<PlannedLaunch> planMoeLinear(LaunchContext &c, const Variant &v) {
  const bool quantized = c.op.kind == plan::OpKind::MoeGroupedQLinear;
  const bool fp8 = v.kernel.rfind("fp8_", 0) == 0;
  VOLT_ASSIGN_OR_RETURN(const GemmParams p, gemmParams(c.op));
  const OperandInfo &weight = c.at(3);
  if (weight.kind != OperandKind::Weight || weight.nvfp4 != quantized || weight.fp8 != fp8)
    return c.error(std::string("operand 3 must be ") +
                   (quantized ? "NVFP4"
                    : fp8     ? "FP8 (E4M3 with row scales)"
                              : "dense") +
                   " expert weights for " + v.kernel);
  if (p.experts < 1 || p.topK < 1 || (weight.shape.size() == 3 && weight.shape[0] != p.experts))
    return c.error("expert weights for " + std::to_string(p.experts) + " experts, top_k " +
                   std::to_string(p.topK));
  auto shape = gemmShape(c, weight, p);
  if (!shape)
    return shape.error();
  const bool gemv = v.kernel.ends_with("_gemv");
  VOLT_ASSIGN_OR_RETURN(KernelRequest request, requestOf(c, v, *shape));
  request.set("experts", p.experts).set("top_k", p.topK).set("gather", p.gatherTokens);
  PlannedLaunch l = launch(c, v, request);
  const uint32_t k = static_cast<uint32_t>(p.topK);
  if (gemv) {
    l.grid[0] = {0, 0, gemvTiles(*shape), 1};
    // At most T * k experts have pairs; each needs one tile of 8 rows.
    l.grid[1] = {k, 0, 0, 1};
  } else {
    const uint32_t tileM = static_cast<uint32_t>(request.get("tile_m"));
    l.grid[0] = {0, 0, gemmTiles(*shape, request.get("tile_n")), 1};
    // sum over experts of ceil(rows_e / tileM) <= (T k + E (tileM - 1)) / tileM.
    l.grid[1] = {k, 0, static_cast<uint32_t>(p.experts) * (tileM - 1), tileM};
  }
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), LaunchArg::pointer(c.at(2)),
            LaunchArg::pointer(weight)};
  if (quantized)
    l.args.push_back(LaunchArg::pointer(weight, nvfp4ScalesOffset(weight.shape)));
  if (fp8)
    l.args.push_back(LaunchArg::pointer(weight, fp8ScalesOffset(weight.shape)));
  l.args.push_back(LaunchArg::pointer(c.at(4)));
  l.args.push_back(LaunchArg::tokenCount());
  epilogueArgs(l, *shape, weight);
  return l;
}

} // namespace volt::codegen::kernels
