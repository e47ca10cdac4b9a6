//===- SimtHarness.h - launching planned kernels on the emulator -*- C++ -*-===//
//
// A test plans an op's launches with compiler/codegen (the same code voltc
// runs), checks that the planner's kernel request has the constants of the
// template instance compiled into the test, binds the operands to host
// buffers, and runs the instance over the planned grid: the arguments are
// read in the entry point's parameter order from the planned Arg list,
// each checked for its kind, exactly as the cuda backend packs them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tests/unit/codegen/simt/Simt.h"

// Every shared header at file scope, before any instance's namespace.
#include "common/blocks.cuh"
#include "common/split_attention.cuh"
#include "common/gemm.cuh"
#include "common/gemv.cuh"
#include "common/math.cuh"
#include "common/moe.cuh"
#include "common/nvfp4.cuh"

#include "compiler/codegen/Launches.h"
#include "runtime/numerics/Nvfp4.h"

#include <gtest/gtest.h>

#include <map>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace volt::simt {

using codegen::KernelRegistry;
using codegen::LaunchArg;
using codegen::OperandInfo;
using codegen::OperandKind;
using codegen::PlannedLaunch;

/// Host buffers standing for the operands, and the step's T and S.
struct Memory {
  std::map<std::pair<int, uint32_t>, uint8_t *> base;
  int tokens = 0, seqs = 0;
  /// Logits rows R; -1: one per sequence.
  int logitsRows = -1;
  int rows() const { return logitsRows < 0 ? seqs : logitsRows; }

  void bind(const OperandInfo &o, const void *p) {
    base[{static_cast<int>(o.kind), o.index}] = static_cast<uint8_t *>(const_cast<void *>(p));
  }
};

/// The planned arguments, consumed in parameter order.
class Args {
public:
  Args(const PlannedLaunch &launch, const Memory &memory) : launch_(launch), memory_(memory) {}
  ~Args() { EXPECT_EQ(next_, launch_.args.size()) << "the entry point takes fewer arguments"; }

  template <typename T> T *pointer() {
    const LaunchArg &a = take(LaunchArg::Kind::Pointer);
    auto it = memory_.base.find({static_cast<int>(a.operandKind), a.operandIndex});
    if (it == memory_.base.end()) {
      ADD_FAILURE() << "argument " << next_ - 1 << ": operand not bound";
      return nullptr;
    }
    return reinterpret_cast<T *>(it->second + a.offset);
  }
  int i32() {
    const LaunchArg &a = launch_.args.at(next_++);
    switch (a.kind) {
    case LaunchArg::Kind::I32:
      return a.i32;
    case LaunchArg::Kind::TokenCount:
      return memory_.tokens;
    case LaunchArg::Kind::SeqCount:
      return memory_.seqs;
    case LaunchArg::Kind::RowCount:
      return memory_.rows();
    default:
      ADD_FAILURE() << "argument " << next_ - 1 << " is not an integer";
      return 0;
    }
  }
  float f32() { return take(LaunchArg::Kind::F32).f32; }
  /// A by-value struct of floats (the GEMMs' epilogue scales).
  template <typename S> S floats() {
    S s;
    float *v = reinterpret_cast<float *>(&s);
    for (size_t i = 0; i < sizeof(S) / sizeof(float); ++i)
      v[i] = f32();
    return s;
  }

private:
  const LaunchArg &take(LaunchArg::Kind kind) {
    if (next_ >= launch_.args.size()) {
      ADD_FAILURE() << "the entry point takes more arguments than planned";
      static LaunchArg none;
      return none;
    }
    const LaunchArg &a = launch_.args[next_++];
    EXPECT_EQ(static_cast<int>(a.kind), static_cast<int>(kind))
        << "argument " << next_ - 1 << " has another kind than its parameter";
    return a;
  }
  const PlannedLaunch &launch_;
  const Memory &memory_;
  size_t next_ = 0;
};

/// Runs one planned launch at the memory's T and S.
inline void run(const PlannedLaunch &l, const Memory &m, const std::function<void(Args &)> &call) {
  dim3 grid{static_cast<unsigned>(l.grid[0].at(m.tokens, m.seqs, m.rows())),
            static_cast<unsigned>(l.grid[1].at(m.tokens, m.seqs, m.rows())),
            static_cast<unsigned>(l.grid[2].at(m.tokens, m.seqs, m.rows()))};
  dim3 block{l.block[0], l.block[1], l.block[2]};
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    return;
  sim::launch(grid, block, l.sharedBytes, [&] {
    Args a(l, m);
    call(a);
  });
}

