//===- SimtTiledAttentionTest.cpp - tensor-core attention, run on the host ===//
//
// templates/paged_attention_tiled.cu planned as voltc plans it, run through
// the SIMT emulator (mma.m8n8k4 as the PTX ISA lays out its fragments) and
// compared with the cpu backend's attention op: the KV cache bit for bit,
// the outputs within the bound docs/perf/kernels.md derives (P is rounded
// to FP16 before P V). Steps mix prefill chunks of 1, 7, 64, 65 and 200
// tokens, after nothing cached and after hundreds of positions, with
// decodes and padding tokens, over GQA groups of 1, 2, 3, 4 and 8 and heads
// of 16, 64, 128 and 256 (two warps per 16 rows, a half of the dimensions
// each). A plan with both attention variants runs each step on
// the one its token count selects: split-K decodes below the threshold,
// the tiled kernel above.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/codegen/AttentionSteps.h"
#include "tests/unit/codegen/simt/SimtHarness.h"

#include "tests/unit/codegen/AttentionBounds.h"

#include "runtime/cpu/Ops.h"

#include <algorithm>
#include <numeric>
#include <tuple>

using namespace volt;

// Instances: (heads, kv heads, head_dim) with 16-position blocks, contexts
// up to 32 blocks (48 for the group of 8).
namespace tiled_g1 {
#define VOLT_HEADS 2
#define VOLT_KV_HEADS 2
#define VOLT_HEAD_DIM 64
#define VOLT_BLOCK_SIZE 16
#define VOLT_MAX_BLOCKS 32
#define VOLT_QUERY_TILE 64
#define VOLT_KEY_TILE 32
#define VOLT_THREADS 128
#define paged_attention_tiled tiled_g1_entry
#include "paged_attention_tiled.cu"
#undef paged_attention_tiled
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace tiled_g1

namespace tiled_g2 {
#define VOLT_HEADS 4
#define VOLT_KV_HEADS 2
#define VOLT_HEAD_DIM 128
#define VOLT_BLOCK_SIZE 16
#define VOLT_MAX_BLOCKS 32
#define VOLT_QUERY_TILE 64
#define VOLT_KEY_TILE 32
#define VOLT_THREADS 128
#define paged_attention_tiled tiled_g2_entry
#include "paged_attention_tiled.cu"
#undef paged_attention_tiled
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace tiled_g2

namespace tiled_g3 {
// Groups of 3: 21 tokens (63 rows) per tile of 64.
#define VOLT_HEADS 6
#define VOLT_KV_HEADS 2
#define VOLT_HEAD_DIM 64
#define VOLT_BLOCK_SIZE 16
#define VOLT_MAX_BLOCKS 32
#define VOLT_QUERY_TILE 64
#define VOLT_KEY_TILE 32
#define VOLT_THREADS 128
#define paged_attention_tiled tiled_g3_entry
#include "paged_attention_tiled.cu"
#undef paged_attention_tiled
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace tiled_g3

namespace tiled_g4 {
// The split-K paged_attention instance's geometry (below), so that one
// plan holds both; long decodes split in both (chunks of at least 32, a
// pool of 16).
#define VOLT_HEADS 8
#define VOLT_KV_HEADS 2
#define VOLT_HEAD_DIM 64
#define VOLT_BLOCK_SIZE 16
#define VOLT_MAX_BLOCKS 32
#define VOLT_SPLIT_K_TOKENS 32
#define VOLT_MAX_SPLITS 16
#define VOLT_QUERY_TILE 64
#define VOLT_KEY_TILE 32
#define VOLT_THREADS 128
#define paged_attention_tiled tiled_g4_entry
#include "paged_attention_tiled.cu"
#undef paged_attention_tiled
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace tiled_g4

namespace tiled_g4_wide {
// Another tile shape: 32 query rows (2 warps) against 64 keys.
#define VOLT_HEADS 8
#define VOLT_KV_HEADS 2
#define VOLT_HEAD_DIM 64
#define VOLT_BLOCK_SIZE 16
#define VOLT_MAX_BLOCKS 32
#define VOLT_QUERY_TILE 32
#define VOLT_KEY_TILE 64
#define VOLT_THREADS 64
#define paged_attention_tiled tiled_g4_wide_entry
#include "paged_attention_tiled.cu"
#undef paged_attention_tiled
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace tiled_g4_wide

namespace tiled_g8 {
// Qwen3-30B-A3B's group (32 / 4 heads of 128) at one kv head; long decodes
// split in chunks of at least 32 (a pool of 24).
#define VOLT_HEADS 8
#define VOLT_KV_HEADS 1
#define VOLT_HEAD_DIM 128
#define VOLT_BLOCK_SIZE 16
#define VOLT_MAX_BLOCKS 48
#define VOLT_SPLIT_K_TOKENS 32
#define VOLT_MAX_SPLITS 24
#define VOLT_QUERY_TILE 64
#define VOLT_KEY_TILE 32
#define VOLT_THREADS 128
#define paged_attention_tiled tiled_g8_entry
#include "paged_attention_tiled.cu"
#undef paged_attention_tiled
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace tiled_g8

namespace tiled_d256 {
// Qwen3.5/3.6's heads of 256 (16 / 2 heads: a group of 8 at one kv head):
// two warps per 16 rows, each over 128 dimensions; long decodes split.
#define VOLT_HEADS 8
#define VOLT_KV_HEADS 1
#define VOLT_HEAD_DIM 256
#define VOLT_BLOCK_SIZE 16
#define VOLT_MAX_BLOCKS 48
#define VOLT_SPLIT_K_TOKENS 32
#define VOLT_MAX_SPLITS 24
#define VOLT_QUERY_TILE 64
#define VOLT_KEY_TILE 32
#define VOLT_THREADS 256
#define paged_attention_tiled tiled_d256_entry
#include "paged_attention_tiled.cu"
#undef paged_attention_tiled
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace tiled_d256

namespace tiled_d16 {
// The synthetic test models' heads of 16.
#define VOLT_HEADS 4
#define VOLT_KV_HEADS 2
#define VOLT_HEAD_DIM 16
#define VOLT_BLOCK_SIZE 16
#define VOLT_MAX_BLOCKS 32
#define VOLT_QUERY_TILE 64
#define VOLT_KEY_TILE 32
#define VOLT_THREADS 128
#define paged_attention_tiled tiled_d16_entry
#include "paged_attention_tiled.cu"
#undef paged_attention_tiled
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace tiled_d16

namespace split_g4 {
#define VOLT_HEADS 8
#define VOLT_KV_HEADS 2
#define VOLT_HEAD_DIM 64
#define VOLT_BLOCK_SIZE 16
#define VOLT_MAX_BLOCKS 32
#define VOLT_SPLIT_K_TOKENS 32
#define VOLT_MAX_SPLITS 16
#define VOLT_THREADS 128
#define paged_attention split_g4_entry
#include "paged_attention.cu"
#undef paged_attention
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace split_g4

namespace volt::simt {
namespace {

using codegen::OpInfo;
using codegen::ProgramInfo;
using codegen::Variant;
using codegen::testing::attentionOp;
using codegen::testing::attentionProgram;
using codegen::testing::layoutPagedStep;
using codegen::testing::PagedStep;

/// Both templates' entry points (qkv, K, V, slots, starts, contexts,
/// tables, out, workspace, T, S).
using Entry = void (*)(const u16 *, u16 *, u16 *, const int *, const int *, const int *,
                       const int *, u16 *, float *, int, int);

/// Counters a split-K instance keeps between launches.
struct Counters {
  const u32 *values = nullptr;
  size_t count = 0;
};

/// A geometry and the instances compiled for it.
struct Instance {
  int64_t heads, kvHeads, dim, maxBlocks;
  /// The tiled kernel and its tile (as the variant asks for it).
  Entry tiled;
  int64_t queryTile, keyTile, sharedBytes;
  /// split_k_tokens of the instances (0: none), and the tiled one's counters.
  int64_t splitTokens = 0;
  Counters tiledArrivals = {};
  /// The paged_attention of the same geometry, if compiled, and its counters.
  Entry paged = nullptr;
  Counters pagedArrivals = {};
};

constexpr int64_t kBlockSize = 16;

const Instance kG1{2, 2, 64, 32, tiled_g1::tiled_g1_entry, 64, 32, tiled_g1::kSharedBytes};
const Instance kG2{4, 2, 128, 32, tiled_g2::tiled_g2_entry, 64, 32, tiled_g2::kSharedBytes};
const Instance kG3{6, 2, 64, 32, tiled_g3::tiled_g3_entry, 64, 32, tiled_g3::kSharedBytes};
const Instance kG4{8,
                   2,
                   64,
                   32,
                   tiled_g4::tiled_g4_entry,
                   64,
                   32,
                   tiled_g4::kSharedBytes,
                   32,
                   {tiled_g4::arrivals, std::size(tiled_g4::arrivals)},
                   split_g4::split_g4_entry,
                   {split_g4::arrivals, std::size(split_g4::arrivals)}};
const Instance kG4Wide{
    8, 2, 64, 32, tiled_g4_wide::tiled_g4_wide_entry, 32, 64, tiled_g4_wide::kSharedBytes};
const Instance kG8{8,
                   1,
                   128,
                   48,
                   tiled_g8::tiled_g8_entry,
                   64,
                   32,
                   tiled_g8::kSharedBytes,
                   32,
                   {tiled_g8::arrivals, std::size(tiled_g8::arrivals)}};
const Instance kD16{4, 2, 16, 32, tiled_d16::tiled_d16_entry, 64, 32, tiled_d16::kSharedBytes};
const Instance kD256{8,
                     1,
                     256,
                     48,
                     tiled_d256::tiled_d256_entry,
                     64,
                     32,
                     tiled_d256::kSharedBytes,
                     32,
                     {tiled_d256::arrivals, std::size(tiled_d256::arrivals)}};

/// One step: per sequence, its new tokens and its context after the step.
struct Step {
  std::vector<int32_t> newTokens, contexts;
  /// Tokens whose slot is -1 (padding: written nowhere, output unchecked).
  std::vector<int32_t> padding;
};

OperandInfo operand(OperandKind kind, uint32_t index) {
  OperandInfo o;
  o.kind = kind;
  o.index = index;
  return o;
}

std::mt19937 rng(7);

/// Plans `variants` for `inst`, runs `step` on the launch its token count
/// selects, and checks it; returns the kernel that ran.
std::string checkStep(const Instance &inst, const Step &step, std::vector<Variant> variants = {}) {
  const int64_t heads = inst.heads, kvHeads = inst.kvHeads, dim = inst.dim;
  const int64_t maxBlocks = inst.maxBlocks, group = heads / kvHeads;
  if (variants.empty())
    variants = {{int64_t{1} << 30,
                 "paged_attention_tiled",
                 {{"head_dim", dim},
                  {"query_tile", inst.queryTile},
                  {"key_tile", inst.keyTile},
                  {"split_k_tokens", inst.splitTokens}}}};
  const int seqs = static_cast<int>(step.contexts.size());
  const PagedStep layout =
      layoutPagedStep(step.newTokens, step.contexts, step.padding, kBlockSize, maxBlocks, 5, rng);
  const std::vector<int32_t> &seqStarts = layout.seqStarts, &blockTables = layout.blockTables,
                             &slotMapping = layout.slotMapping, &positions = layout.positions;
  const int tokens = layout.tokens;
  const int64_t numBlocks = layout.numBlocks;
  const int64_t row = (heads + 2 * kvHeads) * dim, slot = kvHeads * dim;
  std::vector<uint16_t> qkv = randomHalves(rng, static_cast<size_t>(tokens * row));
  const ProgramInfo program =
      attentionProgram(layout, kBlockSize, maxBlocks, heads, kvHeads, dim, inst.splitTokens);
  const codegen::AttentionSplit split =
      codegen::attentionSplit(inst.splitTokens, maxBlocks * kBlockSize, heads, dim);
  std::vector<uint16_t> cache =
      randomHalves(rng, static_cast<size_t>(2 * numBlocks * kBlockSize * slot));
  std::vector<uint16_t> cpuCache = cache;
  const size_t half = cache.size() / 2;

  const OpInfo op = attentionOp(heads, kvHeads, dim);
  KernelRegistry registry;
  codegen::TargetInfo target;
  auto planned = codegen::planLaunches(op, variants, program, target, registry);
  EXPECT_TRUE(planned.ok()) << planned.message();
  if (!planned.ok())
    return "";
  const PlannedLaunch *l = nullptr;
  for (const PlannedLaunch &candidate : *planned)
    if (!l && candidate.maxTokens >= static_cast<uint32_t>(tokens))
      l = &candidate;
  EXPECT_TRUE(l) << "no variant serves " << tokens << " tokens";
  if (!l)
    return "";
  const codegen::KernelRequest &request = registry.requests()[l->kernel];
  const bool tiled = request.kernel == "paged_attention_tiled";
  std::vector<std::pair<std::string, int64_t>> constants = {{"heads", heads},
                                                            {"kv_heads", kvHeads},
                                                            {"head_dim", dim},
                                                            {"block_size", kBlockSize},
                                                            {"max_blocks", maxBlocks}};
  if (tiled) {
    constants.push_back({"query_tile", inst.queryTile});
    constants.push_back({"key_tile", inst.keyTile});
    EXPECT_EQ(request.dynamicSharedBytes, static_cast<uint32_t>(inst.sharedBytes))
        << "Launches.cpp sizes shared memory as the template lays it out";
    const uint32_t tileTokens = static_cast<uint32_t>(inst.queryTile / group);
    uint32_t tiles = 0;
    for (int32_t n : step.newTokens)
      tiles += (static_cast<uint32_t>(n) + tileTokens - 1) / tileTokens;
    EXPECT_GE(l->grid[0].at(tokens, seqs), tiles + static_cast<uint64_t>(split.maxSplits))
        << "a block for every tile, then the pool";
    EXPECT_EQ(l->grid[1].at(tokens, seqs), static_cast<uint64_t>(kvHeads));
  } else {
    EXPECT_TRUE(inst.paged) << "no paged_attention instance for this geometry";
    if (!inst.paged)
      return "";
  }
  if (split.maxSplits > 0) {
    constants.push_back({"split_k_tokens", split.splitTokens});
    constants.push_back({"max_splits", split.maxSplits});
  }
  expectInstance(request, constants,
                 tiled ? static_cast<uint32_t>(inst.queryTile * 2 * (inst.dim > 128 ? 2 : 1))
                       : 128);

  std::vector<uint16_t> gpu(static_cast<size_t>(tokens * heads * dim), 0x7E00), cpuOut(gpu.size());
  cpu::ThreadPool pool(1);
  cpu::attention(
      {tokens, seqs, heads, kvHeads, dim}, qkv.data(),
      {slotMapping.data(), seqStarts.data(), step.contexts.data(), blockTables.data(), maxBlocks},
      {cpuCache.data(), cpuCache.data() + half, numBlocks, kBlockSize}, cpuOut.data(), pool);
  std::vector<float> workspace(split.workspaceBytes / 4 + 1, std::nanf(""));
  Memory m;
  m.tokens = tokens;
  m.seqs = seqs;
  const void *pointers[] = {qkv.data(),       cache.data(),         slotMapping.data(),
                            seqStarts.data(), step.contexts.data(), blockTables.data(),
                            gpu.data()};
  for (size_t i = 0; i < op.operands.size(); ++i)
    m.bind(op.operands[i], pointers[i]);
  m.bind(operand(OperandKind::Workspace, 0), workspace.data());
  run(*l, m, [&](Args &a) {
    std::apply(tiled ? inst.tiled : inst.paged,
               std::tuple{a.pointer<const u16>(), a.pointer<u16>(), a.pointer<u16>(),
                          a.pointer<const int>(), a.pointer<const int>(), a.pointer<const int>(),
                          a.pointer<const int>(), a.pointer<u16>(), a.pointer<float>(), a.i32(),
                          a.i32()});
  });
  for (const Counters &counters : {inst.tiledArrivals, inst.pagedArrivals})
    for (size_t i = 0; i < counters.count; ++i)
      EXPECT_EQ(counters.values[i], 0u) << "counter " << i << " is left for the next launch";
  EXPECT_EQ(cache, cpuCache) << "k and v land in the same slots, bit for bit";

  double maxV = 0, maxK = 0;
  for (uint16_t v : qkv)
    maxV = std::max(maxV, std::fabs(static_cast<double>(halfToFloat(v))));
  for (uint16_t v : cache)
    maxV = std::max(maxV, std::fabs(static_cast<double>(halfToFloat(v))));
  // The longest key row (every key a row may read: the cache's, the step's).
  for (size_t at = 0; at < half; at += static_cast<size_t>(dim))
    maxK = std::max(maxK, codegen::testing::halfNorm(cache.data() + at, dim));
  for (int t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < kvHeads; ++h)
      maxK =
          std::max(maxK, codegen::testing::halfNorm(qkv.data() + t * row + (heads + h) * dim, dim));
  const double scale = 1.0 / std::sqrt(static_cast<double>(dim));
  int bad = 0;
  for (int t = 0; t < tokens; ++t) {
    if (std::find(step.padding.begin(), step.padding.end(), t) != step.padding.end())
      continue; // a padding token's output is not compared
    const int n = positions[static_cast<size_t>(t)] + 1;
    for (int64_t h = 0; h < heads; ++h) {
      const double a =
          codegen::testing::halfNorm(qkv.data() + t * row + h * dim, dim) * maxK * scale;
      const double bound = tiled ? codegen::testing::tiledAttentionBound(n, dim, a, maxV)
                                 : codegen::testing::pagedAttentionBound(n, maxV);
      for (int64_t d = 0; d < dim; ++d) {
        const size_t i = static_cast<size_t>((t * heads + h) * dim + d);
        if (!halfClose(gpu[i], cpuOut[i], bound) && bad++ < 5)
          ADD_FAILURE() << request.kernel << ": token " << t << " head " << h << " [" << d
                        << "]: " << halfToFloat(gpu[i]) << " vs " << halfToFloat(cpuOut[i])
                        << " (bound " << bound << ")";
      }
    }
  }
  EXPECT_EQ(bad, 0);
  return request.kernel;
}

// Prefill chunks of 7, 64, 65 and 200 tokens from position 0, a decode of
// 300 and a one-token chunk; the 7-token chunk ends with a padding token.
const Step kFromZero{{7, 64, 1, 65, 200, 1}, {7, 64, 300, 65, 200, 1}, {6}};
// The same chunks after 100..400 cached positions, and decodes; the 64
// ends with a padding token (no later token of its sequence reads it: the
// engine pads steps with whole inert sequences).
const Step kAfterCached{{1, 200, 7, 1, 64, 65}, {412, 500, 307, 2, 364, 265}, {272}};

/// Every instance, by name, for the steps above (one test each, so that
/// ctest runs them in parallel).
const std::pair<const char *, const Instance *> kInstances[] = {
    {"Group1Dim64", &kG1},
    {"Group2Dim128", &kG2},
    {"Group3Dim64", &kG3},
    {"Group4Dim64", &kG4},
    {"Group4Dim64Rows32Keys64", &kG4Wide},
    {"Group8Dim128", &kG8},
    {"Group8Dim256", &kD256},
    {"Group2Dim16", &kD16}};

class SimtTiledAttentionSteps : public ::testing::TestWithParam<size_t> {};

TEST_P(SimtTiledAttentionSteps, PrefillChunksFromPositionZero) {
  checkStep(*kInstances[GetParam()].second, kFromZero);
}

TEST_P(SimtTiledAttentionSteps, PrefillChunksAfterCachedPositions) {
  checkStep(*kInstances[GetParam()].second, kAfterCached);
}

INSTANTIATE_TEST_SUITE_P(Instances, SimtTiledAttentionSteps,
                         ::testing::Range<size_t>(0, std::size(kInstances)),
                         [](const ::testing::TestParamInfo<size_t> &info) {
                           return std::string(kInstances[info.param].first);
                         });

TEST(SimtTiledAttention, LongContextsAndDecodeOnlySteps) {
  // A 168-token chunk after 600 cached positions (the full 768) next to a
  // decode of 700.
  checkStep(kG8, {{168, 1}, {768, 700}, {}});
  // Decodes only (one token per tile), one of them a padding sequence of
  // context 1 as CUDA-graph buckets pad them.
  checkStep(kG4, {{1, 1, 1, 1}, {512, 33, 1, 129}, {2}});
  checkStep(kD16, {{1, 1, 1}, {5, 300, 17}, {}});
}

TEST(SimtTiledAttention, LongDecodesNextToPrefillChunksSplit) {
  // Decode contexts 500, 333, 20 and 129 add up to 982: chunks of
  // ceil(982 / 16) = 62, so 9 + 6 + 3 chunks (15 extra blocks of the
  // pool's 16); the decode of 20 stays whole.
  checkStep(kG4, {{1, 65, 1, 1, 7, 1}, {500, 265, 333, 20, 7, 129}, {}});
  // Chunks of 32 for a lone decode next to a chunk (16 of them, the pool's
  // size), and the group of 8 at 128 dimensions.
  checkStep(kG4, {{9, 1}, {9, 512}, {}});
  checkStep(kG8, {{64, 1, 1}, {100, 700, 40}, {}});
  checkStep(kD256, {{64, 1, 1}, {100, 700, 40}, {}});
}

TEST(SimtTiledAttention, EachStepRunsTheVariantItsTokenCountSelects) {
  // Catalog-shaped plan: split-K paged_attention up to 8 tokens (the
  // deployment's max_num_seqs), the tiled kernel above.
  const std::vector<Variant> variants = {
      {8, "paged_attention", {{"head_dim", 64}, {"split_k_tokens", 32}}},
      {int64_t{1} << 30,
       "paged_attention_tiled",
       {{"head_dim", 64}, {"query_tile", 64}, {"key_tile", 32}, {"split_k_tokens", 32}}}};
  // Long decodes split across the pool; a small step with a prefill chunk.
  EXPECT_EQ(checkStep(kG4, {{1, 1, 1}, {500, 20, 333}, {}}, variants), "paged_attention");
  EXPECT_EQ(checkStep(kG4, {{1, 5, 1}, {300, 45, 129}, {}}, variants), "paged_attention");
  // Above 8 tokens: prefill chunks and the same long decodes, split by the
  // tiled kernel's pool.
  EXPECT_EQ(checkStep(kG4, {{1, 65, 1, 9}, {500, 265, 333, 9}, {}}, variants),
            "paged_attention_tiled");
}

TEST(SimtTiledAttention, PlanningRejectsWhatTheTemplateCannotServe) {
  OpInfo op = attentionOp(8, 2, 40);
  ProgramInfo program;
  program.kvBlocks = 8;
  program.kvBlockSize = 16;
  program.kvHeads = 2;
  program.headDim = 40;
  program.maxBlocksPerSeq = 4;
  KernelRegistry registry;
  const std::vector<Variant> variants = {
      {int64_t{1} << 30, "paged_attention_tiled", {{"query_tile", 64}, {"key_tile", 32}}}};
  auto planned = codegen::planLaunches(op, variants, program, codegen::TargetInfo{}, registry);
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.message(), "op 'attention' (Attention): head_dim 40: paged_attention_tiled "
                               "serves multiples of 16 up to 256");
  op.params.AsAttentionParams()->head_dim = program.headDim = 64;
  op.params.AsAttentionParams()->num_heads = 16 * 8;
  program.kvHeads = op.params.AsAttentionParams()->num_kv_heads = 1;
  const std::vector<Variant> narrow = {
      {int64_t{1} << 30, "paged_attention_tiled", {{"query_tile", 64}, {"key_tile", 32}}}};
  planned = codegen::planLaunches(op, narrow, program, codegen::TargetInfo{}, registry);
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.message(), "op 'attention' (Attention): groups of 128 query heads: "
                               "paged_attention_tiled serves at most query_tile = 64");
}

} // namespace
} // namespace volt::simt
