//===- KernelsTest.cpp - every kernel on a GPU against the cpu backend's op ===//
//
// For each op of Qwen3-30B-A3B and a dense 32B model (GpuCases.h), at token
// counts that select each variant, random inputs run through the GPU kernel
// and through the cpu backend's op, and every output is compared within the
// documented bound (docs/perf/kernels.md, "Tolerances"):
//
// - GEMMs: |gpu - cpu| <= 2 * 2 (K + 2) 2^-24 sum|x w g| + one FP16 rounding
//   of each side (tensor cores add with truncation, so twice the
//   round-to-nearest bound per side); SiluMul outputs propagate the bounds
//   of gate and up through silu(g) u.
// - Attention: paged_attention (context + 64) 2^-22 max|v| + FP16 roundings
//   (online softmax rescaling; GPU exp); paged_attention_tiled adds P's FP16
//   rounding and the tensor cores' score errors
//   (tests/unit/codegen/AttentionBounds.h).
// - Norms, RoPE, activations: (n + 8) 2^-22 |y| + FP16 roundings.
// - Copies, the stable sort, the combine's fixed-order sum: bit-exact;
//   the router's expert ids exact on inputs without near-ties.
//
// Skipped with the reason where no GPU is present.
//
//===----------------------------------------------------------------------===//
#include "tests/gpu/GpuCases.h"

#include "compiler/codegen/KernelDefs.h"
#include "tests/unit/codegen/AttentionBounds.h"

#include "runtime/cpu/Ops.h"
#include "runtime/numerics/Half.h"
#include "runtime/numerics/Nvfp4.h"
#include "tests/support/Fp8Entry.h"

#include <gtest/gtest.h>

#include <set>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>

namespace volt::gpu {
namespace {

using codegen::OperandKind;
using codegen::OpInfo;

std::unique_ptr<Gpu> gGpu;
std::string gNoGpu;

class GpuKernels : public ::testing::TestWithParam<size_t> {
protected:
  static void SetUpTestSuite() {
    if (gGpu || !gNoGpu.empty())
      return;
    auto gpu = Gpu::open();
    if (!gpu) {
      gNoGpu = gpu.message();
      return;
    }
    gGpu = std::move(*gpu);
  }
  void SetUp() override {
    if (!gGpu)
      GTEST_SKIP() << "no GPU: " << gNoGpu;
  }
};

/// Uniform in [-2 scale, 2 scale): a fast generator, since the tables of
/// the real models hold hundreds of millions of values.
std::vector<uint16_t> randomHalves(std::mt19937 &rng, size_t n, float scale = 1.0f) {
  uint64_t state = (static_cast<uint64_t>(rng()) << 32 | rng()) | 1;
  std::vector<uint16_t> v(n);
  for (uint16_t &h : v) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    float u = static_cast<float>(state >> 40) * (1.0f / 16777216.0f); // [0, 1)
    h = floatToHalf((4.0f * u - 2.0f) * scale);
  }
  return v;
}

std::vector<uint16_t> absHalves(std::vector<uint16_t> v) {
  for (uint16_t &h : v)
    h &= 0x7FFF;
  return v;
}

bool halfClose(uint16_t got, uint16_t want, double bound) {
  double g = halfToFloat(got), w = halfToFloat(want);
  return std::fabs(g - w) <=
         bound + std::ldexp(1.0, -10) * std::max(std::fabs(g), std::fabs(w)) + std::ldexp(1.0, -24);
}

/// Host inputs of one op, their device copies, and its outputs.
struct Buffers {
  Bindings bindings;
  std::vector<DeviceBuffer> device;
};

Result<DeviceBuffer> put(Buffers &b, const OperandInfo &o, const void *data, size_t bytes) {
  VOLT_ASSIGN_OR_RETURN(DeviceBuffer d, gGpu->allocate(bytes));
  if (data)
    VOLT_RETURN_IF_ERROR(gGpu->upload(d, data, bytes));
  else
    VOLT_RETURN_IF_ERROR(gGpu->fill(d, 0));
  b.bindings.bind(o, d);
  b.device.push_back(d);
  return d;
}

template <typename T> std::vector<T> get(const DeviceBuffer &d, size_t count) {
  std::vector<T> v(count);
  Status s = gGpu->download(v.data(), d, count * sizeof(T));
  EXPECT_TRUE(s.ok()) << s.message();
  return v;
}

/// An NVFP4 entry in the canonical layout with random codes and scales.
struct Nvfp4Entry {
  std::vector<uint8_t> bytes;
  uint64_t scalesOffset = 0;
  int64_t rows = 0, cols = 0;
  cpu::Nvfp4Matrix matrix() const {
    return {bytes.data(), bytes.data() + scalesOffset, rows, cols};
  }
  Nvfp4Entry absolute() const {
    Nvfp4Entry a = *this;
    for (uint64_t i = 0; i < scalesOffset; ++i)
      a.bytes[i] &= 0x77;
    return a;
  }
};

Nvfp4Entry randomNvfp4(std::mt19937 &rng, const std::vector<int64_t> &shape) {
  Nvfp4Entry e;
  e.cols = shape.back();
  e.rows = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i)
    e.rows *= shape[i];
  e.scalesOffset = codegen::nvfp4ScalesOffset(shape);
  e.bytes.resize(e.scalesOffset + static_cast<size_t>(e.rows * e.cols / 16));
  std::uniform_int_distribution<int> byte(0, 255), scale(0x28, 0x48);
  for (uint64_t i = 0; i < static_cast<uint64_t>(e.rows * e.cols / 2); ++i)
    e.bytes[i] = static_cast<uint8_t>(byte(rng));
  for (size_t i = e.scalesOffset; i < e.bytes.size(); ++i)
    e.bytes[i] = static_cast<uint8_t>(scale(rng));
  return e;
}

double sumBound(int64_t n, double absSum) {
  return 2.0 * 2.0 * static_cast<double>(n + 2) * std::ldexp(1.0, -24) * absSum;
}

int threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// ---- GEMMs -----------------------------------------------------------------

