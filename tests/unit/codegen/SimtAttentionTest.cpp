//===- SimtAttentionTest.cpp - paged attention, run on the host -----------===//
//
// templates/paged_attention.cu planned as voltc plans it, run through the
// SIMT emulator over steps that mix decode tokens and prefill chunks, and
// compared with the cpu backend's attention op: the KV cache writes bit for
// bit, the outputs within the documented tolerance (the kernel's online
// softmax and split merge round differently from the op's two passes).
// Split-K instances cut long decode contexts into chunks across blocks;
// their steps cover lone long sequences, several at once sharing the pool
// of chunk blocks (chunks longer than split_k_tokens), contexts that are
// not multiples of the chunk, short decodes that stay whole, GQA groups,
// and a workspace full of garbage.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/codegen/AttentionSteps.h"
#include "tests/unit/codegen/simt/SimtHarness.h"

#include "runtime/cpu/Ops.h"

#include <algorithm>
#include <numeric>
#include <tuple>

using namespace volt;

namespace attention {
#define VOLT_HEADS 6
#define VOLT_KV_HEADS 2
#define VOLT_HEAD_DIM 64
#define VOLT_BLOCK_SIZE 16
#define VOLT_MAX_BLOCKS 4
#define VOLT_THREADS 128
#define paged_attention attention_entry
#include "paged_attention.cu"
#undef paged_attention
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace attention

namespace attention_small {
// The synthetic test models' geometry: heads of 16 (half a warp's lanes).
#define VOLT_HEADS 4
#define VOLT_KV_HEADS 2
#define VOLT_HEAD_DIM 16
#define VOLT_BLOCK_SIZE 16
#define VOLT_MAX_BLOCKS 4
#define VOLT_THREADS 128
#define paged_attention attention_small_entry
#include "paged_attention.cu"
#undef paged_attention
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace attention_small

namespace attention_split {
// Groups of 4 query heads; contexts up to 32 blocks of 16 = 512 positions,
// chunks of at least 32: a pool of 16 chunk blocks.
#define VOLT_HEADS 8
#define VOLT_KV_HEADS 2
#define VOLT_HEAD_DIM 64
#define VOLT_BLOCK_SIZE 16
#define VOLT_MAX_BLOCKS 32
#define VOLT_SPLIT_K_TOKENS 32
#define VOLT_MAX_SPLITS 16
#define VOLT_THREADS 128
#define paged_attention attention_split_entry
#include "paged_attention.cu"
#undef paged_attention
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace attention_split

namespace attention_split_odd {
// Heads of 40 (lanes hold 2 elements, the last 12 lanes none), groups of
// 2, blocks of 8 positions, contexts up to 320: a pool of 20.
#define VOLT_HEADS 6
#define VOLT_KV_HEADS 3
#define VOLT_HEAD_DIM 40
#define VOLT_BLOCK_SIZE 8
#define VOLT_MAX_BLOCKS 40
#define VOLT_SPLIT_K_TOKENS 16
#define VOLT_MAX_SPLITS 20
#define VOLT_THREADS 128
#define paged_attention attention_split_odd_entry
#include "paged_attention.cu"
#undef paged_attention
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace attention_split_odd

namespace volt::simt {
namespace {

using codegen::OpInfo;
using codegen::ProgramInfo;
using codegen::Variant;
using codegen::testing::attentionOp;
using codegen::testing::attentionProgram;
using codegen::testing::layoutPagedStep;
using codegen::testing::PagedStep;

using AttentionEntry = void (*)(const u16 *, u16 *, u16 *, const int *, const int *, const int *,
                                const int *, u16 *, float *, int, int);

/// An instance compiled into this test, with the geometry it was built for.
struct Instance {
  AttentionEntry entry;
  int64_t heads, kvHeads, dim, blockSize, maxBlocks;
  /// The variant's split_k_tokens (0: none), and the counters the instance
  /// keeps between launches (null without split).
  int64_t splitTokens;
  const u32 *arrivals;
  size_t arrivalCount;
};

const Instance kWhole{attention::attention_entry, 6, 2, 64, 16, 4, 0, nullptr, 0};
const Instance kWholeSmall{attention_small::attention_small_entry, 4, 2, 16, 16, 4, 0, nullptr, 0};
const Instance kSplit{
    attention_split::attention_split_entry, 8, 2, 64, 16, 32, 32, attention_split::arrivals,
    std::size(attention_split::arrivals)};
const Instance kSplitOdd{attention_split_odd::attention_split_odd_entry,
                         6,
                         3,
                         40,
                         8,
                         40,
                         16,
                         attention_split_odd::arrivals,
                         std::size(attention_split_odd::arrivals)};

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

std::mt19937 rng(2024);

/// Plans, runs and checks one step on `inst`; returns the launch.
PlannedLaunch checkStep(const Instance &inst, const Step &step) {
  const int64_t heads = inst.heads, kvHeads = inst.kvHeads, dim = inst.dim;
  const int64_t blockSize = inst.blockSize, maxBlocks = inst.maxBlocks;
  const int seqs = static_cast<int>(step.contexts.size());
  // Every sequence gets its blocks from a shuffled pool, so tables are
  // scattered over the cache.
  const PagedStep layout =
      layoutPagedStep(step.newTokens, step.contexts, step.padding, blockSize, maxBlocks, 3, rng);
  const std::vector<int32_t> &seqStarts = layout.seqStarts, &blockTables = layout.blockTables,
                             &slotMapping = layout.slotMapping;
  const int tokens = layout.tokens;
  const int64_t numBlocks = layout.numBlocks;
  const int64_t row = (heads + 2 * kvHeads) * dim, slot = kvHeads * dim;
  std::vector<uint16_t> qkv = randomHalves(rng, static_cast<size_t>(tokens * row));
  const ProgramInfo program =
      attentionProgram(layout, blockSize, maxBlocks, heads, kvHeads, dim, inst.splitTokens);
  const codegen::AttentionSplit split =
      codegen::attentionSplit(inst.splitTokens, maxBlocks * blockSize, heads, dim);
  // One layer's cache: K blocks, then V blocks.
  std::vector<uint16_t> cache =
      randomHalves(rng, static_cast<size_t>(2 * numBlocks * blockSize * slot));
  std::vector<uint16_t> cpuCache = cache;
  const size_t half = cache.size() / 2;

  const OpInfo op = attentionOp(heads, kvHeads, dim);
  Variant variant{int64_t{1} << 30, "paged_attention", {{"head_dim", dim}}};
  if (inst.splitTokens)
    variant.config["split_k_tokens"] = inst.splitTokens;
  KernelRegistry registry;
  auto planned = codegen::planLaunches(op, {variant}, program, codegen::TargetInfo{}, registry);
  EXPECT_TRUE(planned.ok()) << planned.message();
  if (!planned.ok())
    return {};
  const PlannedLaunch l = (*planned)[0];
  std::vector<std::pair<std::string, int64_t>> constants = {{"heads", heads},
                                                            {"kv_heads", kvHeads},
                                                            {"head_dim", dim},
                                                            {"block_size", blockSize},
                                                            {"max_blocks", maxBlocks}};
  if (split.maxSplits > 0) {
    constants.push_back({"split_k_tokens", split.splitTokens});
    constants.push_back({"max_splits", split.maxSplits});
  }
  expectInstance(registry.requests()[l.kernel], constants, 128);
  EXPECT_EQ(l.args[2].offset, half * 2);

  std::vector<uint16_t> gpu(static_cast<size_t>(tokens * heads * dim), 0x7E00), cpuOut(gpu.size());
  cpu::ThreadPool pool(1);
  cpu::attention(
      {tokens, seqs, heads, kvHeads, dim}, qkv.data(),
      {slotMapping.data(), seqStarts.data(), step.contexts.data(), blockTables.data(), maxBlocks},
      {cpuCache.data(), cpuCache.data() + half, numBlocks, blockSize}, cpuOut.data(), pool);
  // The workspace's contents are undefined between ops: start from NaNs.
  std::vector<float> workspace(split.workspaceBytes / 4 + 1, std::nanf(""));
  Memory m;
  m.tokens = tokens;
  m.seqs = seqs;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const void *p[] = {qkv.data(),       cache.data(),         slotMapping.data(),
                       seqStarts.data(), step.contexts.data(), blockTables.data(),
                       gpu.data()};
    m.bind(op.operands[i], p[i]);
  }
  m.bind(operand(OperandKind::Workspace, 0), workspace.data());
  run(l, m, [&](Args &a) {
    std::apply(inst.entry, std::tuple{a.pointer<const u16>(), a.pointer<u16>(), a.pointer<u16>(),
                                      a.pointer<const int>(), a.pointer<const int>(),
                                      a.pointer<const int>(), a.pointer<const int>(),
                                      a.pointer<u16>(), a.pointer<float>(), a.i32(), a.i32()});
  });
  EXPECT_EQ(cache, cpuCache) << "k and v land in the same slots, bit for bit";
  for (size_t i = 0; i < inst.arrivalCount; ++i)
    EXPECT_EQ(inst.arrivals[i], 0u) << "counter " << i << " is left for the next launch";
  double maxV = 0;
  for (uint16_t v : qkv)
    maxV = std::max(maxV, std::fabs(static_cast<double>(halfToFloat(v))));
  for (uint16_t v : cache)
    maxV = std::max(maxV, std::fabs(static_cast<double>(halfToFloat(v))));
  int bad = 0;
  for (size_t i = 0; i < gpu.size(); ++i) {
    const int t = static_cast<int>(i / static_cast<size_t>(heads * dim));
    if (std::find(step.padding.begin(), step.padding.end(), t) != step.padding.end())
      continue; // a padding token's output is not compared
    const int s = static_cast<int>(std::upper_bound(seqStarts.begin(), seqStarts.end(), t) -
                                   seqStarts.begin()) -
                  1;
    // docs/perf/kernels.md: (context + 64) 2^-22 max|v| + FP16 roundings.
    const double bound = (step.contexts[static_cast<size_t>(s)] + 64) * std::ldexp(1.0, -22) * maxV;
    if (!halfClose(gpu[i], cpuOut[i], bound) && bad++ < 5)
      ADD_FAILURE() << "token " << t << " [" << i % static_cast<size_t>(heads * dim)
                    << "]: " << halfToFloat(gpu[i]) << " vs " << halfToFloat(cpuOut[i]);
  }
  EXPECT_EQ(bad, 0);
  return l;
}

// Sequence 0 decodes its 37th token; sequence 1 prefills 5 tokens after 20
// cached; sequence 2 prefills its first 7, the last a padding token.
const Step kMixed{{1, 5, 7}, {37, 25, 7}, {12}};

TEST(SimtAttention, MixesDecodeAndPrefillChunks) {
  PlannedLaunch l = checkStep(kWhole, kMixed);
  EXPECT_EQ(l.grid[0].at(13, 3), 13u) << "one block per token without split";
  checkStep(kWholeSmall, kMixed);
}

TEST(SimtAttention, SplitsALoneLongDecodeIntoChunks) {
  // 500 positions in 16 chunks of 32 (the last of 20): one token block and
  // 15 of the 16 pool blocks.
  PlannedLaunch l = checkStep(kSplit, {{1}, {500}, {}});
  EXPECT_EQ(l.grid[0].at(1, 1), 17u);
  EXPECT_EQ(l.grid[1].at(1, 1), 2u);
  // A full-length context, and one a position past a chunk boundary.
  checkStep(kSplit, {{1}, {512}, {}});
  checkStep(kSplit, {{1}, {33}, {}});
}

TEST(SimtAttention, SplitsDecodesMixedWithPrefillChunks) {
  // Decode contexts 300, 20, 129 and 77 add up to 526: chunks of 33, so
  // 10 + 4 + 3 chunks (13 of the pool's 16), and the decode of 20 is whole;
  // two prefill chunks, one ending with a padding token, keep their path.
  const Step step{{1, 5, 1, 1, 8, 1}, {300, 45, 20, 129, 8, 77}, {15}};
  checkStep(kSplit, step);
  // Chunks of 27 there: 12 + 5 + 3.
  checkStep(kSplitOdd, step);
  // A decode of 37 in chunks of 16 next to prefill chunks.
  checkStep(kSplitOdd, kMixed);
}

TEST(SimtAttention, ManyLongDecodesShareThePool) {
  // 8 decodes of 2,777 positions in all: chunks of 174 (not 32), 2 or 3 per
  // sequence but the one of exactly 174.
  checkStep(kSplit, {{1, 1, 1, 1, 1, 1, 1, 1}, {512, 400, 333, 175, 174, 450, 301, 432}, {}});
  // 24 decodes of 4,272 positions in all (the longest 316 of 320), against
  // a pool of 20: chunks of 214, so only the 9 longest split, in two.
  Step many;
  for (int s = 0; s < 24; ++s) {
    many.newTokens.push_back(1);
    many.contexts.push_back(40 + 12 * s);
  }
  checkStep(kSplitOdd, many);
}

TEST(SimtAttention, SplitInstancesServePrefillOnlySteps) {
  // The pool blocks find no decode to split and leave.
  checkStep(kSplit, {{30, 3}, {230, 3}, {}});
}

} // namespace
} // namespace volt::simt
