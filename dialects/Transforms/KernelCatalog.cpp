//===- KernelCatalog.cpp --------------------------------------------------===//
#include "dialects/Transforms/KernelCatalog.h"

#include "dialects/Transforms/KernelRules.h"
#include "dialects/Volt/VoltOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace volt::kernels {

double TargetInfo::ridgeTokens() const {
  if (memoryBandwidthGbps <= 0)
    return 0;
  return fp16TensorTflops * 1e12 / (memoryBandwidthGbps * 1e9) * 0.5625 / 2.0;
}

FailureOr<TargetInfo> TargetInfo::fromAttr(DictionaryAttr target) {
  TargetInfo t;
  auto arch = target.getAs<StringAttr>("arch");
  if (!arch)
    return failure();
  t.arch = arch.getValue().str();
  auto i = [&](StringRef name) {
    auto a = target.getAs<IntegerAttr>(name);
    return a ? a.getInt() : int64_t{0};
  };
  auto f = [&](StringRef name) {
    auto a = target.getAs<FloatAttr>(name);
    return a ? a.getValueAsDouble() : 0.0;
  };
  t.smCount = i("sm_count");
  t.sharedMemoryPerBlockOptinBytes = i("shared_memory_per_block_optin_bytes");
  t.memoryBandwidthGbps = f("memory_bandwidth_gbps");
  t.fp16TensorTflops = f("fp16_tensor_tflops");
  if (!t.isCpu() && (t.smCount <= 0 || t.memoryBandwidthGbps <= 0))
    return failure();
  return t;
}

namespace {

struct Variant {
  int64_t maxTokens;
  StringRef kernel;
  SmallVector<std::pair<StringRef, int64_t>> config;
};

Attribute toAttr(Builder &b, const Variant &v) {
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("max_tokens", b.getI64IntegerAttr(v.maxTokens)),
      b.getNamedAttr("kernel", b.getStringAttr(v.kernel))};
  for (const auto &[name, value] : v.config)
    fields.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(value)));
  return b.getDictionaryAttr(fields);
}

/// The GEMM tile for prefill sizes: the largest of 128x128 / 64x128 /
/// 64x64 (tokens x rows) whose double-buffered FP16 tiles (activations and
/// dequantized weights, 64 columns deep) fit the SKU's opt-in shared memory.
std::pair<int64_t, int64_t> prefillTile(const TargetInfo &t) {
  for (auto [m, n] : {std::pair<int64_t, int64_t>{128, 128}, {64, 128}, {64, 64}}) {
    int64_t bytes = 2 /*stages*/ * (m + n) * 64 /*k*/ * 2 /*fp16*/;
    if (bytes <= t.sharedMemoryPerBlockOptinBytes)
      return {m, n};
  }
  return {32, 64};
}

/// Variants of a GEMM over `rows` output rows: a streaming GEMV for decode
/// sizes, then tensor-core tiles — a narrow token tile up to the ridge
/// point, the full tile beyond.
SmallVector<Variant> gemmVariants(const TargetInfo &t, StringRef gemv, StringRef gemm,
                                  int64_t rows) {
  // Enough blocks to fill every SM several times over: one warp per 4
  // output rows, 8 warps per block, fewer when the GEMM is narrow.
  int64_t warps = std::clamp<int64_t>(rows / 4 / std::max<int64_t>(t.smCount, 1), 1, 8);
  auto [tileM, tileN] = prefillTile(t);
  int64_t ridge = std::max<int64_t>(kGemvMaxTokens + 1, static_cast<int64_t>(t.ridgeTokens()));
  return {
      {kGemvMaxTokens, gemv, {{"warps_per_block", warps}, {"rows_per_warp", 4}}},
      {ridge, gemm, {{"tile_m", 32}, {"tile_n", tileN}, {"tile_k", 64}, {"stages", 2}}},
      {kAnyTokens, gemm, {{"tile_m", tileM}, {"tile_n", tileN}, {"tile_k", 64}, {"stages", 2}}},
  };
}

/// The most tokens of a decode step: max_num_seqs (256 unless the
/// deployment says).
int64_t maxNumSeqs(Operation *op) {
  if (auto module = op->getParentOfType<ModuleOp>())
    if (auto deployment = module->getAttrOfType<DictionaryAttr>("volt.deployment"))
      if (auto seqs = deployment.getAs<IntegerAttr>("max_num_seqs"); seqs && seqs.getInt() > 0)
        return seqs.getInt();
  return 256;
}