void checkLinear(const OpInfo &op, const PlannedLaunch &launch, int tokens) {
  const codegen::GemmParams g = *codegen::gemmParams(op);
  std::mt19937 rng(static_cast<uint32_t>(tokens * 977 + g.n));
  const bool quantized = op.kind == plan::OpKind::QLinear;
  const OperandInfo &in = op.operands[0], &w = op.operands[1], &out = op.operands.back();
  const bool bias = op.operands.size() == 4;
  const int64_t k = g.k, n = g.n;
  const bool silu = g.silu, f32 = g.outF32;
  const int rows = tokens; // per-sequence ops run with S = T here
  std::vector<uint16_t> x = randomHalves(rng, static_cast<size_t>(rows * k));
  std::vector<uint16_t> b = randomHalves(rng, static_cast<size_t>(n), 0.1f);
  const bool fp8 = w.fp8;
  Nvfp4Entry q;
  testing::Fp8Entry e8;
  std::vector<uint16_t> dense;
  if (quantized)
    q = randomNvfp4(rng, w.shape);
  else if (fp8)
    e8 = testing::randomFp8(rng, n, k);
  else
    dense = randomHalves(rng, static_cast<size_t>(n * k), 0.05f);
  const int64_t columns = silu ? n / 2 : n;
  cpu::ThreadPool pool(threads());
  // Reference, and the pre-activation sums and |x||w| sums for the bound.
  std::vector<float> reference(static_cast<size_t>(rows * columns)),
      pre(static_cast<size_t>(rows * n)), absSum(static_cast<size_t>(rows * n));
  std::vector<uint16_t> reference16(reference.size());
  std::vector<uint16_t> ax = absHalves(x);
  if (quantized) {
    cpu::QLinearParams p;
    p.tokens = rows;
    p.inFeatures = k;
    p.outFeatures = n;
    p.partRows = w.partRows;
    p.globalScales = w.globalScales;
    p.outDtype = f32 ? cpu::DType::F32 : cpu::DType::F16;
    p.epilogue = silu ? cpu::Epilogue::SiluMul : cpu::Epilogue::None;
    cpu::qlinear(p, x.data(), q.matrix(), bias ? b.data() : nullptr,
                 f32 ? static_cast<void *>(reference.data()) : reference16.data(), pool);
    p.outDtype = cpu::DType::F32;
    p.epilogue = cpu::Epilogue::None;
    cpu::qlinear(p, x.data(), q.matrix(), bias ? b.data() : nullptr, pre.data(), pool);
    Nvfp4Entry aq = q.absolute();
    cpu::qlinear(p, ax.data(), aq.matrix(), nullptr, absSum.data(), pool);
  } else if (fp8) {
    cpu::fp8Linear({rows, k, n, f32 ? cpu::DType::F32 : cpu::DType::F16}, x.data(), e8.matrix(),
                   bias ? b.data() : nullptr,
                   f32 ? static_cast<void *>(reference.data()) : reference16.data(), pool);
    cpu::fp8Linear({rows, k, n, cpu::DType::F32}, x.data(), e8.matrix(), bias ? b.data() : nullptr,
                   pre.data(), pool);
    const testing::Fp8Entry a8 = e8.absolute();
    cpu::fp8Linear({rows, k, n, cpu::DType::F32}, ax.data(), a8.matrix(), nullptr, absSum.data(),
                   pool);
  } else {
    cpu::linear({rows, k, n, f32 ? cpu::DType::F32 : cpu::DType::F16}, x.data(), dense.data(),
                bias ? b.data() : nullptr,
                f32 ? static_cast<void *>(reference.data()) : reference16.data(), pool);
    cpu::linear({rows, k, n, cpu::DType::F32}, x.data(), dense.data(), bias ? b.data() : nullptr,
                pre.data(), pool);
    cpu::linear({rows, k, n, cpu::DType::F32}, ax.data(), absHalves(dense).data(), nullptr,
                absSum.data(), pool);
  }
  Buffers buffers;
  ASSERT_TRUE(put(buffers, in, x.data(), x.size() * 2).ok());
  ASSERT_TRUE(quantized ? put(buffers, w, q.bytes.data(), q.bytes.size()).ok()
              : fp8     ? put(buffers, w, e8.bytes.data(), e8.bytes.size()).ok()
                        : put(buffers, w, dense.data(), dense.size() * 2).ok());
  if (bias) {
    ASSERT_TRUE(put(buffers, op.operands[2], b.data(), b.size() * 2).ok());
  }
  auto outBuffer = put(buffers, out, nullptr, static_cast<size_t>(rows * columns) * (f32 ? 4 : 2));
  ASSERT_TRUE(outBuffer.ok()) << outBuffer.message();
  Status ran = gGpu->run(launch, buffers.bindings.map(), tokens, tokens);
  ASSERT_TRUE(ran.ok()) << ran.message();
  int bad = 0;
  if (f32) {
    auto got = get<float>(*outBuffer, reference.size());
    for (size_t i = 0; i < got.size(); ++i)
      if (std::fabs(got[i] - reference[i]) >
              sumBound(k, absSum[i]) + std::ldexp(2.0, -24) * std::fabs(reference[i]) &&
          bad++ < 5)
        ADD_FAILURE() << op.name << " T=" << tokens << " [" << i << "]: gpu " << got[i] << ", cpu "
                      << reference[i];
  } else {
    auto got = get<uint16_t>(*outBuffer, reference16.size());
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t c = 0; c < columns; ++c) {
        size_t at = static_cast<size_t>(t * columns + c);
        double bound;
        if (silu) {
          size_t g = static_cast<size_t>(t * n + c), u = static_cast<size_t>(t * n + c + n / 2);
          double sg = pre[g] / (1 + std::exp(-pre[g]));
          bound = 2 * (1.1 * sumBound(k, absSum[g]) * std::fabs(pre[u]) +
                       std::fabs(sg) * sumBound(k, absSum[u]) +
                       std::ldexp(4.0, -24) * std::fabs(sg * pre[u]));
        } else {
          bound = 2 * sumBound(k, absSum[static_cast<size_t>(t * n + c)]);
        }
        if (!halfClose(got[at], reference16[at], bound) && bad++ < 5)
          ADD_FAILURE() << op.name << " T=" << tokens << " [" << t << ", " << c << "]: gpu "
                        << halfToFloat(got[at]) << ", cpu " << halfToFloat(reference16[at])
                        << ", bound " << bound;
      }
  }
  EXPECT_EQ(bad, 0) << op.name << " at T = " << tokens;
}

/// Routing of T tokens to k of E experts and its alignment (cpu ops).
struct Routing {
  std::vector<int32_t> ids, order, starts;
  std::vector<float> weights;
};

Routing route(std::mt19937 &rng, int64_t tokens, int64_t experts, int64_t k) {
  Routing r;
  std::vector<int32_t> all(static_cast<size_t>(experts));
  std::iota(all.begin(), all.end(), 0);
  // Skewed: low-numbered experts are popular, as real routers are.
  std::discrete_distribution<int> pick(static_cast<size_t>(experts), 0.0, 1.0,
                                       [](double x) { return 1.0 / (0.05 + x); });
  for (int64_t t = 0; t < tokens; ++t) {
    std::vector<int32_t> chosen;
    while (static_cast<int64_t>(chosen.size()) < k) {
      int e = pick(rng);
      if (std::find(chosen.begin(), chosen.end(), e) == chosen.end())
        chosen.push_back(e);
    }
    r.ids.insert(r.ids.end(), chosen.begin(), chosen.end());
    for (int64_t s = 0; s < k; ++s)
      r.weights.push_back(1.0f / static_cast<float>(k + s));
  }
  r.order.resize(r.ids.size());
  r.starts.resize(static_cast<size_t>(experts + 1));
  cpu::moeAlign({tokens, k, experts}, r.ids.data(), r.order.data(), r.starts.data());
  return r;
}

