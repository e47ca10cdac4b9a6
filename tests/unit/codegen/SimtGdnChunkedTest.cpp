//===- SimtGdnChunkedTest.cpp - the chunked Gated DeltaNet kernel on the host ===//
//
// gated_delta_rule_chunked (templates/gated_delta_rule_chunked.cu) runs the
// delta rule CHUNK tokens at a time in its WY form, on mma.m8n8k4 with
// FP16 operands; the cpu op walks the tokens one at a time in FP32. Planned
// as voltc plans it, run through the SIMT emulator, and compared with
// cpu::gatedDeltaRule on steps that mix what a step holds: a fresh prompt
// over several chunks, a chunk continuing a kept state, a decode token, a
// verify step whose draft-carrying tokens copy the state (chunks end
// there), a sequence without a slot. The bounds are the op's tolerance in
// docs/perf/kernels.md (Tolerances): outputs within 2^-5 of the cpu op's
// plus 2^-6 of its magnitude, the kept and copied states within 2^-6 of
// the state's largest value. The errors measured are printed.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/KernelDefs.h"
#include "tests/unit/codegen/simt/SimtHarness.h"

#include "runtime/cpu/Ops.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

using namespace volt;

namespace gdc_small {
#define VOLT_KEY_HEADS 2
#define VOLT_VALUE_HEADS 4
#define VOLT_KEY_DIM 32
#define VOLT_VALUE_DIM 16
#define VOLT_CHUNK 32
#define VOLT_THREADS 256
#define gated_delta_rule_chunked gdc_small_entry
#include "gated_delta_rule_chunked.cu"
#undef gated_delta_rule_chunked
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace gdc_small

namespace gdc_qwen {
// Qwen3.6-35B-A3B's heads (dk = dv = 128) in chunks of 64, two value heads
// sharing a key head.
#define VOLT_KEY_HEADS 1
#define VOLT_VALUE_HEADS 2
#define VOLT_KEY_DIM 128
#define VOLT_VALUE_DIM 128
#define VOLT_CHUNK 64
#define VOLT_THREADS 256
#define gated_delta_rule_chunked gdc_qwen_entry
#include "gated_delta_rule_chunked.cu"
#undef gated_delta_rule_chunked
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace gdc_qwen

namespace gdc_small_split {
// The small heads' 32 value dims over two blocks of 16.
#define VOLT_KEY_HEADS 2
#define VOLT_VALUE_HEADS 4
#define VOLT_KEY_DIM 32
#define VOLT_VALUE_DIM 32
#define VOLT_CHUNK 32
#define VOLT_DV_SPLIT 2
#define VOLT_MAX_SEQS 8
#define VOLT_THREADS 256
#define gated_delta_rule_chunked gdc_small_split_entry
#include "gated_delta_rule_chunked.cu"
#undef gated_delta_rule_chunked
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace gdc_small_split

namespace gdc_qwen_split {
// Qwen3.6's heads over four blocks of 32 value dims each (a V100 pair's 16
// heads per rank: 64 blocks for one prompt).
#define VOLT_KEY_HEADS 1
#define VOLT_VALUE_HEADS 2
#define VOLT_KEY_DIM 128
#define VOLT_VALUE_DIM 128
#define VOLT_CHUNK 64
#define VOLT_DV_SPLIT 4
#define VOLT_MAX_SEQS 4
#define VOLT_THREADS 256
#define gated_delta_rule_chunked gdc_qwen_split_entry
#include "gated_delta_rule_chunked.cu"
#undef gated_delta_rule_chunked
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace gdc_qwen_split

namespace volt::simt {
namespace {

using Entry = void (*)(const u16 *, const u16 *, const u16 *, const float *, const float *,
                       const u16 *, float *, const int *, const int *, const int *, const int *,
                       u16 *, int, float);

struct Shape {
  int hk, hv, dk, dv, chunk;
  /// Blocks per head (value dims split), and the step's most sequences.
  int split = 1, maxSeqs = 0;
  /// The counters of a split instance, which each launch must leave zero.
  const u32 *counters = nullptr;
  size_t counterCount = 0;
};

/// One step: sequences' token counts, context lengths, state slots; the
/// snapshot slots per token (-1: none).
struct Step {
  std::vector<int32_t> counts, contexts, slots, snapshots;
  int numSlots = 0;
  /// Decays near 1 (A_log in [-3, 0), dt_bias in [-6, -3): g of -0.05 to
  /// -0.001 per token, as trained models have), so that the state carries
  /// across many chunks; else strong decays (g of -0.1 to -5).
  bool longMemory = false;
};

struct Errors {
  double out = 0, state = 0, stateScale = 0;
};

Errors runStep(const Shape &sh, const Step &step, Entry entry, uint32_t seed) {
  std::mt19937 rng(seed);
  const int width = 2 * sh.hk * sh.dk + sh.hv * sh.dv;
  std::vector<int32_t> starts = {0};
  for (int32_t c : step.counts)
    starts.push_back(starts.back() + c);
  const int tokens = starts.back(), seqs = static_cast<int>(step.counts.size());
  std::vector<int32_t> snapshots = step.snapshots;
  snapshots.resize(static_cast<size_t>(tokens), -1);

  codegen::OpInfo op;
  op.kind = plan::OpKind::GatedDeltaRule;
  op.name = "linear_attn";
  auto operand = [](OperandKind kind, uint32_t index) {
    OperandInfo o;
    o.kind = kind;
    o.index = index;
    return o;
  };
  op.operands = {operand(OperandKind::Arena, 0),  operand(OperandKind::Arena, 1),
                 operand(OperandKind::Arena, 2),  operand(OperandKind::Weight, 0),
                 operand(OperandKind::Weight, 1), operand(OperandKind::Weight, 2),
                 operand(OperandKind::Cache, 0),  operand(OperandKind::Input, 3),
                 operand(OperandKind::Input, 4),  operand(OperandKind::Input, 7),
                 operand(OperandKind::Input, 8),  operand(OperandKind::Arena, 3)};
  plan::GatedDeltaRuleParamsT params;
  params.key_heads = static_cast<uint32_t>(sh.hk);
  params.value_heads = static_cast<uint32_t>(sh.hv);
  params.key_dim = static_cast<uint32_t>(sh.dk);
  params.value_dim = static_cast<uint32_t>(sh.dv);
  params.eps = 1e-6f;
  op.params.Set(params);
  codegen::KernelRegistry registry;
  codegen::ProgramInfo program;
  codegen::TargetInfo target; // a V100's
  std::map<std::string, int64_t> config = {{"chunk", sh.chunk}};
  if (sh.split > 1)
    config = {{"chunk", sh.chunk}, {"dv_split", sh.split}, {"max_seqs", sh.maxSeqs}};
  auto launches = codegen::planLaunches(op, {{1 << 30, "gated_delta_rule_chunked", config}},
                                        program, target, registry);
  EXPECT_TRUE(launches.ok()) << launches.message();
  if (!launches.ok())
    return {};
  const PlannedLaunch &l = launches->front();
  std::vector<std::pair<std::string, int64_t>> constants = {
      {"key_heads", sh.hk}, {"value_heads", sh.hv}, {"key_dim", sh.dk},
      {"value_dim", sh.dv}, {"chunk", sh.chunk}};
  if (sh.split > 1) {
    constants.emplace_back("dv_split", sh.split);
    constants.emplace_back("max_seqs", sh.maxSeqs);
  }
  expectInstance(registry.requests()[l.kernel], constants, 256);

  std::vector<uint16_t> qkv = randomHalves(rng, static_cast<size_t>(tokens) * width, 1.0f),
                        gates = randomHalves(rng, static_cast<size_t>(tokens) * 2 * sh.hv, 1.5f),
                        z = randomHalves(rng, static_cast<size_t>(tokens) * sh.hv * sh.dv, 1.0f),
                        norm = randomHalves(rng, static_cast<size_t>(sh.dv), 0.3f);
  for (uint16_t &w : norm)
    w = floatToHalf(1.0f + halfToFloat(w));
  std::uniform_real_distribution<float> u(-2.0f, 1.0f);
  std::vector<float> aLog(static_cast<size_t>(sh.hv)), dtBias(aLog.size());
  std::uniform_real_distribution<float> mildALog(-3.0f, 0.0f), mildBias(-6.0f, -3.0f);
  for (int h = 0; h < sh.hv; ++h) {
    aLog[static_cast<size_t>(h)] = step.longMemory ? mildALog(rng) : u(rng);
    dtBias[static_cast<size_t>(h)] = step.longMemory ? mildBias(rng) : u(rng);
  }
  std::vector<float> state(static_cast<size_t>(step.numSlots) * sh.hv * sh.dk * sh.dv);
  for (float &v : state)
    v = u(rng) * 0.3f;
  std::vector<float> cpuState = state;
  std::vector<uint16_t> gpu(static_cast<size_t>(tokens) * sh.hv * sh.dv, 0x7E00),
      cpuOut(gpu.size());
  cpu::ThreadPool pool(1);
  cpu::gatedDeltaRule({tokens, seqs, sh.hk, sh.hv, sh.dk, sh.dv, 1e-6f}, qkv.data(), gates.data(),
                      z.data(), aLog.data(), dtBias.data(), norm.data(), cpuState.data(),
                      starts.data(), step.contexts.data(), step.slots.data(), snapshots.data(),
                      cpuOut.data(), pool);
  Memory m;
  m.tokens = tokens;
  m.seqs = seqs;
  std::vector<const void *> bound = {
      qkv.data(),    gates.data(),  z.data(),           aLog.data(),
      dtBias.data(), norm.data(),   state.data(),       starts.data(),
      step.contexts.data(), step.slots.data(), snapshots.data(), gpu.data()};
  for (size_t i = 0; i < bound.size(); ++i)
    m.bind(op.operands[i], bound[i]);
  run(l, m, [&](Args &a) {
    std::apply(entry, std::tuple{a.pointer<const u16>(), a.pointer<const u16>(),
                                 a.pointer<const u16>(), a.pointer<const float>(),
                                 a.pointer<const float>(), a.pointer<const u16>(),
                                 a.pointer<float>(), a.pointer<const int>(), a.pointer<const int>(),
                                 a.pointer<const int>(), a.pointer<const int>(), a.pointer<u16>(),
                                 a.i32(), a.f32()});
  });

  for (size_t i = 0; i < sh.counterCount; ++i)
    EXPECT_EQ(sh.counters[i], 0u) << "counter " << i << " is left for the next launch";
  Errors e;
  for (size_t i = 0; i < gpu.size(); ++i) {
    const double g = halfToFloat(gpu[i]), w = halfToFloat(cpuOut[i]);
    EXPECT_TRUE(std::isfinite(g)) << "output " << i << " was not written";
    const double err = std::fabs(g - w);
    e.out = std::max(e.out, err / (1.0 + std::fabs(w)));
    EXPECT_LE(err, 0.03125 + 0.015625 * std::fabs(w))
        << "output " << i << " (token " << i / (sh.hv * sh.dv) << "): " << g << " vs " << w;
  }
  for (float v : cpuState)
    e.stateScale = std::max(e.stateScale, static_cast<double>(std::fabs(v)));
  for (size_t i = 0; i < state.size(); ++i)
    e.state = std::max(e.state, static_cast<double>(std::fabs(state[i] - cpuState[i])));
  EXPECT_LE(e.state, 0.015625 * e.stateScale);
  std::printf("  outputs: max |gpu - cpu| / (1 + |cpu|) = %.3g; states: max error %.3g of %.3g "
              "(%.3g)\n",
              e.out, e.state, e.stateScale, e.state / e.stateScale);
  return e;
}

// Slots: sequence 0 fresh (a 75-token prompt over three chunks of 32),
// 1 continuing its slot over 40 tokens, 2 a decode token, 3 a verify step of
// 4 tokens copying the state after each of the first three (slots 5, 6, 7),
// 4 without a slot (starts from zeros, keeps nothing).
Step mixedStep() {
  Step step;
  step.counts = {75, 40, 1, 4, 9};
  step.contexts = {75, 90, 300, 12, 30};
  step.slots = {0, 1, 2, 3, -1};
  step.numSlots = 8;
  step.snapshots.assign(75 + 40 + 1, -1);
  step.snapshots.insert(step.snapshots.end(), {5, 6, 7, -1});
  return step;
}

// A 150-token prompt (chunks of 64, 64, 22) continuing a kept state, a
// fresh 70-token prompt, a decode token, a verify step.
Step qwenStep() {
  Step step;
  step.counts = {150, 70, 1, 3};
  step.contexts = {170, 70, 1000, 40};
  step.slots = {2, 0, 1, 3};
  step.numSlots = 6;
  step.snapshots.assign(150 + 70 + 1, -1);
  step.snapshots.insert(step.snapshots.end(), {4, 5, -1});
  return step;
}

TEST(SimtGdnChunked, SmallHeadsMatchTheCpuOp) {
  runStep({2, 4, 32, 16, 32}, mixedStep(), gdc_small::gdc_small_entry, 11);
}

// Qwen3.6's heads.
TEST(SimtGdnChunked, Qwen36HeadsMatchTheCpuOp) {
  runStep({1, 2, 128, 128, 64}, qwenStep(), gdc_qwen::gdc_qwen_entry, 23);
}

// Long prompts carry the state across many chunks: the error must not grow
// with the chunk count, with strong decays and with decays near 1.
TEST(SimtGdnChunked, ErrorsDoNotGrowOverManyChunks) {
  Step step;
  step.counts = {600};
  step.contexts = {600};
  step.slots = {0};
  step.numSlots = 1;
  runStep({2, 4, 32, 16, 32}, step, gdc_small::gdc_small_entry, 5);
  step.longMemory = true;
  runStep({2, 4, 32, 16, 32}, step, gdc_small::gdc_small_entry, 6);
}

// The value dims split over blocks: the last block of each (sequence,
// head) norms the rows the others wrote; the same steps, the same bounds.
TEST(SimtGdnChunked, SplitValueDimsMatchTheCpuOp) {
  Shape small{2, 4, 32, 32, 32, 2, 8};
  small.counters = gdc_small_split::gdc::arrivals;
  small.counterCount = std::size(gdc_small_split::gdc::arrivals);
  runStep(small, mixedStep(), gdc_small_split::gdc_small_split_entry, 13);
  Step qwen = qwenStep();
  qwen.longMemory = true;
  Shape heads{1, 2, 128, 128, 64, 4, 4};
  heads.counters = gdc_qwen_split::gdc::arrivals;
  heads.counterCount = std::size(gdc_qwen_split::gdc::arrivals);
  runStep(heads, qwen, gdc_qwen_split::gdc_qwen_split_entry, 31);
}

TEST(SimtGdnChunked, Qwen36HeadsWithLongMemory) {
  Step step;
  step.counts = {300, 2};
  step.contexts = {300, 50};
  step.slots = {0, 1};
  step.numSlots = 2;
  step.longMemory = true;
  runStep({1, 2, 128, 128, 64}, step, gdc_qwen::gdc_qwen_entry, 29);
}

} // namespace
} // namespace volt::simt