/// Steps of at most max_num_seqs tokens (every decode step, and small
/// mixed steps) run paged_attention, one block per (token, kv head) on CUDA
/// cores, splitting each long decode context across blocks (split-K) so
/// that few sequences still fill the SMs. Larger steps carry prefill
/// chunks, whose tokens read the same keys: paged_attention_tiled runs
/// them on tensor cores, 64 query rows ((token, query head) pairs of one
/// kv head) against 32 keys at a time (36 KiB of shared memory at head_dim
/// 128: two blocks per SM, where 64 keys would allow one; 86 KiB at 256,
/// two warps per 16 rows), and splits long decodes of those steps as
/// paged_attention does. Heads it cannot serve, and SKUs whose shared
/// memory the tile does not fit, keep paged_attention at every size.
SmallVector<Variant> attentionVariants(volt::ir::AttentionOp a, const TargetInfo &t) {
  constexpr int64_t kQueryTile = 64, kKeyTile = 32;
  const int64_t headDim = a.getHeadDim();
  const int64_t group = a.getNumKvHeads() > 0 ? a.getNumHeads() / a.getNumKvHeads() : 0;
  const bool tiled =
      headDim % 16 == 0 && headDim <= kTiledAttentionMaxHeadDim && group >= 1 &&
      group <= kQueryTile &&
      tiledAttentionShape(kQueryTile, kKeyTile, headDim).sharedBytes <=
          static_cast<uint64_t>(t.sharedMemoryPerBlockOptinBytes);
  SmallVector<Variant> v = {{tiled ? maxNumSeqs(a) : kAnyTokens,
                             "paged_attention",
                             {{"head_dim", headDim}, {"split_k_tokens", 512}}}};
  if (tiled)
    v.push_back({kAnyTokens,
                 "paged_attention_tiled",
                 {{"head_dim", headDim},
                  {"query_tile", kQueryTile},
                  {"key_tile", kKeyTile},
                  {"split_k_tokens", 512}}});
  return v;
}

/// Decode steps run gated_delta_rule, a block per (sequence, value head)
/// walking its tokens one at a time (bit for bit the cpu op); larger steps
/// carry prefill chunks and run gated_delta_rule_chunked, 64 tokens at a
/// time on tensor cores, where the head dims and its shared memory allow,
/// with the value dimensions split over blocks where the heads alone would
/// leave most SMs idle.
SmallVector<Variant> gatedDeltaRuleVariants(volt::ir::GatedDeltaRuleOp g, const TargetInfo &t) {
  const int64_t split = gatedDeltaDvSplit(g.getValueHeads(), g.getValueDim(), t.smCount);
  const GatedDeltaChunkedShape shape =
      gatedDeltaChunkedShape(kGatedDeltaChunk, g.getKeyDim(), g.getValueDim(), split);
  const bool chunked =
      shape.supported && shape.sharedBytes <= static_cast<uint64_t>(t.sharedMemoryPerBlockOptinBytes);
  const int64_t seqs = maxNumSeqs(g);
  SmallVector<Variant> v = {
      {chunked ? seqs : kAnyTokens, "gated_delta_rule", {{"threads", 256}}}};
  if (chunked)
    v.push_back({kAnyTokens,
                 "gated_delta_rule_chunked",
                 {{"chunk", kGatedDeltaChunk}, {"dv_split", split}, {"max_seqs", seqs}}});
  return v;
}

int64_t lastDim(Value v) { return cast<RankedTensorType>(v.getType()).getShape().back(); }

} // namespace

ArrayAttr select(Builder &b, Operation *op, const TargetInfo &t) {
  if (t.isCpu())
    return b.getArrayAttr({});
  using namespace volt::ir;
  SmallVector<Variant> variants =
      llvm::TypeSwitch<Operation *, SmallVector<Variant>>(op)
          .Case<QLinearOp>([&](QLinearOp q) {
            return gemmVariants(t, "nvfp4_gemv", "nvfp4_gemm", lastDim(q.getResult()));
          })
          .Case<LinearOp>([&](LinearOp l) {
            // A weight kept as E4M3 rows (volt.weight fp8_rows) has its own
            // kernels, which read one byte per weight.
            auto w = l.getWeight().getDefiningOp<WeightOp>();
            const bool fp8 = w && w.getFp8Rows();
            return gemmVariants(t, fp8 ? "fp8_gemv" : "dense_gemv",
                                fp8 ? "fp8_gemm" : "dense_gemm", lastDim(l.getResult()));
          })
          .Case<MoeQExpertsOp>([&](MoeQExpertsOp m) {
            return gemmVariants(t, "nvfp4_moe_gemv", "nvfp4_moe_gemm", lastDim(m.getResult()));
          })
          .Case<MoeExpertsOp>([&](MoeExpertsOp m) {
            // Experts kept as E4M3 rows (both weights fp8_rows, see
            // volt.weight) have their own grouped kernels.
            auto w = m.getGateUp().getDefiningOp<WeightOp>();
            const bool fp8 = w && w.getFp8Rows();
            return gemmVariants(t, fp8 ? "fp8_moe_gemv" : "dense_moe_gemv",
                                fp8 ? "fp8_moe_gemm" : "dense_moe_gemm", lastDim(m.getResult()));
          })
          .Case<AttentionOp>([&](AttentionOp a) { return attentionVariants(a, t); })
          .Case<GatedDeltaRuleOp>(
              [&](GatedDeltaRuleOp g) { return gatedDeltaRuleVariants(g, t); })
          .Case<AllReduceOp, AllGatherOp>([&](Operation *) {
            SmallVector<Variant> v = {{kAnyTokens, "nccl", {}}};
            return v;
          })
          .Default([&](Operation *o) {
            // Element-wise and routing ops: one kernel, one warp per row.
            StringRef name = o->getName().stripDialect();
            SmallVector<Variant> v = {{kAnyTokens, name, {{"threads", 256}}}};
            return v;
          });
  SmallVector<Attribute> attrs;
  for (const Variant &v : variants)
    attrs.push_back(toAttr(b, v));
  return b.getArrayAttr(attrs);
}

} // namespace volt::kernels