void checkMoeLinear(const OpInfo &op, const PlannedLaunch &launch, int tokens) {
  const codegen::GemmParams g = *codegen::gemmParams(op);
  const bool quantized = op.kind == plan::OpKind::MoeGroupedQLinear;
  std::mt19937 rng(static_cast<uint32_t>(tokens * 131 + g.n));
  const int64_t experts = g.experts, topK = g.topK;
  const int64_t k = g.k, n = g.n, pairs = tokens * topK;
  const bool silu = g.silu, gather = g.gatherTokens;
  const OperandInfo &w = op.operands[3];
  Routing r = route(rng, tokens, experts, topK);
  std::vector<uint16_t> x = randomHalves(rng, static_cast<size_t>((gather ? tokens : pairs) * k));
  const bool fp8 = w.fp8;
  Nvfp4Entry q;
  std::vector<uint16_t> dense;
  testing::Fp8Entry f8;
  if (quantized) {
    q = randomNvfp4(rng, w.shape);
    // The grouped kernels read 2^14 x each global scale from the entry, as
    // the packer stores them after the block scales.
    const uint64_t at = codegen::nvfp4EpilogueOffset(w.shape);
    q.bytes.resize(at + 4 * w.globalScales.size(), 0);
    for (size_t i = 0; i < w.globalScales.size(); ++i) {
      const float v = w.globalScales[i] * 16384.0f;
      std::memcpy(q.bytes.data() + at + 4 * i, &v, 4);
    }
  } else if (fp8) {
    f8 = testing::randomFp8(rng, experts * n, k);
  } else {
    dense = randomHalves(rng, static_cast<size_t>(experts * n * k), 0.05f);
  }
  const int64_t columns = silu ? n / 2 : n;
  cpu::ThreadPool pool(threads());
  std::vector<uint16_t> reference(static_cast<size_t>(pairs * columns)),
      pre(static_cast<size_t>(pairs * n)), absSum(static_cast<size_t>(pairs * n));
  std::vector<uint16_t> ax = absHalves(x);
  const cpu::Epilogue epilogue = silu ? cpu::Epilogue::SiluMul : cpu::Epilogue::None;
  if (quantized) {
    cpu::MoeGroupedQLinearParams p;
    p.tokens = tokens;
    p.topK = topK;
    p.numExperts = experts;
    p.inFeatures = k;
    p.outFeatures = n;
    p.partRows = w.partRows;
    p.globalScales = w.globalScales;
    p.gatherTokens = gather;
    p.epilogue = epilogue;
    cpu::moeGroupedQLinear(p, x.data(), r.order.data(), r.starts.data(), q.matrix(),
                           reference.data(), pool);
    p.epilogue = cpu::Epilogue::None;
    cpu::moeGroupedQLinear(p, x.data(), r.order.data(), r.starts.data(), q.matrix(), pre.data(),
                           pool);
    Nvfp4Entry aq = q.absolute();
    cpu::moeGroupedQLinear(p, ax.data(), r.order.data(), r.starts.data(), aq.matrix(),
                           absSum.data(), pool);
  } else {
    cpu::MoeGroupedLinearParams p;
    p.tokens = tokens;
    p.topK = topK;
    p.numExperts = experts;
    p.inFeatures = k;
    p.outFeatures = n;
    p.gatherTokens = gather;
    p.epilogue = epilogue;
    if (fp8) {
      cpu::moeGroupedFp8Linear(p, x.data(), r.order.data(), r.starts.data(), f8.matrix(),
                               reference.data(), pool);
      p.epilogue = cpu::Epilogue::None;
      cpu::moeGroupedFp8Linear(p, x.data(), r.order.data(), r.starts.data(), f8.matrix(),
                               pre.data(), pool);
      testing::Fp8Entry af = f8.absolute();
      cpu::moeGroupedFp8Linear(p, ax.data(), r.order.data(), r.starts.data(), af.matrix(),
                               absSum.data(), pool);
    } else {
    cpu::moeGroupedLinear(p, x.data(), r.order.data(), r.starts.data(), dense.data(),
                          reference.data(), pool);
    p.epilogue = cpu::Epilogue::None;
    cpu::moeGroupedLinear(p, x.data(), r.order.data(), r.starts.data(), dense.data(), pre.data(),
                          pool);
    std::vector<uint16_t> ad = absHalves(dense);
    cpu::moeGroupedLinear(p, ax.data(), r.order.data(), r.starts.data(), ad.data(), absSum.data(),
                          pool);
    }
  }
  Buffers buffers;
  ASSERT_TRUE(put(buffers, op.operands[0], x.data(), x.size() * 2).ok());
  ASSERT_TRUE(put(buffers, op.operands[1], r.order.data(), r.order.size() * 4).ok());
  ASSERT_TRUE(put(buffers, op.operands[2], r.starts.data(), r.starts.size() * 4).ok());
  ASSERT_TRUE((quantized ? put(buffers, w, q.bytes.data(), q.bytes.size())
               : fp8     ? put(buffers, w, f8.bytes.data(), f8.bytes.size())
                         : put(buffers, w, dense.data(), dense.size() * 2))
                  .ok());
  auto out = put(buffers, op.operands[4], nullptr, reference.size() * 2);
  ASSERT_TRUE(out.ok());
  Status ran = gGpu->run(launch, buffers.bindings.map(), tokens, 1);
  ASSERT_TRUE(ran.ok()) << ran.message();
  auto got = get<uint16_t>(*out, reference.size());
  int bad = 0;
  for (int64_t j = 0; j < pairs; ++j)
    for (int64_t c = 0; c < columns; ++c) {
      auto h = [&](const std::vector<uint16_t> &v, int64_t col) {
        return static_cast<double>(halfToFloat(v[static_cast<size_t>(j * n + col)]));
      };
      double bound;
      if (silu) {
        double g = h(pre, c), u = h(pre, c + n / 2), sg = g / (1 + std::exp(-g));
        bound = 2 * (1.1 * sumBound(k, h(absSum, c)) * std::fabs(u) +
                     std::fabs(sg) * sumBound(k, h(absSum, c + n / 2))) +
                std::ldexp(1.0, -9) * std::fabs(sg * u);
      } else {
        bound = 2 * sumBound(k, h(absSum, c) * 1.001);
      }
      size_t at = static_cast<size_t>(j * columns + c);
      if (!halfClose(got[at], reference[at], bound) && bad++ < 5)
        ADD_FAILURE() << op.name << " T=" << tokens << " row " << j << " col " << c << ": gpu "
                      << halfToFloat(got[at]) << ", cpu " << halfToFloat(reference[at]);
    }
  EXPECT_EQ(bad, 0) << op.name << " at T = " << tokens;
}

// ---- Attention -------------------------------------------------------------

