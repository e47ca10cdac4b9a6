//===- SimtGemmTest.cpp - the GEMV/GEMM templates, run on the host --------===//
//
// Every GEMM form (NVFP4 and FP16 weights, decode GEMV and prefill GEMM,
// plain and MoE-grouped, fused parts, SiluMul epilogue, bias, FP32 out,
// ragged shapes) planned as voltc plans it, run through the SIMT emulator
// and compared with the cpu backend's op within the analytic bound of
// docs/design/cpu-backend.md (sums in another order: 2 (n + 2) 2^-24
// sum |terms| per side, plus one FP16 rounding of each).
//
//===----------------------------------------------------------------------===//
#include "tests/unit/codegen/simt/SimtHarness.h"

#include "runtime/cpu/Ops.h"
#include "tests/support/Fp8Entry.h"

#include <cstring>
#include <tuple>

using namespace volt;

// ---- The instances under test ---------------------------------------------

namespace gemv_parts {
#define VOLT_K 512
#define VOLT_N 72
#define VOLT_WARPS 2
#define VOLT_SILU 0
#define VOLT_OUT_F32 0
#define VOLT_HAS_BIAS 0
#define VOLT_PARTS 3
#define VOLT_PART_END0 40
#define VOLT_PART_END1 56
#define VOLT_PART_END2 0
#define VOLT_THREADS 64
#define nvfp4_gemv gemv_parts_entry
#include "nvfp4_gemv.cu"
#undef nvfp4_gemv
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace gemv_parts

namespace gemv_silu {
// K % 32 == 16: 8-byte weight loads and a half chunk at the end of K.
#define VOLT_K 400
#define VOLT_N 48
#define VOLT_WARPS 2
#define VOLT_SILU 1
#define VOLT_OUT_F32 0
#define VOLT_HAS_BIAS 1
#define VOLT_PARTS 2
#define VOLT_PART_END0 24
#define VOLT_PART_END1 0
#define VOLT_PART_END2 0
#define VOLT_THREADS 64
#define nvfp4_gemv gemv_silu_entry
#include "nvfp4_gemv.cu"
#undef nvfp4_gemv
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace gemv_silu

namespace dense_gemv_f32 {
#define VOLT_K 256
#define VOLT_N 40
#define VOLT_WARPS 2
#define VOLT_OUT_F32 1
#define VOLT_HAS_BIAS 1
#define VOLT_THREADS 64
#define dense_gemv dense_gemv_f32_entry
#include "dense_gemv.cu"
#undef dense_gemv
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace dense_gemv_f32

namespace fp8_gemv_bias {
#define VOLT_K 528
#define VOLT_N 40
#define VOLT_WARPS 2
#define VOLT_OUT_F32 0
#define VOLT_HAS_BIAS 1
#define VOLT_THREADS 64
#define fp8_gemv fp8_gemv_bias_entry
#include "fp8_gemv.cu"
#undef fp8_gemv
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace fp8_gemv_bias

namespace gemm_parts {
// K % 64 == 16 (a partial last step), N not a multiple of the tile.
#define VOLT_K 336
#define VOLT_N 200
#define VOLT_TILE_M 32
#define VOLT_TILE_N 128
#define VOLT_STAGES 2
#define VOLT_SILU 0
#define VOLT_OUT_F32 0
#define VOLT_HAS_BIAS 0
#define VOLT_PARTS 2
#define VOLT_PART_END0 120
#define VOLT_PART_END1 0
#define VOLT_PART_END2 0
#define VOLT_THREADS 128
#define nvfp4_gemm gemm_parts_entry
#include "nvfp4_gemm.cu"
#undef nvfp4_gemm
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace gemm_parts

namespace gemm_silu {
#define VOLT_K 128
#define VOLT_N 256
#define VOLT_TILE_M 64
#define VOLT_TILE_N 128
#define VOLT_STAGES 1
#define VOLT_SILU 1
#define VOLT_OUT_F32 0
#define VOLT_HAS_BIAS 1
#define VOLT_PARTS 2
#define VOLT_PART_END0 128
#define VOLT_PART_END1 0
#define VOLT_PART_END2 0
#define VOLT_THREADS 128
#define nvfp4_gemm gemm_silu_entry
#include "nvfp4_gemm.cu"
#undef nvfp4_gemm
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace gemm_silu

namespace dense_gemm_f32 {
#define VOLT_K 192
#define VOLT_N 130
#define VOLT_TILE_M 32
#define VOLT_TILE_N 64
#define VOLT_STAGES 2
#define VOLT_OUT_F32 1
#define VOLT_HAS_BIAS 1
#define VOLT_THREADS 64
#define dense_gemm dense_gemm_f32_entry
#include "dense_gemm.cu"
#undef dense_gemm
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace dense_gemm_f32

namespace fp8_gemm_f32 {
#define VOLT_K 208
#define VOLT_N 130
#define VOLT_TILE_M 32
#define VOLT_TILE_N 64
#define VOLT_STAGES 2
#define VOLT_OUT_F32 1
#define VOLT_HAS_BIAS 0
#define VOLT_THREADS 64
#define fp8_gemm fp8_gemm_f32_entry
#include "fp8_gemm.cu"
#undef fp8_gemm
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace fp8_gemm_f32

namespace moe_gemv_gate_up {
#define VOLT_K 256
#define VOLT_N 64
#define VOLT_WARPS 1
#define VOLT_SILU 1
#define VOLT_PARTS 2
#define VOLT_PART_END0 32
#define VOLT_PART_END1 0
#define VOLT_PART_END2 0
#define VOLT_EXPERTS 6
#define VOLT_TOP_K 2
#define VOLT_GATHER 1
#define VOLT_THREADS 32
#define nvfp4_moe_gemv moe_gemv_gate_up_entry
#include "nvfp4_moe_gemv.cu"
#undef nvfp4_moe_gemv
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace moe_gemv_gate_up

namespace moe_gemv_512 {
#define VOLT_K 64
#define VOLT_N 32
#define VOLT_WARPS 1
#define VOLT_SILU 1
#define VOLT_PARTS 2
#define VOLT_PART_END0 16
#define VOLT_PART_END1 0
#define VOLT_PART_END2 0
#define VOLT_EXPERTS 512
#define VOLT_TOP_K 4
#define VOLT_GATHER 1
#define VOLT_THREADS 32
#define nvfp4_moe_gemv moe_gemv_512_entry
#include "nvfp4_moe_gemv.cu"
#undef nvfp4_moe_gemv
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace moe_gemv_512

namespace moe_gemm_down {
#define VOLT_K 96
#define VOLT_N 80
#define VOLT_TILE_M 32
#define VOLT_TILE_N 64
#define VOLT_STAGES 2
#define VOLT_SILU 0
#define VOLT_PARTS 1
#define VOLT_PART_END0 0
#define VOLT_PART_END1 0
#define VOLT_PART_END2 0
#define VOLT_EXPERTS 6
#define VOLT_TOP_K 2
#define VOLT_GATHER 0
#define VOLT_THREADS 64
#define nvfp4_moe_gemm moe_gemm_down_entry
#include "nvfp4_moe_gemm.cu"
#undef nvfp4_moe_gemm
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace moe_gemm_down

namespace dense_moe_gemm_gate_up {
#define VOLT_K 64
#define VOLT_N 128
#define VOLT_TILE_M 32
#define VOLT_TILE_N 64
#define VOLT_STAGES 2
#define VOLT_SILU 1
#define VOLT_EXPERTS 5
#define VOLT_TOP_K 2
#define VOLT_GATHER 1
#define VOLT_THREADS 64
#define dense_moe_gemm dense_moe_gemm_gate_up_entry
#include "dense_moe_gemm.cu"
#undef dense_moe_gemm
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace dense_moe_gemm_gate_up

namespace fp8_moe_gemv_gate_up {
#define VOLT_K 96
#define VOLT_N 64
#define VOLT_WARPS 1
#define VOLT_SILU 1
#define VOLT_EXPERTS 6
#define VOLT_TOP_K 2
#define VOLT_GATHER 1
#define VOLT_THREADS 32
#define fp8_moe_gemv fp8_moe_gemv_gate_up_entry
#include "fp8_moe_gemv.cu"
#undef fp8_moe_gemv
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace fp8_moe_gemv_gate_up

namespace fp8_moe_gemm_gate_up {
#define VOLT_K 64
#define VOLT_N 128
#define VOLT_TILE_M 32
#define VOLT_TILE_N 64
#define VOLT_STAGES 2
#define VOLT_SILU 1
#define VOLT_EXPERTS 5
#define VOLT_TOP_K 2
#define VOLT_GATHER 1
#define VOLT_THREADS 64
#define fp8_moe_gemm fp8_moe_gemm_gate_up_entry
#include "fp8_moe_gemm.cu"
#undef fp8_moe_gemm
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace fp8_moe_gemm_gate_up

namespace fp8_moe_gemm_down {
#define VOLT_K 96
#define VOLT_N 80
#define VOLT_TILE_M 32
#define VOLT_TILE_N 64
#define VOLT_STAGES 2
#define VOLT_SILU 0
#define VOLT_EXPERTS 6
#define VOLT_TOP_K 2
#define VOLT_GATHER 0
#define VOLT_THREADS 64
#define fp8_moe_gemm fp8_moe_gemm_down_entry
#include "fp8_moe_gemm.cu"
#undef fp8_moe_gemm
#include "tests/unit/codegen/simt/UndefConstants.h"
} // namespace fp8_moe_gemm_down

namespace volt::simt {
namespace {

using codegen::OpInfo;
using codegen::Variant;

OperandInfo operand(OperandKind kind, uint32_t index) {
  OperandInfo o;
  o.kind = kind;
  o.index = index;
  return o;
}

/// Plans `op` with one variant and returns its launch and kernel request.
std::pair<PlannedLaunch, codegen::KernelRequest> plan(const OpInfo &op, const Variant &v) {
  KernelRegistry registry;
  auto l = codegen::planLaunches(op, {v}, codegen::ProgramInfo{}, codegen::TargetInfo{}, registry);
  EXPECT_TRUE(l.ok()) << l.message();
  if (!l.ok() || l->empty())
    return {};
  return {(*l)[0], registry.requests()[(*l)[0].kernel]};
}

Variant gemv(const std::string &kernel) { return {8, kernel, {}}; }
Variant gemm(const std::string &kernel, int64_t tileM, int64_t tileN, int64_t stages) {
  return {int64_t{1} << 30, kernel, {{"tile_m", tileM}, {"tile_n", tileN}, {"stages", stages}}};
}

/// The exact y of output (t, row) before the epilogue: sum of x w in double
/// and the sum of |x w|.
struct Exact {
  double y = 0, abs = 0;
};

struct LinearCase {
  bool nvfp4 = true;
  int64_t k = 0, n = 0;
  std::vector<uint32_t> parts;
  bool silu = false, bias = false, outF32 = false;
  /// A Linear over FP8 E4M3 rows with row scales (nvfp4 false).
  bool fp8 = false;
};

using testing::Fp8Entry;
using testing::randomFp8;

/// Runs a QLinear or Linear through `entry` and compares with the cpu op.
void checkLinear(const LinearCase &c, int tokens, const Variant &variant,
                 const std::vector<std::pair<std::string, int64_t>> &constants, uint32_t threads,
                 const std::function<void(Args &)> &entry) {
  std::mt19937 rng(static_cast<uint32_t>(c.k * 7 + c.n * 13 + tokens));
  OpInfo op;
  op.kind = c.nvfp4 ? plan::OpKind::QLinear : plan::OpKind::Linear;
  op.name = "test";
  if (c.nvfp4) {
    plan::QLinearParamsT p;
    p.dim = static_cast<uint32_t>(c.k);
    p.out_features = static_cast<uint32_t>(c.n);
    p.epilogue = c.silu ? plan::Epilogue::SiluMul : plan::Epilogue::None;
    p.out_dtype = c.outF32 ? plan::DType::F32 : plan::DType::F16;
    op.params.Set(p);
  } else {
    plan::LinearParamsT p;
    p.dim = static_cast<uint32_t>(c.k);
    p.out_features = static_cast<uint32_t>(c.n);
    p.out_dtype = c.outF32 ? plan::DType::F32 : plan::DType::F16;
    op.params.Set(p);
  }
  OperandInfo x = operand(OperandKind::Arena, 0), w = operand(OperandKind::Weight, 0),
              b = operand(OperandKind::Weight, 1), out = operand(OperandKind::Arena, 1);
  w.nvfp4 = c.nvfp4;
  w.fp8 = c.fp8;
  w.shape = {c.n, c.k};
  w.partRows = c.parts;
  for (size_t p = 0; p < std::max<size_t>(1, c.parts.size()); ++p)
    w.globalScales.push_back(0.0123f * static_cast<float>(p + 1));
  op.operands = {x, w};
  if (c.bias)
    op.operands.push_back(b);
  op.operands.push_back(out);
  auto [launch, request] = plan(op, variant);
  ASSERT_NO_FATAL_FAILURE(expectInstance(request, constants, threads));

  std::vector<uint16_t> xs = randomHalves(rng, static_cast<size_t>(tokens * c.k));
  std::vector<uint16_t> bias = randomHalves(rng, static_cast<size_t>(c.n), 0.1f);
  Nvfp4Entry q = randomNvfp4(rng, {c.n, c.k});
  std::vector<uint16_t> dense = randomHalves(rng, static_cast<size_t>(c.n * c.k), 0.05f);
  Fp8Entry fp8 = randomFp8(rng, c.n, c.k);
  const int64_t columns = c.silu ? c.n / 2 : c.n;
  const size_t outElems = static_cast<size_t>(tokens * columns);
  std::vector<float> gpuF32(outElems, -1.0f), cpuF32(outElems);
  std::vector<uint16_t> gpuF16(outElems, 0x7E00), cpuF16(outElems);

  cpu::ThreadPool pool(1);
  if (c.nvfp4) {
    cpu::QLinearParams p;
    p.tokens = tokens;
    p.inFeatures = c.k;
    p.outFeatures = c.n;
    p.partRows = w.partRows;
    p.globalScales = w.globalScales;
    p.outDtype = c.outF32 ? cpu::DType::F32 : cpu::DType::F16;
    p.epilogue = c.silu ? cpu::Epilogue::SiluMul : cpu::Epilogue::None;
    cpu::qlinear(p, xs.data(), {q.packed(), q.scales(), c.n, c.k}, c.bias ? bias.data() : nullptr,
                 c.outF32 ? static_cast<void *>(cpuF32.data()) : cpuF16.data(), pool);
  } else if (c.fp8) {
    cpu::fp8Linear({tokens, c.k, c.n, c.outF32 ? cpu::DType::F32 : cpu::DType::F16}, xs.data(),
                   fp8.matrix(), c.bias ? bias.data() : nullptr,
                   c.outF32 ? static_cast<void *>(cpuF32.data()) : cpuF16.data(), pool);
  } else {
    cpu::linear({tokens, c.k, c.n, c.outF32 ? cpu::DType::F32 : cpu::DType::F16}, xs.data(),
                dense.data(), c.bias ? bias.data() : nullptr,
                c.outF32 ? static_cast<void *>(cpuF32.data()) : cpuF16.data(), pool);
  }

  Memory m;
  m.tokens = tokens;
  m.seqs = 1;
  m.bind(x, xs.data());
  m.bind(w, c.nvfp4 ? static_cast<const void *>(q.bytes.data())
            : c.fp8  ? static_cast<const void *>(fp8.bytes.data())
                     : dense.data());
  m.bind(b, bias.data());
  m.bind(out, c.outF32 ? static_cast<void *>(gpuF32.data()) : gpuF16.data());
  run(launch, m, entry);

  auto exact = [&](int t, int64_t row) {
    Exact e;
    double g = 1;
    if (c.nvfp4) {
      size_t part = 0;
      int64_t end = c.parts.empty() ? c.n : c.parts[0];
      while (row >= end)
        end += c.parts[++part];
      g = w.globalScales[part];
    }
    for (int64_t i = 0; i < c.k; ++i) {
      double xv = halfToFloat(xs[static_cast<size_t>(t * c.k + i)]);
      double wv = c.nvfp4 ? q.weight(row, i)
                  : c.fp8 ? fp8.weight(row, i)
                          : halfToFloat(dense[static_cast<size_t>(row * c.k + i)]);
      e.y += xv * wv * g;
      e.abs += std::fabs(xv * wv * g);
    }
    if (c.bias)
      e.y += halfToFloat(bias[static_cast<size_t>(row)]);
    return e;
  };
  int mismatches = 0;
  for (int t = 0; t < tokens; ++t)
    for (int64_t col = 0; col < columns; ++col) {
      const size_t at = static_cast<size_t>(t * columns + col);
      double bound;
      if (c.silu) {
        Exact g = exact(t, col), u = exact(t, col + c.n / 2);
        double sg = g.y / (1 + std::exp(-g.y));
        bound =
            2 * (1.1 * sumBound(c.k, g.abs) * std::fabs(u.y) +
                 std::fabs(sg) * sumBound(c.k, u.abs) + std::ldexp(4.0, -24) * std::fabs(sg * u.y));
      } else {
        bound = 2 * sumBound(c.k, exact(t, col).abs);
      }
      bool ok = c.outF32 ? std::fabs(gpuF32[at] - cpuF32[at]) <=
                               bound + std::ldexp(2.0, -24) * std::fabs(cpuF32[at])
                         : halfClose(gpuF16[at], cpuF16[at], bound);
      if (!ok && mismatches++ < 5)
        ADD_FAILURE() << "token " << t << " column " << col << ": kernel "
                      << (c.outF32 ? gpuF32[at] : halfToFloat(gpuF16[at])) << ", cpu "
                      << (c.outF32 ? cpuF32[at] : halfToFloat(cpuF16[at])) << ", bound " << bound;
    }
  EXPECT_EQ(mismatches, 0);
}

TEST(SimtGemm, Nvfp4GemvFusedPartsEveryTokenCount) {
  LinearCase c{true, 512, 72, {40, 16, 16}, false, false, false};
  for (int tokens : {1, 3, 8})
    checkLinear(c, tokens, gemv("nvfp4_gemv"),
                {{"k", 512},
                 {"n", 72},
                 {"warps", 2},
                 {"silu", 0},
                 {"out_f32", 0},
                 {"has_bias", 0},
                 {"parts", 3},
                 {"part_end0", 40},
                 {"part_end1", 56},
                 {"part_end2", 0}},
                64, [](Args &a) {
                  using namespace gemv_parts;
                  std::apply(gemv_parts_entry,
                             std::tuple{a.pointer<const u16>(), a.pointer<const u8>(),
                                        a.pointer<const u8>(), a.pointer<void>(), a.i32(),
                                        a.floats<EpilogueScales>()});
                });
}

TEST(SimtGemm, Nvfp4GemvSiluBiasAndAHalfChunkOfK) {
  LinearCase c{true, 400, 48, {24, 24}, true, true, false};
  checkLinear(c, 5, gemv("nvfp4_gemv"),
              {{"k", 400},
               {"n", 48},
               {"warps", 2},
               {"silu", 1},
               {"out_f32", 0},
               {"has_bias", 1},
               {"parts", 2},
               {"part_end0", 24},
               {"part_end1", 0},
               {"part_end2", 0}},
              64, [](Args &a) {
                using namespace gemv_silu;
                std::apply(gemv_silu_entry,
                           std::tuple{a.pointer<const u16>(), a.pointer<const u8>(),
                                      a.pointer<const u8>(), a.pointer<const u16>(),
                                      a.pointer<void>(), a.i32(), a.floats<EpilogueScales>()});
              });
}

TEST(SimtGemm, DenseGemvF32OutWithBias) {
  LinearCase c{false, 256, 40, {}, false, true, true};
  checkLinear(c, 7, gemv("dense_gemv"),
              {{"k", 256}, {"n", 40}, {"warps", 2}, {"silu", 0}, {"out_f32", 1}, {"has_bias", 1}},
              64, [](Args &a) {
                using namespace dense_gemv_f32;
                std::apply(dense_gemv_f32_entry,
                           std::tuple{a.pointer<const u16>(), a.pointer<const u16>(),
                                      a.pointer<const u16>(), a.pointer<void>(), a.i32()});
              });
}

// FP8 E4M3 rows: K past the last whole warp chunk (528 = 8 x 64 + 16,
// split over two warps), a bias, every token count a GEMV serves.
TEST(SimtGemm, Fp8GemvEveryTokenCountWithBias) {
  LinearCase c{false, 528, 40, {}, false, true, false, true};
  for (int tokens = 1; tokens <= 8; ++tokens) {
    SCOPED_TRACE(tokens);
    checkLinear(c, tokens, gemv("fp8_gemv"),
                {{"k", 528}, {"n", 40}, {"warps", 2}, {"silu", 0}, {"out_f32", 0},
                 {"has_bias", 1}},
                64, [](Args &a) {
                  using namespace fp8_gemv_bias;
                  std::apply(fp8_gemv_bias_entry,
                             std::tuple{a.pointer<const u16>(), a.pointer<const u8>(),
                                        a.pointer<const float>(), a.pointer<const u16>(),
                                        a.pointer<void>(), a.i32()});
                });
  }
}

// Ragged tiles (130 rows over tiles of 64, 33 tokens over 32) and K not a
// multiple of the 64-deep step (208).
TEST(SimtGemm, Fp8GemmRaggedTilesAndPartialK) {
  LinearCase c{false, 208, 130, {}, false, false, true, true};
  checkLinear(c, 33, gemm("fp8_gemm", 32, 64, 2),
              {{"k", 208},
               {"n", 130},
               {"tile_m", 32},
               {"tile_n", 64},
               {"stages", 2},
               {"silu", 0},
               {"out_f32", 1},
               {"has_bias", 0}},
              64, [](Args &a) {
                using namespace fp8_gemm_f32;
                std::apply(fp8_gemm_f32_entry,
                           std::tuple{a.pointer<const u16>(), a.pointer<const u8>(),
                                      a.pointer<const float>(), a.pointer<void>(), a.i32()});
              });
}

TEST(SimtGemm, Nvfp4GemmRaggedTilesAndPartialK) {
  LinearCase c{true, 336, 200, {120, 80}, false, false, false};
  for (int tokens : {1, 45})
    checkLinear(c, tokens, gemm("nvfp4_gemm", 32, 128, 2),
                {{"k", 336},
                 {"n", 200},
                 {"tile_m", 32},
                 {"tile_n", 128},
                 {"stages", 2},
                 {"silu", 0},
                 {"out_f32", 0},
                 {"has_bias", 0},
                 {"parts", 2},
                 {"part_end0", 120},
                 {"part_end1", 0},
                 {"part_end2", 0}},
                128, [](Args &a) {
                  using namespace gemm_parts;
                  std::apply(gemm_parts_entry,
                             std::tuple{a.pointer<const u16>(), a.pointer<const u8>(),
                                        a.pointer<const u8>(), a.pointer<void>(), a.i32(),
                                        a.floats<EpilogueScales>()});
                });
}

TEST(SimtGemm, Nvfp4GemmSiluBiasOneStage) {
  LinearCase c{true, 128, 256, {128, 128}, true, true, false};
  checkLinear(c, 70, gemm("nvfp4_gemm", 64, 128, 1),
              {{"k", 128},
               {"n", 256},
               {"tile_m", 64},
               {"tile_n", 128},
               {"stages", 1},
               {"silu", 1},
               {"out_f32", 0},
               {"has_bias", 1},
               {"parts", 2},
               {"part_end0", 128},
               {"part_end1", 0},
               {"part_end2", 0}},
              128, [](Args &a) {
                using namespace gemm_silu;
                std::apply(gemm_silu_entry,
                           std::tuple{a.pointer<const u16>(), a.pointer<const u8>(),
                                      a.pointer<const u8>(), a.pointer<const u16>(),
                                      a.pointer<void>(), a.i32(), a.floats<EpilogueScales>()});
              });
}

TEST(SimtGemm, DenseGemmF32OutWithBias) {
  LinearCase c{false, 192, 130, {}, false, true, true};
  checkLinear(c, 33, gemm("dense_gemm", 32, 64, 2),
              {{"k", 192},
               {"n", 130},
               {"tile_m", 32},
               {"tile_n", 64},
               {"stages", 2},
               {"silu", 0},
               {"out_f32", 1},
               {"has_bias", 1}},
              64, [](Args &a) {
                using namespace dense_gemm_f32;
                std::apply(dense_gemm_f32_entry,
                           std::tuple{a.pointer<const u16>(), a.pointer<const u16>(),
                                      a.pointer<const u16>(), a.pointer<void>(), a.i32()});
              });
}

/// A MoE step: random routing of T tokens to k of E experts, aligned by the
/// cpu ops; then the grouped GEMM through `entry` against the cpu's.
enum class MoeFormat { Nvfp4, Dense, Fp8 };

void checkMoe(MoeFormat format, int64_t experts, int64_t topK, int64_t k, int64_t n, bool silu,
              bool gather, int tokens, const Variant &variant,
              const std::vector<std::pair<std::string, int64_t>> &constants, uint32_t threads,
              const std::function<void(Args &)> &entry) {
  const bool nvfp4 = format == MoeFormat::Nvfp4, fp8 = format == MoeFormat::Fp8;
  std::mt19937 rng(static_cast<uint32_t>(experts * 31 + k + n + tokens));
  // Distinct experts per token, skewed so that some experts get many pairs.
  std::vector<int32_t> ids;
  std::discrete_distribution<int> pick({8, 1, 4, 1, 2, 1, 1});
  for (int t = 0; t < tokens; ++t) {
    std::vector<int32_t> chosen;
    while (static_cast<int64_t>(chosen.size()) < topK) {
      int e = pick(rng) % static_cast<int>(experts);
      if (std::find(chosen.begin(), chosen.end(), e) == chosen.end())
        chosen.push_back(e);
    }
    ids.insert(ids.end(), chosen.begin(), chosen.end());
  }
  const int64_t pairs = tokens * topK;
  std::vector<int32_t> order(static_cast<size_t>(pairs)), starts(static_cast<size_t>(experts + 1));
  cpu::moeAlign({tokens, topK, experts}, ids.data(), order.data(), starts.data());

  codegen::OpInfo op;
  op.kind = nvfp4 ? plan::OpKind::MoeGroupedQLinear : plan::OpKind::MoeGroupedLinear;
  op.name = "experts";
  plan::MoeGroupedQLinearParamsT p;
  p.dim = static_cast<uint32_t>(k);
  p.out_features = static_cast<uint32_t>(n);
  p.num_experts = static_cast<uint32_t>(experts);
  p.top_k = static_cast<uint32_t>(topK);
  p.gather_tokens = gather;
  p.epilogue = silu ? plan::Epilogue::SiluMul : plan::Epilogue::None;
  if (nvfp4) {
    op.params.Set(p);
  } else {
    plan::MoeGroupedLinearParamsT dense;
    dense.dim = p.dim;
    dense.out_features = p.out_features;
    dense.num_experts = p.num_experts;
    dense.top_k = p.top_k;
    dense.gather_tokens = p.gather_tokens;
    dense.epilogue = p.epilogue;
    op.params.Set(dense);
  }
  OperandInfo in = operand(OperandKind::Arena, 0), ord = operand(OperandKind::Arena, 1),
              st = operand(OperandKind::Arena, 2), w = operand(OperandKind::Weight, 0),
              out = operand(OperandKind::Arena, 3);
  w.nvfp4 = nvfp4;
  w.fp8 = fp8;
  w.shape = {experts, n, k};
  if (silu)
    w.partRows = {static_cast<uint32_t>(n / 2), static_cast<uint32_t>(n / 2)};
  for (int64_t i = 0; nvfp4 && i < experts * (silu ? 2 : 1); ++i)
    w.globalScales.push_back(0.01f + 0.002f * static_cast<float>(i));
  op.operands = {in, ord, st, w, out};
  auto [launch, request] = plan(op, variant);
  ASSERT_NO_FATAL_FAILURE(expectInstance(request, constants, threads));

  std::vector<uint16_t> xs = randomHalves(rng, static_cast<size_t>((gather ? tokens : pairs) * k));
  Nvfp4Entry q = randomNvfp4(rng, {experts, n, k});
  appendEpilogueScales(q, {experts, n, k}, w.globalScales);
  std::vector<uint16_t> dense = randomHalves(rng, static_cast<size_t>(experts * n * k), 0.05f);
  Fp8Entry f8 = randomFp8(rng, experts * n, k);
  const int64_t columns = silu ? n / 2 : n;
  std::vector<uint16_t> gpu(static_cast<size_t>(pairs * columns), 0x7E00),
      cpuOut(static_cast<size_t>(pairs * columns));
  cpu::ThreadPool pool(1);
  if (nvfp4) {
    cpu::MoeGroupedQLinearParams p;
    p.tokens = tokens;
    p.topK = topK;
    p.numExperts = experts;
    p.inFeatures = k;
    p.outFeatures = n;
    p.partRows = w.partRows;
    p.globalScales = w.globalScales;
    p.gatherTokens = gather;
    p.epilogue = silu ? cpu::Epilogue::SiluMul : cpu::Epilogue::None;
    cpu::moeGroupedQLinear(p, xs.data(), order.data(), starts.data(),
                           {q.packed(), q.scales(), experts * n, k}, cpuOut.data(), pool);
  } else {
    cpu::MoeGroupedLinearParams p;
    p.tokens = tokens;
    p.topK = topK;
    p.numExperts = experts;
    p.inFeatures = k;
    p.outFeatures = n;
    p.gatherTokens = gather;
    p.epilogue = silu ? cpu::Epilogue::SiluMul : cpu::Epilogue::None;
    if (fp8)
      cpu::moeGroupedFp8Linear(p, xs.data(), order.data(), starts.data(), f8.matrix(),
                               cpuOut.data(), pool);
    else
      cpu::moeGroupedLinear(p, xs.data(), order.data(), starts.data(), dense.data(),
                            cpuOut.data(), pool);
  }
  Memory m;
  m.tokens = tokens;
  m.seqs = 1;
  m.bind(in, xs.data());
  m.bind(ord, order.data());
  m.bind(st, starts.data());
  m.bind(w, nvfp4 ? static_cast<const void *>(q.bytes.data())
           : fp8  ? static_cast<const void *>(f8.bytes.data())
                  : dense.data());
  m.bind(out, gpu.data());
  run(launch, m, entry);

  // Bound from each row's sum of |x w| (in FP32 terms before the epilogue).
  int mismatches = 0;
  for (int64_t j = 0; j < pairs; ++j) {
    int64_t e = 0;
    while (starts[static_cast<size_t>(e + 1)] <= j)
      ++e;
    const int64_t source = gather ? order[static_cast<size_t>(j)] / topK : j;
    auto sums = [&](int64_t row) {
      Exact r;
      double g = nvfp4 ? w.globalScales[static_cast<size_t>(e * (silu ? 2 : 1) +
                                                            (silu && row >= n / 2 ? 1 : 0))]
                       : 1.0;
      for (int64_t i = 0; i < k; ++i) {
        double xv = halfToFloat(xs[static_cast<size_t>(source * k + i)]);
        double wv = nvfp4 ? q.weight(e * n + row, i)
                    : fp8 ? f8.weight(e * n + row, i)
                          : halfToFloat(dense[static_cast<size_t>((e * n + row) * k + i)]);
        r.y += xv * wv * g;
        r.abs += std::fabs(xv * wv * g);
      }
      return r;
    };
    for (int64_t col = 0; col < columns; ++col) {
      double bound;
      if (silu) {
        Exact g = sums(col), u = sums(col + n / 2);
        double sg = g.y / (1 + std::exp(-g.y));
        bound =
            2 * (1.1 * sumBound(k, g.abs) * std::fabs(u.y) + std::fabs(sg) * sumBound(k, u.abs) +
                 std::ldexp(4.0, -24) * std::fabs(sg * u.y));
      } else {
        bound = 2 * sumBound(k, sums(col).abs);
      }
      const size_t at = static_cast<size_t>(j * columns + col);
      if (!halfClose(gpu[at], cpuOut[at], bound) && mismatches++ < 5)
        ADD_FAILURE() << "row " << j << " (expert " << e << ") column " << col << ": kernel "
                      << halfToFloat(gpu[at]) << ", cpu " << halfToFloat(cpuOut[at]);
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(SimtGemm, Nvfp4MoeGemvGatheredGateUp) {
  for (int tokens : {1, 5})
    checkMoe(MoeFormat::Nvfp4, 6, 2, 256, 64, true, true, tokens, gemv("nvfp4_moe_gemv"),
             {{"k", 256},
              {"n", 64},
              {"warps", 1},
              {"silu", 1},
              {"parts", 2},
              {"part_end0", 32},
              {"part_end1", 0},
              {"part_end2", 0},
              {"experts", 6},
              {"top_k", 2},
              {"gather", 1}},
             32, [](Args &a) {
               using namespace moe_gemv_gate_up;
               std::apply(moe_gemv_gate_up_entry,
                          std::tuple{a.pointer<const u16>(), a.pointer<const int>(),
                                     a.pointer<const int>(), a.pointer<const u8>(),
                                     a.pointer<const u8>(), a.pointer<u16>(), a.i32(),
                                     a.pointer<const float>()});
             });
}

TEST(SimtGemm, Nvfp4MoeGemmDown) {
  checkMoe(MoeFormat::Nvfp4, 6, 2, 96, 80, false, false, 40, gemm("nvfp4_moe_gemm", 32, 64, 2),
           {{"k", 96},
            {"n", 80},
            {"tile_m", 32},
            {"tile_n", 64},
            {"stages", 2},
            {"silu", 0},
            {"parts", 1},
            {"part_end0", 0},
            {"part_end1", 0},
            {"part_end2", 0},
            {"experts", 6},
            {"top_k", 2},
            {"gather", 0}},
           64, [](Args &a) {
             using namespace moe_gemm_down;
             std::apply(moe_gemm_down_entry,
                        std::tuple{a.pointer<const u16>(), a.pointer<const int>(),
                                   a.pointer<const int>(), a.pointer<const u8>(),
                                   a.pointer<const u8>(), a.pointer<u16>(), a.i32(),
                                   a.pointer<const float>()});
           });
}

// 512 experts with gate and up fused: 1,024 epilogue scales, which the
// kernel parameter space (4,096 bytes on sm_70) could not hold by value;
// they are read from the weight entry (Qwen3-Next-80B-A3B's shape of MoE).
TEST(SimtGemm, Nvfp4MoeGemvFiveHundredTwelveExperts) {
  checkMoe(MoeFormat::Nvfp4, 512, 4, 64, 32, true, true, 3, gemv("nvfp4_moe_gemv"),
           {{"k", 64},
            {"n", 32},
            {"warps", 1},
            {"silu", 1},
            {"parts", 2},
            {"part_end0", 16},
            {"part_end1", 0},
            {"part_end2", 0},
            {"experts", 512},
            {"top_k", 4},
            {"gather", 1}},
           32, [](Args &a) {
             using namespace moe_gemv_512;
             std::apply(moe_gemv_512_entry,
                        std::tuple{a.pointer<const u16>(), a.pointer<const int>(),
                                   a.pointer<const int>(), a.pointer<const u8>(),
                                   a.pointer<const u8>(), a.pointer<u16>(), a.i32(),
                                   a.pointer<const float>()});
           });
}

TEST(SimtGemm, DenseMoeGemmGatheredGateUp) {
  checkMoe(MoeFormat::Dense, 5, 2, 64, 128, true, true, 23, gemm("dense_moe_gemm", 32, 64, 2),
           {{"k", 64},
            {"n", 128},
            {"tile_m", 32},
            {"tile_n", 64},
            {"stages", 2},
            {"silu", 1},
            {"experts", 5},
            {"top_k", 2},
            {"gather", 1}},
           64, [](Args &a) {
             using namespace dense_moe_gemm_gate_up;
             std::apply(dense_moe_gemm_gate_up_entry,
                        std::tuple{a.pointer<const u16>(), a.pointer<const int>(),
                                   a.pointer<const int>(), a.pointer<const u16>(), a.pointer<u16>(),
                                   a.i32()});
           });
}


// FP8 experts (E4M3 rows with a scale per row, an FP8-dynamic export's):
// the gate's and the up's row scales each multiply their own sum before
// silu(gate) * up; every code of both signs, subnormals included.
TEST(SimtGemm, Fp8MoeGemvGatheredGateUp) {
  for (int tokens : {1, 4})
    checkMoe(MoeFormat::Fp8, 6, 2, 96, 64, true, true, tokens, gemv("fp8_moe_gemv"),
             {{"k", 96}, {"n", 64}, {"warps", 1}, {"silu", 1}, {"experts", 6}, {"top_k", 2},
              {"gather", 1}},
             32, [](Args &a) {
               using namespace fp8_moe_gemv_gate_up;
               std::apply(fp8_moe_gemv_gate_up_entry,
                          std::tuple{a.pointer<const u16>(), a.pointer<const int>(),
                                     a.pointer<const int>(), a.pointer<const u8>(),
                                     a.pointer<const float>(), a.pointer<u16>(), a.i32()});
             });
}

TEST(SimtGemm, Fp8MoeGemmGatheredGateUp) {
  checkMoe(MoeFormat::Fp8, 5, 2, 64, 128, true, true, 23, gemm("fp8_moe_gemm", 32, 64, 2),
           {{"k", 64},
            {"n", 128},
            {"tile_m", 32},
            {"tile_n", 64},
            {"stages", 2},
            {"silu", 1},
            {"experts", 5},
            {"top_k", 2},
            {"gather", 1}},
           64, [](Args &a) {
             using namespace fp8_moe_gemm_gate_up;
             std::apply(fp8_moe_gemm_gate_up_entry,
                        std::tuple{a.pointer<const u16>(), a.pointer<const int>(),
                                   a.pointer<const int>(), a.pointer<const u8>(),
                                   a.pointer<const float>(), a.pointer<u16>(), a.i32()});
           });
}

TEST(SimtGemm, Fp8MoeGemmDownRaggedTiles) {
  checkMoe(MoeFormat::Fp8, 6, 2, 96, 80, false, false, 40, gemm("fp8_moe_gemm", 32, 64, 2),
           {{"k", 96},
            {"n", 80},
            {"tile_m", 32},
            {"tile_n", 64},
            {"stages", 2},
            {"silu", 0},
            {"experts", 6},
            {"top_k", 2},
            {"gather", 0}},
           64, [](Args &a) {
             using namespace fp8_moe_gemm_down;
             std::apply(fp8_moe_gemm_down_entry,
                        std::tuple{a.pointer<const u16>(), a.pointer<const int>(),
                                   a.pointer<const int>(), a.pointer<const u8>(),
                                   a.pointer<const float>(), a.pointer<u16>(), a.i32()});
           });
}

} // namespace
} // namespace volt::simt