/// Checks that the planner asked for the instance compiled into the test.
inline void expectInstance(const codegen::KernelRequest &planned,
                           const std::vector<std::pair<std::string, int64_t>> &compiled,
                           uint32_t threads) {
  codegen::KernelRequest want{planned.kernel, {}, threads, planned.dynamicSharedBytes};
  for (const auto &[name, value] : compiled)
    want.set(name, value);
  ASSERT_EQ(planned.key(), want.key()) << "the test's instance differs from the planned kernel";
}

// ---- Inputs -----------------------------------------------------------

inline std::vector<uint16_t> randomHalves(std::mt19937 &rng, size_t n, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<uint16_t> v(n);
  for (uint16_t &h : v)
    h = floatToHalf(d(rng));
  return v;
}

/// An NVFP4 matrix of `rows` x `cols` in the canonical layout (packed, then
/// block scales at nvfp4ScalesOffset), as a pack entry holds it.
struct Nvfp4Entry {
  std::vector<uint8_t> bytes;
  uint64_t scalesOffset = 0;
  int64_t rows = 0, cols = 0;

  const uint8_t *packed() const { return bytes.data(); }
  const uint8_t *scales() const { return bytes.data() + scalesOffset; }
  float weight(int64_t r, int64_t c) const {
    uint8_t byte = packed()[r * (cols / 2) + c / 2];
    uint8_t code = c % 2 == 0 ? byte & 0x0F : byte >> 4;
    return nvfp4::decodeE2M1(code) * nvfp4::decodeE4M3(scales()[r * (cols / 16) + c / 16]);
  }
};

/// Appends an NVFP4 MoE entry's epilogue scales (2^14 x each global scale,
/// f32) at nvfp4EpilogueOffset, as the packer stores them.
inline void appendEpilogueScales(Nvfp4Entry &e, const std::vector<int64_t> &shape,
                                 const std::vector<float> &globalScales) {
  const uint64_t at = codegen::nvfp4EpilogueOffset(shape);
  e.bytes.resize(at + 4 * globalScales.size(), 0);
  for (size_t i = 0; i < globalScales.size(); ++i) {
    const float v = globalScales[i] * 16384.0f;
    std::memcpy(e.bytes.data() + at + 4 * i, &v, 4);
  }
}

inline Nvfp4Entry randomNvfp4(std::mt19937 &rng, std::vector<int64_t> shape) {
  Nvfp4Entry e;
  e.cols = shape.back();
  e.rows = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i)
    e.rows *= shape[i];
  e.scalesOffset = codegen::nvfp4ScalesOffset(shape);
  e.bytes.assign(e.scalesOffset + static_cast<size_t>(e.rows * e.cols / 16), 0);
  std::uniform_int_distribution<int> byte(0, 255), scale(0x28, 0x48);
  for (int64_t i = 0; i < e.rows * e.cols / 2; ++i)
    e.bytes[static_cast<size_t>(i)] = static_cast<uint8_t>(byte(rng));
  for (int64_t i = 0; i < e.rows * e.cols / 16; ++i)
    e.bytes[e.scalesOffset + static_cast<size_t>(i)] = static_cast<uint8_t>(scale(rng));
  return e;
}

// ---- Comparisons --------------------------------------------------------

/// Error bound of an FP32 sum of n exactly formed products whose absolute
/// values add up to `absSum`, in any order, with a tensor core's truncating
/// adds allowed (twice the round-to-nearest bound), scaled by `scale`.
inline double sumBound(int64_t n, double absSum) {
  return 2.0 * static_cast<double>(n + 2) * std::ldexp(1.0, -24) * absSum;
}

/// |got - want| within `bound` plus one FP16 rounding of each side.
inline bool halfClose(uint16_t got, uint16_t want, double bound) {
  double g = halfToFloat(got), w = halfToFloat(want);
  double tolerance =
      bound + std::ldexp(1.0, -10) * std::max(std::fabs(g), std::fabs(w)) + std::ldexp(1.0, -24);
  return std::fabs(g - w) <= tolerance;
}

} // namespace volt::simt