void checkAttention(const OpInfo &op, const codegen::ProgramInfo &program,
                    const PlannedLaunch &launch, const std::string &kernel, int tokens) {
  std::mt19937 rng(static_cast<uint32_t>(tokens));
  const plan::AttentionParamsT &ap = *op.params.AsAttentionParams();
  const int64_t hq = ap.num_heads, hkv = ap.num_kv_heads, d = ap.head_dim;
  const int64_t blockSize = program.kvBlockSize, maxBlocks = program.maxBlocksPerSeq;
  // Decode: every token its own sequence with a long context. Larger
  // steps mix two decodes, a 65-token chunk from position 0 and the rest
  // of the tokens in one chunk after 700 cached positions.
  std::vector<int32_t> seqStarts = {0}, contextLens;
  if (tokens <= 8) {
    for (int t = 0; t < tokens; ++t) {
      seqStarts.push_back(t + 1);
      contextLens.push_back(1000 + 997 * t);
    }
  } else {
    const int chunk = tokens - 2 - 65;
    for (auto [fresh, context] : {std::pair{1, 3001}, std::pair{65, 65},
                                  std::pair{chunk, 700 + chunk}, std::pair{1, 1000}}) {
      seqStarts.push_back(seqStarts.back() + fresh);
      contextLens.push_back(context);
    }
  }
  const int seqs = static_cast<int>(contextLens.size());
  std::vector<int32_t> blocks(static_cast<size_t>(program.kvBlocks));
  std::iota(blocks.begin(), blocks.end(), 0);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  std::vector<int32_t> tables(static_cast<size_t>(seqs * maxBlocks), 0), slots(tokens);
  size_t next = 0;
  for (int s = 0; s < seqs; ++s) {
    int64_t used = (contextLens[static_cast<size_t>(s)] + blockSize - 1) / blockSize;
    for (int64_t b = 0; b < used; ++b)
      tables[static_cast<size_t>(s * maxBlocks + b)] = blocks[next++];
    for (int t = seqStarts[static_cast<size_t>(s)]; t < seqStarts[static_cast<size_t>(s) + 1];
         ++t) {
      int64_t pos = contextLens[static_cast<size_t>(s)] -
                    (seqStarts[static_cast<size_t>(s) + 1] - seqStarts[static_cast<size_t>(s)]) +
                    (t - seqStarts[static_cast<size_t>(s)]);
      slots[static_cast<size_t>(t)] = static_cast<int32_t>(
          tables[static_cast<size_t>(s * maxBlocks + pos / blockSize)] * blockSize +
          pos % blockSize);
    }
  }
  const size_t layer = static_cast<size_t>(program.kvLayerBytes() / 2);
  std::vector<uint16_t> qkv = randomHalves(rng, static_cast<size_t>(tokens * (hq + 2 * hkv) * d));
  std::vector<uint16_t> cache = randomHalves(rng, 2 * layer);
  std::vector<uint16_t> cpuCache = cache, reference(static_cast<size_t>(tokens * hq * d));
  cpu::ThreadPool pool(threads());
  cpu::attention({tokens, seqs, hq, hkv, d}, qkv.data(),
                 {slots.data(), seqStarts.data(), contextLens.data(), tables.data(), maxBlocks},
                 {cpuCache.data(), cpuCache.data() + layer, program.kvBlocks, blockSize},
                 reference.data(), pool);
  Buffers buffers;
  ASSERT_TRUE(put(buffers, op.operands[0], qkv.data(), qkv.size() * 2).ok());
  auto kv = put(buffers, op.operands[1], cache.data(), cache.size() * 2);
  ASSERT_TRUE(kv.ok());
  ASSERT_TRUE(put(buffers, op.operands[2], slots.data(), slots.size() * 4).ok());
  ASSERT_TRUE(put(buffers, op.operands[3], seqStarts.data(), seqStarts.size() * 4).ok());
  ASSERT_TRUE(put(buffers, op.operands[4], contextLens.data(), contextLens.size() * 4).ok());
  ASSERT_TRUE(put(buffers, op.operands[5], tables.data(), tables.size() * 4).ok());
  auto out = put(buffers, op.operands[6], nullptr, reference.size() * 2);
  ASSERT_TRUE(out.ok());
  if (program.workspaceBytes > 0) {
    // Split-K records; the workspace's contents are undefined between ops,
    // so it starts as NaNs (0xFF bytes).
    OperandInfo workspace;
    workspace.kind = OperandKind::Workspace;
    workspace.index = 0;
    auto scratch = put(buffers, workspace, nullptr, program.workspaceBytes);
    ASSERT_TRUE(scratch.ok());
    ASSERT_TRUE(gGpu->fill(*scratch, 0xFF).ok());
  }
  Status ran = gGpu->run(launch, buffers.bindings.map(), tokens, seqs);
  ASSERT_TRUE(ran.ok()) << ran.message();
  EXPECT_TRUE(get<uint16_t>(*kv, cache.size()) == cpuCache) << "KV cache slots";
  auto got = get<uint16_t>(*out, reference.size());
  const bool tiled = kernel == "paged_attention_tiled";
  double maxV = 0, maxK = 0;
  for (uint16_t v : cache)
    maxV = std::max(maxV, std::fabs(static_cast<double>(halfToFloat(v))));
  for (uint16_t v : qkv)
    maxV = std::max(maxV, std::fabs(static_cast<double>(halfToFloat(v))));
  for (size_t at = 0; at < layer; at += static_cast<size_t>(d))
    maxK = std::max(maxK, codegen::testing::halfNorm(cache.data() + at, d));
  const int64_t row = (hq + 2 * hkv) * d;
  for (int t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < hkv; ++h)
      maxK = std::max(maxK, codegen::testing::halfNorm(qkv.data() + t * row + (hq + h) * d, d));
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  int bad = 0;
  for (int s = 0; s < seqs; ++s)
    for (int t = seqStarts[static_cast<size_t>(s)]; t < seqStarts[static_cast<size_t>(s) + 1]; ++t)
      for (int64_t h = 0; h < hq; ++h) {
        const int64_t n =
            contextLens[static_cast<size_t>(s)] - (seqStarts[static_cast<size_t>(s) + 1] - t) + 1;
        const double a = codegen::testing::halfNorm(qkv.data() + t * row + h * d, d) * maxK * scale;
        const double bound = tiled ? codegen::testing::tiledAttentionBound(n, d, a, maxV)
                                   : codegen::testing::pagedAttentionBound(n, maxV);
        for (int64_t e = 0; e < d; ++e) {
          const size_t i = static_cast<size_t>((t * hq + h) * d + e);
          if (!halfClose(got[i], reference[i], bound) && bad++ < 5)
            ADD_FAILURE() << op.name << " T=" << tokens << " token " << t << " head " << h << " ["
                          << e << "]: gpu " << halfToFloat(got[i]) << ", cpu "
                          << halfToFloat(reference[i]);
        }
      }
  EXPECT_EQ(bad, 0);
}

// ---- Element-wise, norms, routing ------------------------------------------

void expectClose(const std::vector<uint16_t> &got, const std::vector<uint16_t> &want, double rel,
                 const std::string &what) {
  // The error of a sum is relative to its terms, not to its result: where
  // terms cancel (RoPE's x cos - y sin, a gated residual add) a tiny output
  // keeps the terms' absolute error, which the H200 run showed 2 FP16
  // subnormal steps wide. The largest output bounds the terms' size.
  double largest = 0;
  for (uint16_t w : want)
    largest = std::max(largest, static_cast<double>(std::fabs(halfToFloat(w))));
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!halfClose(got[i], want[i],
                   rel * std::max(static_cast<double>(std::fabs(halfToFloat(want[i]))), largest)) &&
        bad++ < 5)
      ADD_FAILURE() << what << " [" << i << "]: gpu " << halfToFloat(got[i]) << ", cpu "
                    << halfToFloat(want[i]);
  EXPECT_EQ(bad, 0) << what;
}

