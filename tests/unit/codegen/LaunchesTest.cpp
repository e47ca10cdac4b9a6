//===- LaunchesTest.cpp - plan ops to launches (grids, arguments, errors) -===//
#include "compiler/codegen/Launches.h"
#include "compiler/codegen/KernelDefs.h"
#include "compiler/codegen/Templates.h"
#include "runtime/schema/Ops.h"
#include "tests/unit/codegen/ModelShapes.h"

#include <gtest/gtest.h>

#include <set>

namespace volt::codegen {
namespace {

using namespace testing;
using Kind = LaunchArg::Kind;

const ModelOp &find(const std::vector<ModelOp> &ops, const std::string &suffix) {
  for (const ModelOp &op : ops)
    if (op.op.name.ends_with(suffix))
      return op;
  ADD_FAILURE() << "no op " << suffix;
  return ops.front();
}

std::vector<Kind> kinds(const PlannedLaunch &l) {
  std::vector<Kind> k;
  for (const LaunchArg &a : l.args)
    k.push_back(a.kind);
  return k;
}

TEST(Launches, QLinearHasGemvThenTwoGemmTiles) {
  auto ops = modelOps(qwen3MoeShape(), 1);
  const ModelOp &qkv = find(ops, ".qkv_proj");
  KernelRegistry registry;
  auto l =
      planLaunches(qkv.op, qkv.variants, programFor(qwen3MoeShape(), 1), TargetInfo{}, registry);
  ASSERT_TRUE(l.ok()) << l.message();
  ASSERT_EQ(l->size(), 3u);
  const KernelRequest &gemv = registry.requests()[(*l)[0].kernel];
  EXPECT_EQ((*l)[0].maxTokens, 8u);
  EXPECT_EQ(gemv.key(), "nvfp4_gemv(has_bias=0, k=2048, n=5120, out_f32=0, part_end0=4096, "
                        "part_end1=4608, part_end2=0, parts=3, silu=0, warps=8, threads=256)");
  // 5120 rows in tiles of 8; one block per tile whatever T is.
  EXPECT_EQ((*l)[0].grid[0].at(1, 1), 640u);
  EXPECT_EQ((*l)[0].grid[1].at(8, 8), 1u);
  // x, packed, block scales, out, T, then 2^14 x each part's global scale.
  EXPECT_EQ(kinds((*l)[0]),
            (std::vector<Kind>{Kind::Pointer, Kind::Pointer, Kind::Pointer, Kind::Pointer,
                               Kind::TokenCount, Kind::F32, Kind::F32, Kind::F32}));
  EXPECT_EQ((*l)[0].args[2].offset, nvfp4ScalesOffset({5120, 2048}));
  EXPECT_EQ((*l)[0].args[2].offset, 5120u * 1024u);
  EXPECT_FLOAT_EQ((*l)[0].args[5].f32, 16384.0f / 2688.0f);
  EXPECT_FLOAT_EQ((*l)[0].args[6].f32, 2 * 16384.0f / 2688.0f);

  const KernelRequest &narrow = registry.requests()[(*l)[1].kernel];
  EXPECT_EQ((*l)[1].maxTokens, 44u);
  EXPECT_EQ(narrow.get("tile_m"), 32);
  EXPECT_EQ(narrow.threads, 128u);
  EXPECT_EQ((*l)[1].sharedBytes, 2u * (128 + 32) * 72 * 2);
  EXPECT_EQ((*l)[1].grid[1].at(44, 1), 2u);
  const KernelRequest &wide = registry.requests()[(*l)[2].kernel];
  EXPECT_EQ(wide.get("tile_m"), 128);
  EXPECT_EQ(wide.threads, 256u);
  EXPECT_EQ((*l)[2].sharedBytes, 73728u);
  EXPECT_EQ((*l)[2].grid[0].at(1000, 1), 40u);
  EXPECT_EQ((*l)[2].grid[1].at(1000, 1), 8u);
}

TEST(Launches, SiluEpilogueHalvesTheColumns) {
  auto ops = modelOps(dense32bShape(), 2);
  const ModelOp &gateUp = find(ops, ".mlp.gate_up");
  KernelRegistry registry;
  auto l = planLaunches(gateUp.op, gateUp.variants, programFor(dense32bShape(), 2), TargetInfo{},
                        registry);
  ASSERT_TRUE(l.ok()) << l.message();
  // 13824 output columns: 4 per GEMV tile, 64 per 128-row GEMM tile.
  EXPECT_EQ((*l)[0].grid[0].at(1, 1), 3456u);
  EXPECT_EQ((*l)[2].grid[0].at(1, 1), 216u);
  EXPECT_EQ(registry.requests()[(*l)[0].kernel].get("silu"), 1);
}

TEST(Launches, MoeGridsBoundTheActiveExperts) {
  auto ops = modelOps(qwen3MoeShape(), 2);
  const ModelOp &gateUp = find(ops, ".experts.gate_up");
  KernelRegistry registry;
  auto l = planLaunches(gateUp.op, gateUp.variants, programFor(qwen3MoeShape(), 2), TargetInfo{},
                        registry);
  ASSERT_TRUE(l.ok()) << l.message();
  // GEMV: T * k expert slots at most.
  EXPECT_EQ((*l)[0].grid[1].at(3, 3), 24u);
  // GEMM (tile_m 128): sum of ceil(rows_e / 128) <= (T k + 128 * 127) / 128.
  EXPECT_EQ((*l)[2].grid[1].at(1024, 1), (1024u * 8 + 128 * 127 + 127) / 128);
  // in, order, starts, packed, block scales, out, T, and the epilogue
  // scales of 128 experts x 2 parts as one pointer into the entry.
  EXPECT_EQ((*l)[0].args.size(), 8u);
  const KernelRequest &gemv = registry.requests()[(*l)[0].kernel];
  EXPECT_EQ(gemv.get("experts"), 128);
  EXPECT_EQ(gemv.get("gather"), 1);
  EXPECT_EQ(gemv.get("n"), 768);
}

TEST(Launches, AttentionPassesBothHalvesOfTheLayersCache) {
  auto ops = modelOps(qwen3MoeShape(), 2);
  const ModelOp &attention = find(ops, ".attention");
  KernelRegistry registry;
  ProgramInfo program = programFor(qwen3MoeShape(), 2);
  auto l = planLaunches(attention.op, attention.variants, program, TargetInfo{}, registry);
  ASSERT_TRUE(l.ok()) << l.message();
  ASSERT_EQ(l->size(), 2u);
  const PlannedLaunch &a = (*l)[0];
  EXPECT_EQ(a.maxTokens, 256u);
  // Contexts up to 256 blocks of 16 in chunks of at least 512: one block per
  // token and a pool of 8 chunk blocks, per kv head.
  EXPECT_EQ(a.grid[0].at(37, 3), 37u + 8u);
  EXPECT_EQ(a.grid[1].at(37, 3), 2u);
  EXPECT_EQ(a.args[1].operandKind, OperandKind::Cache);
  EXPECT_EQ(a.args[1].offset, 0u);
  EXPECT_EQ(a.args[2].offset, program.kvLayerBytes());
  EXPECT_EQ(program.kvLayerBytes(), 4096ull * 16 * 2 * 128 * 2);
  EXPECT_EQ(a.args[8].operandKind, OperandKind::Workspace);
  EXPECT_EQ(a.args[8].operandIndex, 0u);
  EXPECT_EQ(a.args.back().kind, Kind::SeqCount);
  const KernelRequest &r = registry.requests()[a.kernel];
  EXPECT_EQ(r.get("split_k_tokens"), 512);
  EXPECT_EQ(r.get("max_splits"), 8);

  // Above max_num_seqs: 64 query rows (4 warps), 8 tokens x the group of
  // 8 (16 / 2 heads): ceil((T + 7 S) / 8) blocks per kv head.
  const PlannedLaunch &t = (*l)[1];
  const KernelRequest &tiled = registry.requests()[t.kernel];
  EXPECT_EQ(tiled.kernel, "paged_attention_tiled");
  EXPECT_EQ(t.maxTokens, 1u << 30);
  EXPECT_EQ(t.block[0], 128u);
  EXPECT_EQ(tiled.get("query_tile"), 64);
  EXPECT_EQ(tiled.get("key_tile"), 32);
  // Q 64 x 136, K 32 x 136 (P 64 x 40 shares it), V^T 128 x 40 halves.
  EXPECT_EQ(t.sharedBytes, 2u * (64 * 136 + 32 * 136 + 128 * 40));
  // Then the same pool of 8 split chunks as paged_attention's.
  EXPECT_EQ(t.grid[0].at(300, 3), (300u + 7 * 3 + 7) / 8 + 8);
  EXPECT_EQ(t.grid[1].at(300, 3), 2u);
  EXPECT_EQ(tiled.get("max_splits"), 8);
  ASSERT_EQ(t.args.size(), 11u);
  EXPECT_EQ(t.args[2].offset, program.kvLayerBytes());
  EXPECT_EQ(t.args[8].operandKind, OperandKind::Workspace);
  EXPECT_EQ(t.args[9].kind, Kind::TokenCount);
  EXPECT_EQ(t.args[10].kind, Kind::SeqCount);
}

TEST(Launches, TiledAttentionShapeFollowsTheTile) {
  const TiledAttentionShape a = tiledAttentionShape(64, 32, 128);
  EXPECT_EQ(a.sharedBytes, 2u * (64 * 136 + 32 * 136 + 128 * 40));
  // Heads of 16: P (64 x 40) is larger than K (32 x 24).
  EXPECT_EQ(tiledAttentionShape(64, 32, 16).sharedBytes, 2u * (64 * 24 + 64 * 40 + 16 * 40));
  // Tiles round down to multiples of 16, within 16..128.
  EXPECT_EQ(tiledAttentionShape(70, 8, 64).queryTile, 64);
  EXPECT_EQ(tiledAttentionShape(70, 8, 64).keyTile, 16);
  EXPECT_EQ(tiledAttentionShape(1000, 1000, 64).queryTile, 128);
  EXPECT_EQ(a.threads, 128);
  // Heads of 256: two warps per 16 rows, and their partial scores in FP32
  // (2 x 64 x 33): 86 KiB, within a V100's 96.
  const TiledAttentionShape wide = tiledAttentionShape(64, 32, 256);
  EXPECT_EQ(wide.dimSplit, 2);
  EXPECT_EQ(wide.threads, 256);
  EXPECT_EQ(wide.sharedBytes, 2u * (64 * 264 + 32 * 264 + 256 * 40) + 4u * 2 * 64 * 33);
  EXPECT_LE(wide.sharedBytes, 96u * 1024);
}

TEST(Launches, AttentionSplitFollowsTheLongestContext) {
  // Up to 256 chunks: past 256 x 512 positions the chunks grow instead.
  EXPECT_EQ(attentionSplit(512, 4096, 16, 128).maxSplits, 8);
  EXPECT_EQ(attentionSplit(512, 4096, 16, 128).workspaceBytes, 2ull * 8 * 16 * 130 * 4);
  const AttentionSplit longest = attentionSplit(512, 1 << 20, 32, 128);
  EXPECT_EQ(longest.splitTokens, 4096);
  EXPECT_EQ(longest.maxSplits, 256);
  // No split when one chunk holds every context, or without split_k_tokens.
  EXPECT_EQ(attentionSplit(512, 512, 32, 128).maxSplits, 0);
  EXPECT_EQ(attentionSplit(0, 32768, 32, 128).workspaceBytes, 0u);
}

TEST(Launches, AttentionRefusesAWorkspaceSmallerThanItsSplit) {
  auto ops = modelOps(qwen3MoeShape(), 1);
  const ModelOp &attention = find(ops, ".attention");
  KernelRegistry registry;
  ProgramInfo program = programFor(qwen3MoeShape(), 1);
  program.workspaceBytes -= 1;
  auto l = planLaunches(attention.op, attention.variants, program, TargetInfo{}, registry);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.message().find("needs 266240 bytes of kernel workspace; the plan has 266239"),
            std::string::npos)
      << l.message();
}

// The LM head runs over the gathered logits rows: R of them (R = S but in a
// speculative verify step).
TEST(Launches, PerRowOperandsCountLogitsRows) {
  auto ops = modelOps(qwen3MoeShape(), 1);
  const ModelOp &head = find(ops, ".lm_head");
  KernelRegistry registry;
  auto l =
      planLaunches(head.op, head.variants, programFor(qwen3MoeShape(), 1), TargetInfo{}, registry);
  ASSERT_TRUE(l.ok()) << l.message();
  EXPECT_EQ((*l)[0].args.back().kind, Kind::RowCount);
  EXPECT_EQ((*l)[2].grid[1].at(4096, 3, 7), 1u);
  EXPECT_EQ(registry.requests()[(*l)[0].kernel].get("out_f32"), 1);
}

TEST(Launches, CollectivesHaveNoKernels) {
  OpInfo op;
  op.kind = plan::OpKind::AllReduce;
  op.name = "layers.0.all_reduce";
  op.operands = {arena(3)};
  plan::AllReduceParamsT p;
  p.dim = 2048;
  op.params.Set(p);
  KernelRegistry registry;
  auto l = planLaunches(op, {{1 << 30, "nccl", {}}}, ProgramInfo{}, TargetInfo{}, registry);
  ASSERT_TRUE(l.ok()) << l.message();
  EXPECT_TRUE(l->empty());
  EXPECT_TRUE(registry.requests().empty());
}

TEST(Launches, EqualCallSitesShareKernels) {
  auto ops = modelOps(qwen3MoeShape(), 1);
  KernelRegistry registry;
  const ModelOp &norm = find(ops, ".input_layernorm");
  for (int layer = 0; layer < 48; ++layer)
    ASSERT_TRUE(planLaunches(norm.op, norm.variants, ProgramInfo{}, TargetInfo{}, registry).ok());
  EXPECT_EQ(registry.requests().size(), 1u);
}

// Qwen3-Next-80B-A3B's 512 experts with gate|up fused: 1,024 global
// scales, more than sm_70's 4 KiB of kernel parameters could hold by value.
// The grouped kernels read them from the weight entry instead: every
// variant gets one pointer to the entry at nvfp4EpilogueOffset, and the
// argument list stays the same size whatever the expert count.
TEST(Launches, MoeEpilogueScalesAreReadFromTheWeightEntry) {
  auto ops = modelOps(qwen3MoeShape(), 1);
  ModelOp gateUp = find(ops, ".experts.gate_up");
  auto grow = [&](uint32_t experts) {
    ModelOp m = gateUp;
    auto *q = m.op.params.AsMoeGroupedQLinearParams();
    q->num_experts = experts;
    OperandInfo &w = m.op.operands[3];
    w.shape[0] = experts;
    w.globalScales.assign(static_cast<size_t>(experts) * w.partRows.size(), 1.0f);
    return m;
  };
  ASSERT_EQ(gateUp.op.operands[3].partRows.size(), 2u);
  for (uint32_t experts : {128u, 512u, 1024u}) {
    ModelOp m = grow(experts);
    KernelRegistry registry;
    auto launches = planLaunches(m.op, m.variants, ProgramInfo{}, TargetInfo{}, registry);
    ASSERT_TRUE(launches.ok()) << launches.message();
    for (const PlannedLaunch &l : *launches) {
      ASSERT_EQ(l.args.size(), 8u) << experts << " experts";
      const LaunchArg &scales = l.args.back();
      EXPECT_EQ(scales.kind, LaunchArg::Kind::Pointer);
      EXPECT_EQ(scales.operandKind, OperandKind::Weight);
      EXPECT_EQ(scales.offset, nvfp4EpilogueOffset(m.op.operands[3].shape));
      EXPECT_GT(scales.offset, nvfp4ScalesOffset(m.op.operands[3].shape));
    }
  }
  // The packer's layout (tests/unit/model/WeightPackerTest.cpp): data,
  // block scales at 256, epilogue scales at 512 for [2, 2, 32].
  EXPECT_EQ(nvfp4ScalesOffset({2, 2, 32}), 256u);
  EXPECT_EQ(nvfp4EpilogueOffset({2, 2, 32}), 512u);
}

TEST(Launches, ShapesTheTemplatesCannotServeAreErrorsNamingTheOp) {
  auto ops = modelOps(qwen3MoeShape(), 1);
  KernelRegistry registry;
  ModelOp qkv = find(ops, ".qkv_proj");
  qkv.op.params.AsQLinearParams()->dim = 2040;
  qkv.op.operands[1].shape = {5120, 2040};
  auto badK = planLaunches(qkv.op, qkv.variants, ProgramInfo{}, TargetInfo{}, registry);
  ASSERT_FALSE(badK.ok());
  EXPECT_EQ(badK.message(),
            "op 'Qwen3-30B-A3B.qkv_proj' (QLinear): K = 2040 (a positive multiple of 16 expected)");

  ModelOp wide = find(ops, ".o_proj");
  wide.variants[0].maxTokens = 16;
  auto badGemv = planLaunches(wide.op, wide.variants, ProgramInfo{}, TargetInfo{}, registry);
  ASSERT_FALSE(badGemv.ok());
  EXPECT_NE(badGemv.message().find("nvfp4_gemv serves at most 8 tokens"), std::string::npos);

  ModelOp shape = find(ops, ".o_proj");
  shape.op.operands[1].shape = {2048, 2048};
  auto badShape = planLaunches(shape.op, shape.variants, ProgramInfo{}, TargetInfo{}, registry);
  ASSERT_FALSE(badShape.ok());
  EXPECT_EQ(badShape.message(), "op 'Qwen3-30B-A3B.o_proj' (QLinear): weight of shape [2048, "
                                "2048] for N = 2048, K = 4096");

  ModelOp kernel = find(ops, ".o_proj");
  kernel.variants[0].kernel = "dense_gemv";
  auto badKernel = planLaunches(kernel.op, kernel.variants, ProgramInfo{}, TargetInfo{}, registry);
  ASSERT_FALSE(badKernel.ok());
  EXPECT_NE(badKernel.message().find("kernel 'dense_gemv' does not implement QLinear"),
            std::string::npos);

  ModelOp none = find(ops, ".o_proj");
  auto noVariants = planLaunches(none.op, {}, ProgramInfo{}, TargetInfo{}, registry);
  ASSERT_FALSE(noVariants.ok());

  OpInfo bogus;
  bogus.kind = static_cast<plan::OpKind>(999);
  bogus.name = "x";
  EXPECT_EQ(planLaunches(bogus, {}, ProgramInfo{}, TargetInfo{}, registry).message(),
            "op 'x': unknown op kind 999");
}

TEST(Launches, ParamsOfAnotherKindAreRefused) {
  auto ops = modelOps(qwen3MoeShape(), 1);
  KernelRegistry registry;
  ModelOp qkv = find(ops, ".qkv_proj");
  plan::LinearParamsT dense;
  dense.dim = 2048;
  qkv.op.params.Set(dense);
  EXPECT_EQ(planLaunches(qkv.op, qkv.variants, ProgramInfo{}, TargetInfo{}, registry).message(),
            "op 'Qwen3-30B-A3B.qkv_proj' (QLinear): params of type LinearParams (expected "
            "QLinearParams)");
  qkv.op.params.Reset();
  EXPECT_EQ(planLaunches(qkv.op, qkv.variants, ProgramInfo{}, TargetInfo{}, registry).message(),
            "op 'Qwen3-30B-A3B.qkv_proj' (QLinear): params of type NONE (expected "
            "QLinearParams)");
}

TEST(Launches, GemmTilesShrinkToTheSharedMemoryOfTheSku) {
  auto ops = modelOps(qwen3MoeShape(), 1);
  KernelRegistry registry;
  TargetInfo small;
  small.sharedMemoryPerBlockOptinBytes = 49152;
  const ModelOp &o = find(ops, ".o_proj");
  auto l = planLaunches(o.op, o.variants, ProgramInfo{}, small, registry);
  ASSERT_TRUE(l.ok()) << l.message();
  for (const PlannedLaunch &launch : *l)
    EXPECT_LE(launch.sharedBytes, 49152u);
  const KernelRequest &wide = registry.requests()[(*l)[2].kernel];
  EXPECT_EQ(wide.get("stages"), 1);
}

// The registry holds every template once (compiler/codegen/Kernels.def):
// each descriptor names a template the compiler embeds and an op kind it
// implements, every kernel template has a descriptor, and every op kind
// but the collectives (NCCL) has a kernel.
TEST(KernelRegistry, EveryTemplateHasOneDescriptor) {
  std::set<std::string> names;
  for (const KernelDef &k : allKernels()) {
    SCOPED_TRACE(std::string(k.name));
    EXPECT_TRUE(names.insert(std::string(k.name)).second) << "listed twice";
    EXPECT_NE(findTemplateFile(std::string(k.name) + ".cu"), nullptr) << "no templates/ file";
    EXPECT_EQ(kernelNamed(k.name), &k);
    EXPECT_EQ(k.plan != nullptr, k.op.has_value()) << "an op kernel has a planner";
  }
  for (const TemplateFile &f : templateFiles()) {
    if (f.path.find('/') != std::string_view::npos || !f.path.ends_with(".cu"))
      continue; // common/ headers
    std::string name(f.path.substr(0, f.path.size() - 3));
    EXPECT_TRUE(names.count(name)) << "templates/" << f.path << " has no descriptor";
  }
  for (const plan::ops::OpDesc &d : plan::ops::allOps()) {
    const auto kind = static_cast<plan::OpKind>(d.kind);
    if (kind == plan::OpKind::AllReduce || kind == plan::OpKind::AllGather)
      continue;
    bool served = false;
    for (const KernelDef &k : allKernels())
      served |= k.op == kind;
    EXPECT_TRUE(served) << "no kernel implements " << d.name;
  }
  EXPECT_EQ(kernelNamed("convolution"), nullptr);
}

TEST(KernelRegistry, AVariantOfAKernelOfAnotherOpIsRefused) {
  auto ops = modelOps(qwen3MoeShape(), 1);
  KernelRegistry registry;
  ModelOp norm = find(ops, ".norm");
  norm.variants[0].kernel = "silu_mul";
  EXPECT_EQ(planLaunches(norm.op, norm.variants, ProgramInfo{}, TargetInfo{}, registry).message(),
            "op 'Qwen3-30B-A3B.norm' (RmsNorm): kernel 'silu_mul' does not implement RmsNorm");
  norm.variants[0].kernel = "fused_norm";
  EXPECT_EQ(planLaunches(norm.op, norm.variants, ProgramInfo{}, TargetInfo{}, registry).message(),
            "op 'Qwen3-30B-A3B.norm' (RmsNorm): no kernel named 'fused_norm' "
            "(compiler/codegen/Kernels.def)");
}

// The workspace rule memory planning sizes the workspace by is the one the
// attention kernels' descriptors give.
TEST(KernelRegistry, AttentionWorkspaceIsTheSplitRule) {
  auto ops = modelOps(qwen3MoeShape(), 1);
  const ModelOp &a = find(ops, ".attention");
  const ProgramInfo program = programFor(qwen3MoeShape(), 1);
  for (const Variant &v : a.variants) {
    const KernelDef *k = kernelNamed(v.kernel);
    ASSERT_NE(k, nullptr);
    ASSERT_NE(k->workspace, nullptr);
    EXPECT_EQ(k->workspace(a.op, v, program), program.workspaceBytes);
  }
  EXPECT_EQ(kernelNamed("rms_norm")->workspace, nullptr);
}

} // namespace
} // namespace volt::codegen
