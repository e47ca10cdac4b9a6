//===- SimtOpsTest.cpp - the non-GEMM templates, run on the host ----------===//
//
// Embedding, norms, QK-norm + RoPE, activations, routing, align, combine
// and gather: planned as voltc plans them, run through the
// SIMT emulator, compared with the cpu backend's op — bit for bit where the
// op is exact (copies, the sort, combine's fixed-order sum, the residual
// add), within the documented tolerance where the kernel sums in another
// order or uses the GPU's exp.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/KernelDefs.h"
#include "tests/unit/codegen/simt/SimtHarness.h"

#include "runtime/cpu/Ops.h"

#include <numeric>
#include <tuple>

using namespace volt;

namespace embedding_ragged {
#define VOLT_DIM 40
#define VOLT_VOCAB_ROWS 50
#define VOLT_THREADS 256
#define embedding embedding_ragged_entry
#include "embedding.cu"
#undef embedding
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace embedding_ragged

namespace rms_norm_f32 {
#define VOLT_DIM 100
#define VOLT_IN_F32 1
#define VOLT_THREADS 256
#define rms_norm rms_norm_f32_entry
#include "rms_norm.cu"
#undef rms_norm
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace rms_norm_f32

namespace add_rms_norm_f16 {
#define VOLT_DIM 300
#define VOLT_IN_F32 0
#define VOLT_RES_F32 0
#define VOLT_THREADS 256
#define add_rms_norm add_rms_norm_f16_entry
#include "add_rms_norm.cu"
#undef add_rms_norm
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace add_rms_norm_f16

namespace add_rms_norm_f32 {
#define VOLT_DIM 300
#define VOLT_IN_F32 0
#define VOLT_RES_F32 1
#define VOLT_THREADS 256
#define add_rms_norm add_rms_norm_f32_entry
#include "add_rms_norm.cu"
#undef add_rms_norm
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace add_rms_norm_f32

namespace rope_norm {
#define VOLT_HEADS 4
#define VOLT_KV_HEADS 2
#define VOLT_HEAD_DIM 64
#define VOLT_ROTARY_DIM 64
#define VOLT_HAS_NORM 1
#define VOLT_THREADS 32
#define qk_norm_rope rope_norm_entry
#include "qk_norm_rope.cu"
#undef qk_norm_rope
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace rope_norm

namespace rope_plain {
#define VOLT_HEADS 2
#define VOLT_KV_HEADS 1
#define VOLT_HEAD_DIM 128
#define VOLT_ROTARY_DIM 128
#define VOLT_HAS_NORM 0
#define VOLT_THREADS 64
#define qk_norm_rope rope_plain_entry
#include "qk_norm_rope.cu"
#undef qk_norm_rope
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace rope_plain

namespace silu_mul_small {
#define VOLT_DIM 70
#define VOLT_THREADS 256
#define silu_mul silu_mul_entry
#include "silu_mul.cu"
#undef silu_mul
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace silu_mul_small

namespace gate_add {
#define VOLT_DIM 48
#define VOLT_GATE_F32 1
#define VOLT_THREADS 256
#define sigmoid_gate_add gate_add_entry
#include "sigmoid_gate_add.cu"
#undef sigmoid_gate_add
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace gate_add

namespace rope_partial {
#define VOLT_HEADS 2
#define VOLT_KV_HEADS 1
#define VOLT_HEAD_DIM 64
#define VOLT_ROTARY_DIM 16
#define VOLT_HAS_NORM 1
#define VOLT_THREADS 32
#define qk_norm_rope rope_partial_entry
#include "qk_norm_rope.cu"
#undef qk_norm_rope
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace rope_partial

namespace conv {
#define VOLT_DIM 300
#define VOLT_KERNEL 4
#define VOLT_THREADS 256
#define causal_conv1d conv_entry
#include "causal_conv1d.cu"
#undef causal_conv1d
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace conv

namespace gdr {
#define VOLT_KEY_HEADS 2
#define VOLT_VALUE_HEADS 4
#define VOLT_KEY_DIM 64
#define VOLT_VALUE_DIM 12
#define VOLT_KEY_BLOCK 32
#define VOLT_THREADS 24
#define gated_delta_rule gdr_entry
#include "gated_delta_rule.cu"
#undef gated_delta_rule
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace gdr

namespace sigmoid_mul_small {
#define VOLT_DIM 70
#define VOLT_THREADS 256
#define sigmoid_mul sigmoid_mul_entry
#include "sigmoid_mul.cu"
#undef sigmoid_mul
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace sigmoid_mul_small

namespace ema {
#define VOLT_DIM 300
#define VOLT_THREADS 256
#define ema_scan ema_entry
#include "ema_scan.cu"
#undef ema_scan
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace ema

namespace gather_f32 {
#define VOLT_DIM 24
#define VOLT_ELEMENT_BYTES 4
#define VOLT_THREADS 256
#define gather_rows gather_f32_entry
#include "gather_rows.cu"
#undef gather_rows
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace gather_f32

namespace gather_hidden_odd {
#define VOLT_DIM 70
#define VOLT_THREADS 256
#define gather_hidden gather_hidden_entry
#include "gather_hidden.cu"
#undef gather_hidden
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace gather_hidden_odd

namespace concat_wide {
#define VOLT_A_DIM 64
#define VOLT_B_DIM 72
#define VOLT_THREADS 256
#define concat concat_wide_entry
#include "concat.cu"
#undef concat
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace concat_wide

namespace concat_odd {
#define VOLT_A_DIM 6
#define VOLT_B_DIM 5
#define VOLT_THREADS 256
#define concat concat_odd_entry
#include "concat.cu"
#undef concat
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace concat_odd

namespace router {
#define VOLT_EXPERTS 60
#define VOLT_TOP_K 4
#define VOLT_RENORMALIZE 1
#define VOLT_THREADS 128
#define moe_router router_entry
#include "moe_router.cu"
#undef moe_router
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace router

namespace align {
#define VOLT_EXPERTS 60
#define VOLT_TOP_K 4
#define VOLT_THREADS 1024
#define moe_align align_entry
#include "moe_align.cu"
#undef moe_align
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace align

namespace combine {
#define VOLT_DIM 96
#define VOLT_TOP_K 4
#define VOLT_TOKENS 8
#define VOLT_ACCUMULATE 1
#define VOLT_THREADS 256
#define moe_combine combine_entry
#include "moe_combine.cu"
#undef moe_combine
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace combine

namespace volt::simt {
namespace {

using codegen::OpInfo;
using codegen::ProgramInfo;
using codegen::Variant;

OperandInfo operand(OperandKind kind, uint32_t index, bool f32 = false, bool perRow = false) {
  OperandInfo o;
  o.kind = kind;
  o.index = index;
  o.f32 = f32;
  o.perRow = perRow;
  return o;
}

const Variant kAny{int64_t{1} << 30, "", {{"threads", 256}}};

/// Plans `op` with the one kernel of the registry that implements its
/// kind, checks the instance, returns the launch.
PlannedLaunch plan(const OpInfo &op, const std::vector<std::pair<std::string, int64_t>> &constants,
                   uint32_t threads, const ProgramInfo &program = {}) {
  KernelRegistry registry;
  Variant v = kAny;
  // The kind's kernel; GatedDeltaRule's token-by-token one (the chunked
  // form has its own test, SimtGdnChunkedTest.cpp).
  for (const codegen::KernelDef &k : codegen::allKernels())
    if (k.op == op.kind && k.name != "gated_delta_rule_chunked") {
      EXPECT_TRUE(v.kernel.empty()) << "two kernels implement " << plan::EnumNameOpKind(op.kind);
      v.kernel = std::string(k.name);
    }
  auto l = codegen::planLaunches(op, {v}, program, codegen::TargetInfo{}, registry);
  EXPECT_TRUE(l.ok()) << l.message();
  if (!l.ok() || l->empty())
    return {};
  expectInstance(registry.requests()[(*l)[0].kernel], constants, threads);
  return (*l)[0];
}

/// An op of `kind` over `operands` with params `fill` sets.
template <typename Params, typename Fill>
OpInfo makeOp(plan::OpKind kind, std::vector<OperandInfo> operands, Fill &&fill) {
  OpInfo op;
  op.kind = kind;
  op.name = plan::EnumNameOpKind(kind);
  op.operands = std::move(operands);
  Params params;
  fill(params);
  op.params.Set(std::move(params));
  return op;
}

std::mt19937 rng(2024);

// The byte permute the GEMV and GEMM regroup activations with: the
// emulation follows the PTX ISA's prmt (default mode), and the regroupers'
// selectors give the shift-and-mask forms they replace.
TEST(SimtOps, BytePermuteRegroupsHalves) {
  const u32 a = 0x8A7B6C5Du, b = 0x11F22384u;
  EXPECT_EQ(bytePermute<0x3210>(a, b), a);
  EXPECT_EQ(bytePermute<0x7654>(a, b), b);
  EXPECT_EQ(bytePermute<0x0123>(a, b), 0x5D6C7B8Au);
  EXPECT_EQ(bytePermute<0x4567>(a, b), 0x8423F211u);
  // Bit 3 of a selector nibble replicates the chosen byte's sign bit.
  EXPECT_EQ(bytePermute<0x8B8B>(a, b), 0x00FF00FFu);
  std::mt19937 rng(7);
  for (int i = 0; i < 1000; ++i) {
    const u32 x = static_cast<u32>(rng()), y = static_cast<u32>(rng());
    EXPECT_EQ(lowHalves(x, y), (x & 0xFFFFu) | (y << 16));
    EXPECT_EQ(highHalves(x, y), (x >> 16) | (y & 0xFFFF0000u));
  }
}

TEST(SimtOps, EmbeddingCopiesThisRanksRowsAndZeroesTheRest) {
  // Rank 1 of a vocab-parallel table of 50 rows per rank: rows 50..99.
  OpInfo op = makeOp<plan::EmbeddingParamsT>(plan::OpKind::Embedding,
                                             {operand(OperandKind::Input, 0),
                                              operand(OperandKind::Weight, 0),
                                              operand(OperandKind::Arena, 0)},
                                             [](auto &p) {
                                               p.dim = 40;
                                               p.vocab_rows = 50;
                                               p.vocab_parallel = true;
                                             });
  ProgramInfo rank1;
  rank1.rank = 1;
  PlannedLaunch l = plan(op, {{"dim", 40}, {"vocab_rows", 50}}, 256, rank1);
  std::vector<int32_t> tokens = {0, 49, 50, 51, 74, 99, 100, 130, 50};
  std::vector<uint16_t> table = randomHalves(rng, 50 * 40);
  std::vector<uint16_t> gpu(tokens.size() * 40, 0x7E00), cpuOut(gpu.size());
  cpu::ThreadPool pool(1);
  cpu::embedding({static_cast<int64_t>(tokens.size()), 40, 50, 50}, tokens.data(), table.data(),
                 cpuOut.data(), pool);
  Memory m;
  m.tokens = static_cast<int>(tokens.size());
  m.bind(op.operands[0], tokens.data());
  m.bind(op.operands[1], table.data());
  m.bind(op.operands[2], gpu.data());
  run(l, m, [](Args &a) {
    std::apply(embedding_ragged::embedding_ragged_entry,
               std::tuple{a.pointer<const int>(), a.pointer<const u16>(), a.pointer<u16>(), a.i32(),
                          a.i32()});
  });
  EXPECT_EQ(gpu, cpuOut);
}

TEST(SimtOps, RmsNormOfAnF32Stream) {
  OpInfo op = makeOp<plan::RmsNormParamsT>(plan::OpKind::RmsNorm,
                                           {operand(OperandKind::Arena, 0, true),
                                            operand(OperandKind::Weight, 0),
                                            operand(OperandKind::Arena, 1)},
                                           [&](auto &p) {
                                             p.dim = 100;
                                             p.eps = 1e-5f;
                                           });
  PlannedLaunch l = plan(op, {{"dim", 100}, {"in_f32", 1}}, 256);
  const int rows = 7;
  std::vector<float> x(rows * 100);
  std::normal_distribution<float> d(0, 3);
  for (float &v : x)
    v = d(rng);
  std::vector<uint16_t> w = randomHalves(rng, 100), gpu(rows * 100), cpuOut(rows * 100);
  cpu::ThreadPool pool(1);
  cpu::rmsNorm({rows, 100, 1e-5f, cpu::DType::F32}, x.data(), w.data(), cpuOut.data(), pool);
  Memory m;
  m.tokens = rows;
  m.bind(op.operands[0], x.data());
  m.bind(op.operands[1], w.data());
  m.bind(op.operands[2], gpu.data());
  run(l, m, [](Args &a) {
    std::apply(rms_norm_f32::rms_norm_f32_entry,
               std::tuple{a.pointer<const void>(), a.pointer<const u16>(), a.pointer<u16>(),
                          a.i32(), a.f32()});
  });
  for (size_t i = 0; i < gpu.size(); ++i)
    EXPECT_TRUE(halfClose(gpu[i], cpuOut[i],
                          110 * std::ldexp(1.0, -24) * std::fabs(halfToFloat(cpuOut[i]))))
        << i << ": " << halfToFloat(gpu[i]) << " vs " << halfToFloat(cpuOut[i]);
}

template <typename Residual>
void checkAddRmsNorm(bool f32,
                     void (*entry)(const void *, void *, const u16 *, u16 *, int, float)) {
  OpInfo op = makeOp<plan::AddRmsNormParamsT>(
      plan::OpKind::AddRmsNorm,
      {operand(OperandKind::Arena, 0), operand(OperandKind::Arena, 1, f32),
       operand(OperandKind::Weight, 0), operand(OperandKind::Arena, 2)},
      [&](auto &p) { p.dim = 300; });
  PlannedLaunch l = plan(op, {{"dim", 300}, {"in_f32", 0}, {"res_f32", f32}}, 256);
  const int rows = 5;
  std::vector<uint16_t> in = randomHalves(rng, rows * 300), w = randomHalves(rng, 300);
  std::vector<Residual> residual(rows * 300);
  std::normal_distribution<float> d(0, 2);
  for (Residual &r : residual)
    r = f32 ? static_cast<Residual>(d(rng)) : static_cast<Residual>(floatToHalf(d(rng)));
  std::vector<Residual> cpuResidual = residual;
  std::vector<uint16_t> gpu(rows * 300), cpuOut(rows * 300);
  cpu::ThreadPool pool(1);
  cpu::addRmsNorm({rows, 300, 1e-6f, cpu::DType::F16, f32 ? cpu::DType::F32 : cpu::DType::F16},
                  in.data(), cpuResidual.data(), w.data(), cpuOut.data(), pool);
  Memory m;
  m.tokens = rows;
  m.bind(op.operands[0], in.data());
  m.bind(op.operands[1], residual.data());
  m.bind(op.operands[2], w.data());
  m.bind(op.operands[3], gpu.data());
  run(l, m, [&](Args &a) {
    std::apply(entry, std::tuple{a.pointer<const void>(), a.pointer<void>(), a.pointer<const u16>(),
                                 a.pointer<u16>(), a.i32(), a.f32()});
  });
  EXPECT_EQ(residual, cpuResidual) << "the residual add is one rounding on both sides";
  for (size_t i = 0; i < gpu.size(); ++i)
    EXPECT_TRUE(halfClose(gpu[i], cpuOut[i],
                          310 * std::ldexp(1.0, -24) * std::fabs(halfToFloat(cpuOut[i]))))
        << i;
}

TEST(SimtOps, AddRmsNormF16AndF32Residuals) {
  checkAddRmsNorm<uint16_t>(false, add_rms_norm_f16::add_rms_norm_f16_entry);
  checkAddRmsNorm<float>(true, add_rms_norm_f32::add_rms_norm_f32_entry);
}

template <typename Entry>
void checkRope(int64_t heads, int64_t kvHeads, int64_t dim, bool norm, uint32_t threads,
               Entry &&call, int64_t rotary = 0) {
  std::vector<OperandInfo> operands = {operand(OperandKind::Arena, 0),
                                       operand(OperandKind::Input, 1)};
  if (norm) {
    operands.push_back(operand(OperandKind::Weight, 0));
    operands.push_back(operand(OperandKind::Weight, 1));
  }
  OpInfo op = makeOp<plan::QkNormRopeParamsT>(plan::OpKind::QkNormRope, operands, [&](auto &p) {
    p.num_heads = heads;
    p.num_kv_heads = kvHeads;
    p.head_dim = dim;
    p.rope_theta = 1e6f;
    p.rotary_dim = static_cast<uint32_t>(rotary);
  });
  PlannedLaunch l = plan(op,
                         {{"heads", heads},
                          {"kv_heads", kvHeads},
                          {"head_dim", dim},
                          {"rotary_dim", rotary ? rotary : dim},
                          {"has_norm", norm}},
                         threads);
  std::vector<int32_t> positions = {0, 1, 17, 4095, 32767, 131071};
  const int tokens = static_cast<int>(positions.size());
  const int64_t row = (heads + 2 * kvHeads) * dim;
  std::vector<uint16_t> qkv = randomHalves(rng, static_cast<size_t>(tokens * row));
  std::vector<uint16_t> qn = randomHalves(rng, static_cast<size_t>(dim)),
                        kn = randomHalves(rng, static_cast<size_t>(dim));
  std::vector<uint16_t> cpuQkv = qkv;
  cpu::ThreadPool pool(1);
  cpu::qkNormRope({tokens, heads, kvHeads, dim, 1e6f, 1e-6f, rotary}, cpuQkv.data(),
                  positions.data(),
                  norm ? qn.data() : nullptr, norm ? kn.data() : nullptr, pool);
  Memory m;
  m.tokens = tokens;
  m.bind(op.operands[0], qkv.data());
  m.bind(op.operands[1], positions.data());
  if (norm) {
    m.bind(op.operands[2], qn.data());
    m.bind(op.operands[3], kn.data());
  }
  run(l, m, call);
  int differ = 0;
  for (size_t i = 0; i < qkv.size(); ++i) {
    differ += qkv[i] != cpuQkv[i];
    // Norm: a sum of squares in another order; RoPE: the same angles.
    EXPECT_TRUE(halfClose(qkv[i], cpuQkv[i], (dim + 8) * std::ldexp(1.0, -24) * 8))
        << i << ": " << halfToFloat(qkv[i]) << " vs " << halfToFloat(cpuQkv[i]);
  }
  if (!norm) {
    EXPECT_EQ(differ, 0) << "without the norm every rounding is the cpu backend's";
  }
}

TEST(SimtOps, QkNormRopeWithAndWithoutNorms) {
  checkRope(4, 2, 64, true, 32, [](Args &a) {
    std::apply(rope_norm::rope_norm_entry,
               std::tuple{a.pointer<u16>(), a.pointer<const int>(), a.pointer<const u16>(),
                          a.pointer<const u16>(), a.i32(), a.f32(), a.f32()});
  });
  checkRope(2, 1, 128, false, 64, [](Args &a) {
    std::apply(rope_plain::rope_plain_entry,
               std::tuple{a.pointer<u16>(), a.pointer<const int>(), a.i32(), a.f32(), a.f32()});
  });
}

// Partial RoPE (Qwen3-Next, Qwen3.5): the first 16 of 64 dims rotate with
// the angles of a 16-dim head, the rest are normalised and passed through.
TEST(SimtOps, QkNormRopeRotatesOnlyTheRotaryDims) {
  checkRope(
      2, 1, 64, true, 32,
      [](Args &a) {
        std::apply(rope_partial::rope_partial_entry,
                   std::tuple{a.pointer<u16>(), a.pointer<const int>(), a.pointer<const u16>(),
                              a.pointer<const u16>(), a.i32(), a.f32(), a.f32()});
      },
      16);
}

// Four sequences: one starting at position 0 with more tokens than the
// window, one continuing from its slot with fewer, one continuing without a
// slot (from zeros, keeping nothing), one restarting in its slot; 300
// channels over two blocks; copies of the window after three tokens (a
// verify step's snapshots). Bit for bit (the same sums, in order, and exp).
TEST(SimtOps, CausalConv1dKeepsEachSequencesWindow) {
  const int dim = 300, kernel = 4, kept = kernel - 1, slots = 7;
  OpInfo op = makeOp<plan::CausalConv1dParamsT>(
      plan::OpKind::CausalConv1d,
      {operand(OperandKind::Arena, 0), operand(OperandKind::Weight, 0),
       operand(OperandKind::Cache, 0), operand(OperandKind::Input, 3),
       operand(OperandKind::Input, 4), operand(OperandKind::Input, 7),
       operand(OperandKind::Input, 8), operand(OperandKind::Arena, 1)},
      [](auto &p) {
        p.dim = 300;
        p.kernel = 4;
        p.layer = 0;
      });
  PlannedLaunch l = plan(op, {{"dim", dim}, {"kernel", kernel}}, 256);
  std::vector<int32_t> starts = {0, 6, 8, 9, 12}, contexts = {6, 40, 9, 3},
                       stateSlots = {1, 3, -1, 0},
                       snapshots = {-1, 4, -1, -1, -1, -1, 5, -1, -1, -1, 6, -1};
  const int tokens = starts.back(), seqs = 4;
  std::vector<uint16_t> in = randomHalves(rng, tokens * dim, 2.0f),
                        weight = randomHalves(rng, dim * kernel, 0.5f),
                        state = randomHalves(rng, slots * kept * dim, 2.0f);
  const std::vector<uint16_t> before = state;
  std::vector<uint16_t> cpuState = state, gpu(in.size(), 0x7E00), cpuOut(in.size());
  cpu::ThreadPool pool(1);
  cpu::causalConv1d({tokens, seqs, dim, kernel}, in.data(), weight.data(), cpuState.data(),
                    starts.data(), contexts.data(), stateSlots.data(), snapshots.data(),
                    cpuOut.data(), pool);
  Memory m;
  m.tokens = tokens;
  m.seqs = seqs;
  for (size_t i = 0; i < 8; ++i)
    m.bind(op.operands[i], std::vector<void *>{in.data(), weight.data(), state.data(),
                                               starts.data(), contexts.data(), stateSlots.data(),
                                               snapshots.data(), gpu.data()}[i]);
  run(l, m, [](Args &a) {
    std::apply(conv::conv_entry,
               std::tuple{a.pointer<const u16>(), a.pointer<const u16>(), a.pointer<u16>(),
                          a.pointer<const int>(), a.pointer<const int>(), a.pointer<const int>(),
                          a.pointer<const int>(), a.pointer<u16>(), a.i32()});
  });
  EXPECT_EQ(gpu, cpuOut);
  EXPECT_EQ(state, cpuState);
  // The copy after token 6 (sequence 1's first, at position 38) holds the
  // last two inputs of its slot's window and that token's.
  for (int c = 0; c < dim; c += 37) {
    EXPECT_EQ(state[(5 * kept + 0) * dim + c], before[(3 * kept + 1) * dim + c]);
    EXPECT_EQ(state[(5 * kept + 1) * dim + c], before[(3 * kept + 2) * dim + c]);
    EXPECT_EQ(state[(5 * kept + 2) * dim + c], in[6 * dim + c]);
  }
}

// The gated delta rule: three sequences (fresh, continuing from its slot
// over several tokens, without a slot), value heads sharing key heads, dk
// != dv, a state column split over two threads (two key blocks of 32). Bit
// for bit: the kernel sums in the cpu op's order.
TEST(SimtOps, GatedDeltaRuleMatchesTheCpuOp) {
  const int hk = 2, hv = 4, dk = 64, dv = 12, slots = 5;
  const int width = 2 * hk * dk + hv * dv;
  OpInfo op = makeOp<plan::GatedDeltaRuleParamsT>(
      plan::OpKind::GatedDeltaRule,
      {operand(OperandKind::Arena, 0), operand(OperandKind::Arena, 1),
       operand(OperandKind::Arena, 2), operand(OperandKind::Weight, 0),
       operand(OperandKind::Weight, 1), operand(OperandKind::Weight, 2),
       operand(OperandKind::Cache, 0), operand(OperandKind::Input, 3),
       operand(OperandKind::Input, 4), operand(OperandKind::Input, 7),
       operand(OperandKind::Input, 8), operand(OperandKind::Arena, 3)},
      [](auto &p) {
        p.key_heads = 2;
        p.value_heads = 4;
        p.key_dim = 64;
        p.value_dim = 12;
        p.eps = 1e-6f;
      });
  PlannedLaunch l = plan(op,
                         {{"key_heads", hk}, {"value_heads", hv}, {"key_dim", dk},
                          {"value_dim", dv}, {"key_block", 32}},
                         2 * dv);
  std::vector<int32_t> starts = {0, 3, 8, 10}, contexts = {3, 20, 7}, stateSlots = {2, 0, -1},
                       snapshots = {-1, -1, -1, 1, -1, 4, -1, -1, -1, -1};
  const int tokens = starts.back(), seqs = 3;
  std::vector<uint16_t> qkv = randomHalves(rng, tokens * width, 1.0f),
                        gates = randomHalves(rng, tokens * 2 * hv, 1.5f),
                        z = randomHalves(rng, tokens * hv * dv, 1.0f),
                        norm = randomHalves(rng, dv, 0.3f);
  std::uniform_real_distribution<float> u(-2.0f, 1.0f);
  std::vector<float> aLog(hv), dtBias(hv), state(slots * hv * dk * dv);
  for (int h = 0; h < hv; ++h) {
    aLog[h] = u(rng);
    dtBias[h] = u(rng);
  }
  for (float &v : state)
    v = u(rng) * 0.3f;
  std::vector<float> cpuState = state;
  std::vector<uint16_t> gpu(tokens * hv * dv, 0x7E00), cpuOut(gpu.size());
  cpu::ThreadPool pool(1);
  cpu::gatedDeltaRule({tokens, seqs, hk, hv, dk, dv, 1e-6f}, qkv.data(), gates.data(), z.data(),
                      aLog.data(), dtBias.data(), norm.data(), cpuState.data(), starts.data(),
                      contexts.data(), stateSlots.data(), snapshots.data(), cpuOut.data(), pool);
  Memory m;
  m.tokens = tokens;
  m.seqs = seqs;
  std::vector<void *> bound = {qkv.data(),      gates.data(),      z.data(),
                               aLog.data(),     dtBias.data(),     norm.data(),
                               state.data(),    starts.data(),     contexts.data(),
                               stateSlots.data(), snapshots.data(), gpu.data()};
  for (size_t i = 0; i < bound.size(); ++i)
    m.bind(op.operands[i], bound[i]);
  run(l, m, [](Args &a) {
    std::apply(gdr::gdr_entry,
               std::tuple{a.pointer<const u16>(), a.pointer<const u16>(), a.pointer<const u16>(),
                          a.pointer<const float>(), a.pointer<const float>(),
                          a.pointer<const u16>(), a.pointer<float>(), a.pointer<const int>(),
                          a.pointer<const int>(), a.pointer<const int>(), a.pointer<const int>(),
                          a.pointer<u16>(), a.i32(), a.f32()});
  });
  EXPECT_EQ(gpu, cpuOut);
  EXPECT_EQ(state, cpuState); // the copies in slots 1 and 4 included
}

TEST(SimtOps, SigmoidMul) {
  OpInfo op = makeOp<plan::SigmoidMulParamsT>(
      plan::OpKind::SigmoidMul,
      {operand(OperandKind::Arena, 0), operand(OperandKind::Arena, 1),
       operand(OperandKind::Arena, 2)},
      [](auto &p) { p.dim = 70; });
  PlannedLaunch l = plan(op, {{"dim", 70}}, 256);
  std::vector<uint16_t> x = randomHalves(rng, 3 * 70, 2.0f), g = randomHalves(rng, 3 * 70, 3.0f),
                        gpu(3 * 70), cpuOut(3 * 70);
  cpu::ThreadPool pool(1);
  cpu::sigmoidMul({3, 70}, x.data(), g.data(), cpuOut.data(), pool);
  Memory m;
  m.tokens = 3;
  m.bind(op.operands[0], x.data());
  m.bind(op.operands[1], g.data());
  m.bind(op.operands[2], gpu.data());
  run(l, m, [](Args &a) {
    std::apply(sigmoid_mul_small::sigmoid_mul_entry,
               std::tuple{a.pointer<const u16>(), a.pointer<const u16>(), a.pointer<u16>(),
                          a.i32()});
  });
  EXPECT_EQ(gpu, cpuOut);
}

// Three sequences: one starting at position 0, one continuing from its
// slot, one continuing without a slot (padding: starts from zeros, keeps
// nothing); 300 channels over two blocks of 256 threads. Bit for bit: the
// kernel rounds as the cpu op does.
TEST(SimtOps, EmaScanKeepsEachSequencesState) {
  OpInfo op =
      makeOp<plan::EmaScanParamsT>(plan::OpKind::EmaScan,
                                   {operand(OperandKind::Arena, 0), operand(OperandKind::Weight, 0),
                                    operand(OperandKind::Cache, 0), operand(OperandKind::Input, 3),
                                    operand(OperandKind::Input, 4), operand(OperandKind::Input, 7),
                                    operand(OperandKind::Input, 8), operand(OperandKind::Arena, 1)},
                                   [](auto &p) {
                                     p.dim = 300;
                                     p.layer = 2;
                                   });
  PlannedLaunch l = plan(op, {{"dim", 300}}, 256);
  const int tokens = 9, seqs = 3, slots = 4;
  std::vector<uint16_t> in = randomHalves(rng, tokens * 300, 2.0f), decay(300);
  std::uniform_real_distribution<float> a(0.05f, 0.95f);
  for (uint16_t &d : decay)
    d = floatToHalf(a(rng));
  std::vector<int32_t> starts = {0, 4, 5, 9}, contexts = {4, 8, 30}, stateSlots = {2, 0, -1},
                       snapshots = {-1, 3, -1, -1, -1, -1, -1, -1, -1};
  std::vector<float> state(slots * 300);
  for (float &v : state)
    v = a(rng) - 0.5f;
  std::vector<float> cpuState = state;
  std::vector<uint16_t> gpu(in.size(), 0x7E00), cpuOut(in.size());
  cpu::ThreadPool pool(1);
  cpu::emaScan({tokens, seqs, 300}, in.data(), decay.data(), cpuState.data(), starts.data(),
               contexts.data(), stateSlots.data(), snapshots.data(), cpuOut.data(), pool);
  Memory m;
  m.tokens = tokens;
  m.seqs = seqs;
  m.bind(op.operands[0], in.data());
  m.bind(op.operands[1], decay.data());
  m.bind(op.operands[2], state.data());
  m.bind(op.operands[3], starts.data());
  m.bind(op.operands[4], contexts.data());
  m.bind(op.operands[5], stateSlots.data());
  m.bind(op.operands[6], snapshots.data());
  m.bind(op.operands[7], gpu.data());
  run(l, m, [](Args &a) {
    std::apply(ema::ema_entry,
               std::tuple{a.pointer<const u16>(), a.pointer<const u16>(), a.pointer<float>(),
                          a.pointer<const int>(), a.pointer<const int>(), a.pointer<const int>(),
                          a.pointer<const int>(), a.pointer<u16>(), a.i32()});
  });
  EXPECT_EQ(gpu, cpuOut);
  EXPECT_EQ(state, cpuState);
  // What the slots hold: slot 2 restarted, slot 0 continued, slot 3 the
  // copy after token 1 (its out is that state, rounded), slot 1 untouched.
  for (int i = 0; i < 300; ++i)
    EXPECT_EQ(floatToHalf(state[3 * 300 + i]), cpuOut[300 + i]);
  for (int s : {1})
    for (int i = 0; i < 300; ++i)
      EXPECT_EQ(state[s * 300 + i], cpuState[s * 300 + i]);
}

TEST(SimtOps, SiluMulAndSigmoidGateAdd) {
  {
    OpInfo op = makeOp<plan::SiluMulParamsT>(
        plan::OpKind::SiluMul, {operand(OperandKind::Arena, 0), operand(OperandKind::Arena, 1)},
        [&](auto &p) { p.dim = 70; });
    PlannedLaunch l = plan(op, {{"dim", 70}}, 256);
    std::vector<uint16_t> in = randomHalves(rng, 3 * 140, 3.0f), gpu(3 * 70), cpuOut(3 * 70);
    cpu::ThreadPool pool(1);
    cpu::siluMul({3, 70}, in.data(), cpuOut.data(), pool);
    Memory m;
    m.tokens = 3;
    m.bind(op.operands[0], in.data());
    m.bind(op.operands[1], gpu.data());
    run(l, m, [](Args &a) {
      std::apply(silu_mul_small::silu_mul_entry,
                 std::tuple{a.pointer<const u16>(), a.pointer<u16>(), a.i32()});
    });
    for (size_t i = 0; i < gpu.size(); ++i)
      EXPECT_TRUE(halfClose(gpu[i], cpuOut[i],
                            8 * std::ldexp(1.0, -24) * std::fabs(halfToFloat(cpuOut[i]))));
  }
  {
    OpInfo op = makeOp<plan::SigmoidGateAddParamsT>(plan::OpKind::SigmoidGateAdd,
                                                    {operand(OperandKind::Arena, 0),
                                                     operand(OperandKind::Arena, 1),
                                                     operand(OperandKind::Arena, 2, true)},
                                                    [&](auto &p) { p.dim = 48; });
    PlannedLaunch l = plan(op, {{"dim", 48}, {"gate_f32", 1}}, 256);
    std::vector<uint16_t> out = randomHalves(rng, 4 * 48), value = randomHalves(rng, 4 * 48);
    std::vector<float> gate = {-3.0f, 0.0f, 0.5f, 9.0f};
    std::vector<uint16_t> cpuOut = out;
    cpu::ThreadPool pool(1);
    cpu::sigmoidGateAdd({4, 48, cpu::DType::F32}, cpuOut.data(), value.data(), gate.data(), pool);
    Memory m;
    m.tokens = 4;
    m.bind(op.operands[0], out.data());
    m.bind(op.operands[1], value.data());
    m.bind(op.operands[2], gate.data());
    run(l, m, [](Args &a) {
      std::apply(gate_add::gate_add_entry, std::tuple{a.pointer<u16>(), a.pointer<const u16>(),
                                                      a.pointer<const void>(), a.i32()});
    });
    for (size_t i = 0; i < out.size(); ++i)
      EXPECT_TRUE(halfClose(out[i], cpuOut[i], 8 * std::ldexp(1.0, -24) * 4));
  }
}

TEST(SimtOps, GatherRowsOfAnF32PerSequenceBuffer) {
  OpInfo op = makeOp<plan::GatherRowsParamsT>(plan::OpKind::GatherRows,
                                              {operand(OperandKind::Arena, 0, true),
                                               operand(OperandKind::Input, 6),
                                               operand(OperandKind::Arena, 1, true, true)},
                                              [&](auto &p) { p.dim = 24; });
  PlannedLaunch l = plan(op, {{"dim", 24}, {"element_bytes", 4}}, 256);
  std::vector<float> in(10 * 24);
  std::iota(in.begin(), in.end(), 0.5f);
  std::vector<int32_t> rows = {9, 0, 4};
  std::vector<float> gpu(3 * 24, -1), cpuOut(3 * 24);
  cpu::ThreadPool pool(1);
  cpu::gatherRows({3, 24, cpu::DType::F32}, in.data(), rows.data(), cpuOut.data(), pool);
  Memory m;
  m.tokens = 10;
  m.seqs = 3;
  m.bind(op.operands[0], in.data());
  m.bind(op.operands[1], rows.data());
  m.bind(op.operands[2], gpu.data());
  run(l, m, [](Args &a) {
    std::apply(gather_f32::gather_f32_entry,
               std::tuple{a.pointer<const u8>(), a.pointer<const int>(), a.pointer<u8>(), a.i32()});
  });
  EXPECT_EQ(gpu, cpuOut);
}

// A draft step's first op: each token's row of the hidden rows the last
// step left, copied exactly (here with rows of 140 bytes: the byte loop).
TEST(SimtOps, GatherHiddenMatchesCpu) {
  OpInfo op = makeOp<plan::GatherHiddenParamsT>(plan::OpKind::GatherHidden,
                                                {operand(OperandKind::Output, 1),
                                                 operand(OperandKind::Input, 9),
                                                 operand(OperandKind::Arena, 0)},
                                                [&](auto &p) { p.dim = 70; });
  PlannedLaunch l = plan(op, {{"dim", 70}}, 256);
  std::vector<uint16_t> hidden(12 * 70);
  std::iota(hidden.begin(), hidden.end(), uint16_t(3));
  std::vector<int32_t> rows = {11, 0, 5, 5, 2};
  std::vector<uint16_t> gpu(5 * 70, 0xffff), cpuOut(5 * 70);
  cpu::ThreadPool pool(1);
  cpu::gatherRows({5, 70, cpu::DType::F16}, hidden.data(), rows.data(), cpuOut.data(), pool);
  Memory m;
  m.tokens = 5;
  m.seqs = 2;
  m.bind(op.operands[0], hidden.data());
  m.bind(op.operands[1], rows.data());
  m.bind(op.operands[2], gpu.data());
  run(l, m, [](Args &a) {
    std::apply(gather_hidden_odd::gather_hidden_entry,
               std::tuple{a.pointer<const u8>(), a.pointer<const int>(), a.pointer<u8>(), a.i32()});
  });
  EXPECT_EQ(gpu, cpuOut);
}

// The MTP head's [embedding | hidden] rows, with 16-byte copies (64 | 72)
// and with the byte loop (6 | 5).
TEST(SimtOps, ConcatMatchesCpu) {
  auto check = [&](int64_t aDim, int64_t bDim, auto entry) {
    SCOPED_TRACE(std::to_string(aDim) + " | " + std::to_string(bDim));
    OpInfo op = makeOp<plan::ConcatParamsT>(
        plan::OpKind::Concat,
        {operand(OperandKind::Arena, 0), operand(OperandKind::Arena, 1),
         operand(OperandKind::Arena, 2)},
        [&](auto &p) {
          p.a_dim = uint32_t(aDim);
          p.b_dim = uint32_t(bDim);
        });
    PlannedLaunch l = plan(op, {{"a_dim", aDim}, {"b_dim", bDim}}, 256);
    const int64_t t = 7;
    std::vector<uint16_t> a(size_t(t * aDim)), b(size_t(t * bDim));
    std::iota(a.begin(), a.end(), uint16_t(1));
    std::iota(b.begin(), b.end(), uint16_t(5000));
    std::vector<uint16_t> gpu(size_t(t * (aDim + bDim)), 0xffff), cpuOut(gpu.size());
    cpu::ThreadPool pool(1);
    cpu::concatRows({t, aDim, bDim, cpu::DType::F16}, a.data(), b.data(), cpuOut.data(), pool);
    Memory m;
    m.tokens = int(t);
    m.seqs = 3;
    m.bind(op.operands[0], a.data());
    m.bind(op.operands[1], b.data());
    m.bind(op.operands[2], gpu.data());
    run(l, m, [&](Args &args) {
      std::apply(entry, std::tuple{args.pointer<const u8>(), args.pointer<const u8>(),
                                   args.pointer<u8>(), args.i32()});
    });
    EXPECT_EQ(gpu, cpuOut);
  };
  check(64, 72, concat_wide::concat_wide_entry);
  check(6, 5, concat_odd::concat_odd_entry);
}

TEST(SimtOps, RouterAlignCombine) {
  const int tokens = 300;
  const int64_t experts = 60, k = 4;
  std::vector<float> logits(static_cast<size_t>(tokens * experts));
  std::normal_distribution<float> d(0, 2);
  for (float &v : logits)
    v = d(rng);
  // Router.
  OpInfo routerOp = makeOp<plan::MoeRouterParamsT>(plan::OpKind::MoeRouter,
                                                   {operand(OperandKind::Arena, 0, true),
                                                    operand(OperandKind::Arena, 1),
                                                    operand(OperandKind::Arena, 2, true)},
                                                   [&](auto &p) {
                                                     p.num_experts = experts;
                                                     p.top_k = k;
                                                     p.renormalize = true;
                                                   });
  PlannedLaunch lr = plan(routerOp, {{"experts", 60}, {"top_k", 4}, {"renormalize", 1}}, 128);
  std::vector<int32_t> ids(static_cast<size_t>(tokens * k), -1), cpuIds(ids.size());
  std::vector<float> weights(ids.size(), -1), cpuWeights(ids.size());
  cpu::ThreadPool pool(1);
  cpu::moeRouter({tokens, experts, k, true}, logits.data(), cpuIds.data(), cpuWeights.data(), pool);
  Memory m;
  m.tokens = tokens;
  m.bind(routerOp.operands[0], logits.data());
  m.bind(routerOp.operands[1], ids.data());
  m.bind(routerOp.operands[2], weights.data());
  run(lr, m, [](Args &a) {
    std::apply(router::router_entry,
               std::tuple{a.pointer<const float>(), a.pointer<int>(), a.pointer<float>(), a.i32()});
  });
  EXPECT_EQ(ids, cpuIds);
  for (size_t i = 0; i < weights.size(); ++i)
    EXPECT_NEAR(weights[i], cpuWeights[i], 1e-6f * std::fabs(cpuWeights[i]) + 1e-9f) << i;

  // Align (a stable counting sort: exact).
  OpInfo alignOp =
      makeOp<plan::MoeAlignParamsT>(plan::OpKind::MoeAlign,
                                    {operand(OperandKind::Arena, 1), operand(OperandKind::Arena, 3),
                                     operand(OperandKind::Arena, 4)},
                                    [&](auto &p) {
                                      p.num_experts = experts;
                                      p.top_k = k;
                                    });
  PlannedLaunch la = plan(alignOp, {{"experts", 60}, {"top_k", 4}}, 1024);
  std::vector<int32_t> order(ids.size(), -1), cpuOrder(ids.size());
  std::vector<int32_t> starts(static_cast<size_t>(experts + 1), -1), cpuStarts(starts.size());
  cpu::moeAlign({tokens, k, experts}, cpuIds.data(), cpuOrder.data(), cpuStarts.data());
  m.bind(alignOp.operands[1], order.data());
  m.bind(alignOp.operands[2], starts.data());
  run(la, m, [](Args &a) {
    std::apply(align::align_entry,
               std::tuple{a.pointer<const int>(), a.pointer<int>(), a.pointer<int>(), a.i32()});
  });
  EXPECT_EQ(order, cpuOrder);
  EXPECT_EQ(starts, cpuStarts);

  // Combine, accumulating into the output (a fixed-order FP32 sum: exact).
  OpInfo combineOp = makeOp<plan::MoeCombineParamsT>(
      plan::OpKind::MoeCombine,
      {operand(OperandKind::Arena, 5), operand(OperandKind::Arena, 3),
       operand(OperandKind::Arena, 2, true), operand(OperandKind::Arena, 6)},
      [&](auto &p) {
        p.dim = 96;
        p.top_k = k;
        p.accumulate = true;
      });
  PlannedLaunch lc =
      plan(combineOp, {{"dim", 96}, {"top_k", 4}, {"tokens", 8}, {"accumulate", 1}}, 256);
  std::vector<uint16_t> rowsIn = randomHalves(rng, static_cast<size_t>(tokens * k * 96));
  std::vector<uint16_t> out = randomHalves(rng, static_cast<size_t>(tokens * 96));
  std::vector<uint16_t> cpuOut = out;
  cpu::moeCombine({tokens, k, 96, true}, rowsIn.data(), cpuOrder.data(), cpuWeights.data(),
                  cpuOut.data(), pool);
  m.bind(combineOp.operands[0], rowsIn.data());
  m.bind(combineOp.operands[2], cpuWeights.data());
  m.bind(combineOp.operands[3], out.data());
  run(lc, m, [](Args &a) {
    std::apply(combine::combine_entry,
               std::tuple{a.pointer<const u16>(), a.pointer<const int>(), a.pointer<const float>(),
                          a.pointer<u16>(), a.i32()});
  });
  EXPECT_EQ(out, cpuOut);
}

} // namespace
} // namespace volt::simt