void checkSmallOp(const OpInfo &op, const PlannedLaunch &launch, const std::string &launchKernel,
                  int tokens) {
  std::mt19937 rng(static_cast<uint32_t>(tokens * 7));
  cpu::ThreadPool pool(threads());
  Buffers buffers;
  const std::string what = op.name + " at T = " + std::to_string(tokens);
  using plan::OpKind;
  const plan::OpParamsUnion &u = op.params;
  const int64_t dim = op.kind == OpKind::Embedding        ? u.AsEmbeddingParams()->dim
                      : op.kind == OpKind::RmsNorm        ? u.AsRmsNormParams()->dim
                      : op.kind == OpKind::AddRmsNorm     ? u.AsAddRmsNormParams()->dim
                      : op.kind == OpKind::SiluMul        ? u.AsSiluMulParams()->dim
                      : op.kind == OpKind::SigmoidGateAdd ? u.AsSigmoidGateAddParams()->dim
                      : op.kind == OpKind::GatherRows     ? u.AsGatherRowsParams()->dim
                      : op.kind == OpKind::MoeCombine     ? u.AsMoeCombineParams()->dim
                      : op.kind == OpKind::SigmoidMul     ? u.AsSigmoidMulParams()->dim
                      : op.kind == OpKind::GatherHidden   ? u.AsGatherHiddenParams()->dim
                                                          : 0;
  auto run = [&] {
    Status ran = gGpu->run(launch, buffers.bindings.map(), tokens, tokens);
    ASSERT_TRUE(ran.ok()) << ran.message();
  };
  if (op.kind == OpKind::Embedding) {
    const int64_t rows = u.AsEmbeddingParams()->vocab_rows;
    std::vector<uint16_t> table = randomHalves(rng, static_cast<size_t>(rows * dim));
    std::vector<int32_t> ids(static_cast<size_t>(tokens));
    std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(rows + 100));
    for (int32_t &t : ids)
      t = id(rng);
    std::vector<uint16_t> want(static_cast<size_t>(tokens * dim));
    cpu::embedding({tokens, dim, 0, rows}, ids.data(), table.data(), want.data(), pool);
    ASSERT_TRUE(put(buffers, op.operands[0], ids.data(), ids.size() * 4).ok());
    ASSERT_TRUE(put(buffers, op.operands[1], table.data(), table.size() * 2).ok());
    auto out = put(buffers, op.operands[2], nullptr, want.size() * 2);
    run();
    EXPECT_TRUE(get<uint16_t>(*out, want.size()) == want) << what;
  } else if (op.kind == OpKind::RmsNorm || op.kind == OpKind::AddRmsNorm) {
    const bool add = op.kind == OpKind::AddRmsNorm;
    const float eps = add ? u.AsAddRmsNormParams()->eps : u.AsRmsNormParams()->eps;
    const bool resF32 = add && op.operands[1].f32;
    std::vector<uint16_t> in = randomHalves(rng, static_cast<size_t>(tokens * dim), 2.0f),
                          w = randomHalves(rng, static_cast<size_t>(dim));
    std::vector<uint16_t> res16 = randomHalves(rng, static_cast<size_t>(tokens * dim), 2.0f);
    std::vector<float> res32(static_cast<size_t>(tokens * dim));
    for (size_t i = 0; i < res32.size(); ++i)
      res32[i] = halfToFloat(res16[i]) * 1.001f;
    std::vector<uint16_t> want(static_cast<size_t>(tokens * dim)), wantRes16 = res16;
    std::vector<float> wantRes32 = res32;
    void *res = resF32 ? static_cast<void *>(wantRes32.data()) : wantRes16.data();
    if (add)
      cpu::addRmsNorm(
          {tokens, dim, eps, cpu::DType::F16, resF32 ? cpu::DType::F32 : cpu::DType::F16},
          in.data(), res, w.data(), want.data(), pool);
    else
      cpu::rmsNorm({tokens, dim, eps, cpu::DType::F16}, in.data(), w.data(), want.data(), pool);
    ASSERT_TRUE(put(buffers, op.operands[0], in.data(), in.size() * 2).ok());
    Result<DeviceBuffer> resBuffer = Error("");
    if (add)
      resBuffer = put(buffers, op.operands[1],
                      resF32 ? static_cast<const void *>(res32.data()) : res16.data(),
                      res32.size() * (resF32 ? 4 : 2));
    ASSERT_TRUE(put(buffers, op.operands[add ? 2 : 1], w.data(), w.size() * 2).ok());
    auto out = put(buffers, op.operands[add ? 3 : 2], nullptr, want.size() * 2);
    run();
    expectClose(get<uint16_t>(*out, want.size()), want, (dim + 8) * std::ldexp(1.0, -22), what);
    if (add && resF32) {
      EXPECT_TRUE(get<float>(*resBuffer, res32.size()) == wantRes32) << what << ": residual";
    } else if (add) {
      EXPECT_TRUE(get<uint16_t>(*resBuffer, res16.size()) == wantRes16) << what << ": residual";
    }
  } else if (op.kind == OpKind::QkNormRope) {
    const plan::QkNormRopeParamsT &rp = *u.AsQkNormRopeParams();
    const int64_t hq = rp.num_heads, hkv = rp.num_kv_heads, d = rp.head_dim;
    std::vector<uint16_t> qkv = randomHalves(rng, static_cast<size_t>(tokens * (hq + 2 * hkv) * d));
    std::vector<uint16_t> qn = randomHalves(rng, static_cast<size_t>(d)),
                          kn = randomHalves(rng, static_cast<size_t>(d));
    std::vector<int32_t> positions(static_cast<size_t>(tokens));
    for (int t = 0; t < tokens; ++t)
      positions[static_cast<size_t>(t)] = t * 331 % 40000;
    std::vector<uint16_t> want = qkv;
    cpu::qkNormRope({tokens, hq, hkv, d, rp.rope_theta, rp.eps}, want.data(), positions.data(),
                    qn.data(), kn.data(), pool);
    auto buffer = put(buffers, op.operands[0], qkv.data(), qkv.size() * 2);
    ASSERT_TRUE(put(buffers, op.operands[1], positions.data(), positions.size() * 4).ok());
    ASSERT_TRUE(put(buffers, op.operands[2], qn.data(), qn.size() * 2).ok());
    ASSERT_TRUE(put(buffers, op.operands[3], kn.data(), kn.size() * 2).ok());
    run();
    expectClose(get<uint16_t>(*buffer, want.size()), want, (d + 8) * std::ldexp(1.0, -22), what);
  } else if (op.kind == OpKind::SiluMul || op.kind == OpKind::SigmoidGateAdd) {
    const bool silu = op.kind == OpKind::SiluMul;
    std::vector<uint16_t> a = randomHalves(rng, static_cast<size_t>(tokens * dim * (silu ? 2 : 1)));
    std::vector<uint16_t> v = randomHalves(rng, static_cast<size_t>(tokens * dim));
    std::vector<uint16_t> gate = randomHalves(rng, static_cast<size_t>(tokens));
    std::vector<uint16_t> want =
        silu ? std::vector<uint16_t>(static_cast<size_t>(tokens * dim)) : a;
    if (silu)
      cpu::siluMul({tokens, dim}, a.data(), want.data(), pool);
    else
      cpu::sigmoidGateAdd({tokens, dim, cpu::DType::F16}, want.data(), v.data(), gate.data(), pool);
    auto first = put(buffers, op.operands[0], a.data(), a.size() * 2);
    Result<DeviceBuffer> out = first;
    if (silu) {
      out = put(buffers, op.operands[1], nullptr, want.size() * 2);
    } else {
      ASSERT_TRUE(put(buffers, op.operands[1], v.data(), v.size() * 2).ok());
      ASSERT_TRUE(put(buffers, op.operands[2], gate.data(), gate.size() * 2).ok());
    }
    run();
    expectClose(get<uint16_t>(*out, want.size()), want, std::ldexp(8.0, -22), what);
  } else if (op.kind == OpKind::GatherRows || op.kind == OpKind::GatherHidden) {
    // Rows picked backwards from a buffer of 3 T rows (the logits rows of
    // T tokens, or a draft step's hidden rows out of a longer step's).
    const int64_t rows = tokens * 3;
    std::vector<uint16_t> in = randomHalves(rng, static_cast<size_t>(rows * dim));
    std::vector<int32_t> pick(static_cast<size_t>(tokens));
    for (int t = 0; t < tokens; ++t)
      pick[static_cast<size_t>(t)] = static_cast<int32_t>(rows - 1 - 2 * t);
    std::vector<uint16_t> want(static_cast<size_t>(tokens * dim));
    cpu::gatherRows({tokens, dim, cpu::DType::F16}, in.data(), pick.data(), want.data(), pool);
    ASSERT_TRUE(put(buffers, op.operands[0], in.data(), in.size() * 2).ok());
    ASSERT_TRUE(put(buffers, op.operands[1], pick.data(), pick.size() * 4).ok());
    auto out = put(buffers, op.operands[2], nullptr, want.size() * 2);
    run();
    EXPECT_TRUE(get<uint16_t>(*out, want.size()) == want) << what;
  } else if (op.kind == OpKind::MoeRouter) {
    const plan::MoeRouterParamsT &mp = *u.AsMoeRouterParams();
    const int64_t e = mp.num_experts, k = mp.top_k;
    // Distinct logits 0.01 apart: no near-ties for the GPU's exp to flip.
    std::vector<float> logits(static_cast<size_t>(tokens * e));
    std::vector<int> perm(static_cast<size_t>(e));
    for (int t = 0; t < tokens; ++t) {
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      for (int64_t i = 0; i < e; ++i)
        logits[static_cast<size_t>(t * e + i)] =
            0.01f * static_cast<float>(perm[static_cast<size_t>(i)]) - 0.6f;
    }
    std::vector<int32_t> ids(static_cast<size_t>(tokens * k));
    std::vector<float> weights(ids.size());
    cpu::moeRouter({tokens, e, k, mp.renormalize}, logits.data(), ids.data(), weights.data(), pool);
    ASSERT_TRUE(put(buffers, op.operands[0], logits.data(), logits.size() * 4).ok());
    auto outIds = put(buffers, op.operands[1], nullptr, ids.size() * 4);
    auto outWeights = put(buffers, op.operands[2], nullptr, weights.size() * 4);
    run();
    EXPECT_TRUE(get<int32_t>(*outIds, ids.size()) == ids) << what;
    auto gotWeights = get<float>(*outWeights, weights.size());
    for (size_t i = 0; i < weights.size(); ++i)
      EXPECT_NEAR(gotWeights[i], weights[i], 4e-7f * weights[i] + 1e-9f) << what << " " << i;
  } else if (op.kind == OpKind::MoeAlign) {
    Routing r = route(rng, tokens, u.AsMoeAlignParams()->num_experts, u.AsMoeAlignParams()->top_k);
    ASSERT_TRUE(put(buffers, op.operands[0], r.ids.data(), r.ids.size() * 4).ok());
    auto order = put(buffers, op.operands[1], nullptr, r.order.size() * 4);
    auto starts = put(buffers, op.operands[2], nullptr, r.starts.size() * 4);
    run();
    EXPECT_TRUE(get<int32_t>(*order, r.order.size()) == r.order) << what;
    EXPECT_TRUE(get<int32_t>(*starts, r.starts.size()) == r.starts) << what;
  } else if (op.kind == OpKind::MoeCombine) {
    const int64_t k = u.AsMoeCombineParams()->top_k, e = 128;
    Routing r = route(rng, tokens, e, k);
    std::vector<uint16_t> rows = randomHalves(rng, static_cast<size_t>(tokens * k * dim));
    std::vector<uint16_t> want(static_cast<size_t>(tokens * dim));
    cpu::moeCombine({tokens, k, dim, u.AsMoeCombineParams()->accumulate}, rows.data(),
                    r.order.data(), r.weights.data(), want.data(), pool);
    ASSERT_TRUE(put(buffers, op.operands[0], rows.data(), rows.size() * 2).ok());
    ASSERT_TRUE(put(buffers, op.operands[1], r.order.data(), r.order.size() * 4).ok());
    ASSERT_TRUE(put(buffers, op.operands[2], r.weights.data(), r.weights.size() * 4).ok());
    auto out = put(buffers, op.operands[3], nullptr, want.size() * 2);
    run();
    EXPECT_TRUE(get<uint16_t>(*out, want.size()) == want) << what;
  } else if (op.kind == OpKind::EmaScan) {
    // One token per sequence (S = T here): a third start at position 0, the
    // others continue from their slot, every fifth has no slot.
    const int64_t d = u.AsEmaScanParams()->dim, slots = tokens;
    std::vector<uint16_t> in = randomHalves(rng, static_cast<size_t>(tokens * d), 2.0f);
    std::vector<uint16_t> decay(static_cast<size_t>(d));
    std::uniform_real_distribution<float> a(0.05f, 0.95f);
    for (uint16_t &x : decay)
      x = floatToHalf(a(rng));
    std::vector<float> state(static_cast<size_t>(slots * d));
    for (float &x : state)
      x = a(rng) - 0.5f;
    std::vector<int32_t> starts(static_cast<size_t>(tokens + 1)),
        contexts(static_cast<size_t>(tokens)), stateSlots(static_cast<size_t>(tokens));
    for (int t = 0; t < tokens; ++t) {
      starts[static_cast<size_t>(t + 1)] = t + 1;
      contexts[static_cast<size_t>(t)] = t % 3 == 0 ? 1 : 7;
      stateSlots[static_cast<size_t>(t)] = t % 5 == 4 ? -1 : t;
    }
    std::vector<float> wantState = state;
    std::vector<uint16_t> want(in.size());
    cpu::emaScan({tokens, tokens, d}, in.data(), decay.data(), wantState.data(), starts.data(),
                 contexts.data(), stateSlots.data(), nullptr, want.data(), pool);
    const std::vector<int32_t> noCopies(static_cast<size_t>(tokens), -1);
    ASSERT_TRUE(put(buffers, op.operands[0], in.data(), in.size() * 2).ok());
    ASSERT_TRUE(put(buffers, op.operands[1], decay.data(), decay.size() * 2).ok());
    auto stateBuffer = put(buffers, op.operands[2], state.data(), state.size() * 4);
    ASSERT_TRUE(put(buffers, op.operands[3], starts.data(), starts.size() * 4).ok());
    ASSERT_TRUE(put(buffers, op.operands[4], contexts.data(), contexts.size() * 4).ok());
    ASSERT_TRUE(put(buffers, op.operands[5], stateSlots.data(), stateSlots.size() * 4).ok());
    ASSERT_TRUE(put(buffers, op.operands[6], noCopies.data(), noCopies.size() * 4).ok());
    auto out = put(buffers, op.operands[7], nullptr, want.size() * 2);
    run();
    // The kernel rounds as the cpu op does (--fmad=false): bit for bit.
    EXPECT_TRUE(get<uint16_t>(*out, want.size()) == want) << what;
    EXPECT_TRUE(get<float>(*stateBuffer, wantState.size()) == wantState) << what << ": state";
  } else if (op.kind == OpKind::CausalConv1d || op.kind == OpKind::GatedDeltaRule) {
    // T tokens in up to four sequences: the first starts at position 0,
    // the others continue from their slot; the fourth keeps no slot.
    const int64_t seqs = std::min<int64_t>(tokens, 4), slots = 4;
    std::vector<int32_t> starts(static_cast<size_t>(seqs + 1)),
        contexts(static_cast<size_t>(seqs)), stateSlots(static_cast<size_t>(seqs));
    for (int64_t s = 0; s < seqs; ++s) {
      starts[static_cast<size_t>(s + 1)] = static_cast<int32_t>(tokens * (s + 1) / seqs);
      const int32_t n = starts[static_cast<size_t>(s + 1)] - starts[static_cast<size_t>(s)];
      contexts[static_cast<size_t>(s)] = s == 0 ? n : n + 9;
      stateSlots[static_cast<size_t>(s)] = s == 3 ? -1 : static_cast<int32_t>(slots - 1 - s);
    }
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    const std::vector<int32_t> noCopies(static_cast<size_t>(tokens), -1);
    auto runSeqs = [&](int64_t n) {
      Status ran = gGpu->run(launch, buffers.bindings.map(), tokens, static_cast<int>(n));
      ASSERT_TRUE(ran.ok()) << ran.message();
    };
    if (op.kind == OpKind::CausalConv1d) {
      const int64_t c = u.AsCausalConv1dParams()->dim, k = u.AsCausalConv1dParams()->kernel;
      std::vector<uint16_t> in = randomHalves(rng, static_cast<size_t>(tokens * c), 2.0f),
                            w = randomHalves(rng, static_cast<size_t>(c * k), 0.6f),
                            state = randomHalves(rng, static_cast<size_t>(slots * (k - 1) * c));
      std::vector<uint16_t> wantState = state, want(in.size());
      cpu::causalConv1d({tokens, seqs, c, k}, in.data(), w.data(), wantState.data(), starts.data(),
                        contexts.data(), stateSlots.data(), nullptr, want.data(), pool);
      ASSERT_TRUE(put(buffers, op.operands[0], in.data(), in.size() * 2).ok());
      ASSERT_TRUE(put(buffers, op.operands[1], w.data(), w.size() * 2).ok());
      auto stateBuffer = put(buffers, op.operands[2], state.data(), state.size() * 2);
      ASSERT_TRUE(put(buffers, op.operands[3], starts.data(), starts.size() * 4).ok());
      ASSERT_TRUE(put(buffers, op.operands[4], contexts.data(), contexts.size() * 4).ok());
      ASSERT_TRUE(put(buffers, op.operands[5], stateSlots.data(), stateSlots.size() * 4).ok());
      ASSERT_TRUE(put(buffers, op.operands[6], noCopies.data(), noCopies.size() * 4).ok());
      auto out = put(buffers, op.operands[7], nullptr, want.size() * 2);
      runSeqs(seqs);
      // The device's expf (SiLU) is not the host's: an ulp or two.
      expectClose(get<uint16_t>(*out, want.size()), want, std::ldexp(8.0, -22), what);
      // The state is inputs moved: exact.
      EXPECT_TRUE(get<uint16_t>(*stateBuffer, wantState.size()) == wantState) << what << ": state";
    } else {
      const plan::GatedDeltaRuleParamsT &g = *u.AsGatedDeltaRuleParams();
      const int64_t hk = g.key_heads, hv = g.value_heads, dk = g.key_dim, dv = g.value_dim;
      std::vector<uint16_t> qkv = randomHalves(rng, static_cast<size_t>(tokens * (2 * hk * dk + hv * dv))),
                            gates = randomHalves(rng, static_cast<size_t>(tokens * 2 * hv), 1.5f),
                            z = randomHalves(rng, static_cast<size_t>(tokens * hv * dv)),
                            norm = randomHalves(rng, static_cast<size_t>(dv), 0.5f);
      std::vector<float> aLog(static_cast<size_t>(hv)), dtBias(aLog.size()),
          state(static_cast<size_t>(slots * hv * dk * dv));
      for (size_t h = 0; h < aLog.size(); ++h) {
        aLog[h] = 1.5f * uni(rng) - 0.5f;
        dtBias[h] = uni(rng);
      }
      for (float &x : state)
        x = 0.2f * uni(rng);
      std::vector<float> wantState = state;
      std::vector<uint16_t> want(static_cast<size_t>(tokens * hv * dv));
      cpu::gatedDeltaRule({tokens, seqs, hk, hv, dk, dv, g.eps}, qkv.data(), gates.data(), z.data(),
                          aLog.data(), dtBias.data(), norm.data(), wantState.data(), starts.data(),
                          contexts.data(), stateSlots.data(), nullptr, want.data(), pool);
      ASSERT_TRUE(put(buffers, op.operands[0], qkv.data(), qkv.size() * 2).ok());
      ASSERT_TRUE(put(buffers, op.operands[1], gates.data(), gates.size() * 2).ok());
      ASSERT_TRUE(put(buffers, op.operands[2], z.data(), z.size() * 2).ok());
      ASSERT_TRUE(put(buffers, op.operands[3], aLog.data(), aLog.size() * 4).ok());
      ASSERT_TRUE(put(buffers, op.operands[4], dtBias.data(), dtBias.size() * 4).ok());
      ASSERT_TRUE(put(buffers, op.operands[5], norm.data(), norm.size() * 2).ok());
      auto stateBuffer = put(buffers, op.operands[6], state.data(), state.size() * 4);
      ASSERT_TRUE(put(buffers, op.operands[7], starts.data(), starts.size() * 4).ok());
      ASSERT_TRUE(put(buffers, op.operands[8], contexts.data(), contexts.size() * 4).ok());
      ASSERT_TRUE(put(buffers, op.operands[9], stateSlots.data(), stateSlots.size() * 4).ok());
      ASSERT_TRUE(put(buffers, op.operands[10], noCopies.data(), noCopies.size() * 4).ok());
      auto out = put(buffers, op.operands[11], nullptr, want.size() * 2);
      runSeqs(seqs);
      const std::vector<uint16_t> got = get<uint16_t>(*out, want.size());
      const std::vector<float> gotState = get<float>(*stateBuffer, wantState.size());
      float largest = 0, worst = 0;
      for (size_t i = 0; i < wantState.size(); ++i) {
        largest = std::max(largest, std::fabs(wantState[i]));
        worst = std::max(worst, std::fabs(gotState[i] - wantState[i]));
      }
      if (launchKernel == "gated_delta_rule_chunked") {
        // FP16 operands on tensor cores (the chunked form): the bounds of
        // SimtGdnChunkedTest.cpp, 2^-5 + 2^-6 |cpu| per output and 2^-6 of
        // the largest state value.
        double outWorst = 0;
        int bad = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          const double gv = halfToFloat(got[i]), wv = halfToFloat(want[i]);
          outWorst = std::max(outWorst, std::fabs(gv - wv) / (1.0 + std::fabs(wv)));
          if (!(std::fabs(gv - wv) <= 0.03125 + 0.015625 * std::fabs(wv)) && bad++ < 5)
            ADD_FAILURE() << what << " [" << i << "]: gpu " << gv << ", cpu " << wv;
        }
        EXPECT_EQ(bad, 0) << what;
        EXPECT_LE(worst, 0.015625f * largest) << what << ": state";
        std::printf("%s: outputs within %.3g (|gpu - cpu| / (1 + |cpu|)), states within %.3g of "
                    "the largest\n",
                    what.c_str(), outWorst, largest > 0 ? worst / largest : 0.0);
      } else {
        // The emulator matches the cpu op bit for bit on the host's libm;
        // the device's expf, log1pf and rsqrt differ by an ulp or two, which
        // the recurrence and the gated norm carry: a few FP16 ulps of the
        // output.
        expectClose(got, want, std::ldexp(8.0, -11), what);
        EXPECT_LE(worst, 1e-5f * largest) << what << ": state";
      }
    }
  } else if (op.kind == OpKind::SigmoidMul) {
    std::vector<uint16_t> x = randomHalves(rng, static_cast<size_t>(tokens * dim), 2.0f),
                          g = randomHalves(rng, static_cast<size_t>(tokens * dim), 3.0f),
                          want(static_cast<size_t>(tokens * dim));
    cpu::sigmoidMul({tokens, dim}, x.data(), g.data(), want.data(), pool);
    ASSERT_TRUE(put(buffers, op.operands[0], x.data(), x.size() * 2).ok());
    ASSERT_TRUE(put(buffers, op.operands[1], g.data(), g.size() * 2).ok());
    auto out = put(buffers, op.operands[2], nullptr, want.size() * 2);
    run();
    expectClose(get<uint16_t>(*out, want.size()), want, std::ldexp(8.0, -22), what);
  } else if (op.kind == OpKind::Concat) {
    const int64_t aDim = u.AsConcatParams()->a_dim, bDim = u.AsConcatParams()->b_dim;
    std::vector<uint16_t> a = randomHalves(rng, static_cast<size_t>(tokens * aDim)),
                          b = randomHalves(rng, static_cast<size_t>(tokens * bDim)),
                          want(static_cast<size_t>(tokens * (aDim + bDim)));
    cpu::concatRows({tokens, aDim, bDim, cpu::DType::F16}, a.data(), b.data(), want.data(), pool);
    ASSERT_TRUE(put(buffers, op.operands[0], a.data(), a.size() * 2).ok());
    ASSERT_TRUE(put(buffers, op.operands[1], b.data(), b.size() * 2).ok());
    auto out = put(buffers, op.operands[2], nullptr, want.size() * 2);
    run();
    EXPECT_TRUE(get<uint16_t>(*out, want.size()) == want) << what;
  } else {
    FAIL() << "no GPU check for " << plan::EnumNameOpKind(op.kind);
  }
}

// ---- The test ----------------------------------------------------------------

std::vector<GpuCase> &cases() {
  static std::vector<GpuCase> c = gpuCases();
  return c;
}

TEST_P(GpuKernels, MatchesTheCpuBackend) {
  const GpuCase &c = cases()[GetParam()];
  KernelRegistry registry;
  auto planned =
      codegen::planLaunches(c.op.op, c.op.variants, c.program, codegen::TargetInfo{}, registry);
  ASSERT_TRUE(planned.ok()) << planned.message();
  if (planned->empty())
    GTEST_SKIP() << plan::EnumNameOpKind(c.op.op.kind)
                 << " runs on NCCL (tests/gpu/EndToEndTest.cpp)";
  auto kernels = buildKernels(registry);
  ASSERT_TRUE(kernels.ok()) << kernels.message();
  // The registry's kernel indices are this set's; load it fresh.
  auto gpu = Gpu::open();
  ASSERT_TRUE(gpu.ok()) << gpu.message();
  std::swap(gGpu, *gpu);
  Status loaded = gGpu->load(*kernels);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  for (int tokens : c.tokens) {
    const PlannedLaunch *launch = launchFor(*planned, tokens);
    ASSERT_TRUE(launch) << "no variant for T = " << tokens;
    const plan::OpKind kind = c.op.op.kind;
    if (kind == plan::OpKind::QLinear || kind == plan::OpKind::Linear)
      checkLinear(c.op.op, *launch, tokens);
    else if (kind == plan::OpKind::MoeGroupedQLinear || kind == plan::OpKind::MoeGroupedLinear)
      checkMoeLinear(c.op.op, *launch, tokens);
    else if (kind == plan::OpKind::Attention)
      checkAttention(c.op.op, c.program, *launch, registry.requests()[launch->kernel].kernel,
                     tokens);
    else
      checkSmallOp(c.op.op, *launch, registry.requests()[launch->kernel].kernel, tokens);
  }
}

// The cases run every step-program kernel of the registry (the sampler's,
// top_candidates, runs in gpu_e2e_test). Needs no GPU.
TEST(GpuKernelCases, CoverEveryKernelOfTheRegistry) {
  KernelRegistry registry;
  auto planned = planCases(cases(), registry);
  ASSERT_TRUE(planned.ok()) << planned.message();
  std::set<std::string> covered;
  for (const codegen::KernelRequest &r : registry.requests())
    covered.insert(r.kernel);
  for (const codegen::KernelDef &k : codegen::allKernels()) {
    if (!k.op)
      continue;
    EXPECT_TRUE(covered.count(std::string(k.name))) << k.name << " has no GPU case";
  }
}

INSTANTIATE_TEST_SUITE_P(ModelOps, GpuKernels, ::testing::Range<size_t>(0, cases().size()),
                         [](const ::testing::TestParamInfo<size_t> &info) {
                           std::string name = cases()[info.param].op.op.name;
                           for (char &ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch)))
                               ch = '_';
                           return name;
                         });

} // namespace
} // namespace volt::gpu
