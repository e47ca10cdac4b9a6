//===- Fp8Entry.h - random FP8 weight entries for kernel tests ----*- C++ -*-===//
//
// An FP8 weight as the packer writes it (WeightLayout Fp8RowScaled): E4M3
// bytes [rows, cols], then an f32 scale per row at fp8ScalesOffset. The
// host tests (tests/unit/codegen) and the GPU tests (tests/gpu) build their
// FP8 GEMM inputs with it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/codegen/Launches.h"
#include "runtime/cpu/Types.h"
#include "runtime/numerics/Nvfp4.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace volt::testing {

struct Fp8Entry {
  std::vector<uint8_t> bytes;
  uint64_t scalesOffset = 0;
  int64_t rows = 0, cols = 0;

  const float *rowScales() const {
    return reinterpret_cast<const float *>(bytes.data() + scalesOffset);
  }
  /// The weight's value: e4m3 x its row's scale, exactly.
  double weight(int64_t r, int64_t c) const {
    return static_cast<double>(nvfp4::decodeE4M3(bytes[static_cast<size_t>(r * cols + c)])) *
           rowScales()[r];
  }
  cpu::Fp8Matrix matrix() const { return {bytes.data(), rowScales(), rows, cols}; }
  /// The same entry with every weight's magnitude (sign bits cleared).
  Fp8Entry absolute() const {
    Fp8Entry a = *this;
    for (int64_t i = 0; i < rows * cols; ++i)
      a.bytes[static_cast<size_t>(i)] &= 0x7F;
    return a;
  }
};

/// Random finite E4M3 codes of both signs (subnormals included) and row
/// scales in [1e-4, 3e-3].
inline Fp8Entry randomFp8(std::mt19937 &rng, int64_t rows, int64_t cols) {
  Fp8Entry e;
  e.rows = rows;
  e.cols = cols;
  e.scalesOffset = codegen::fp8ScalesOffset({rows, cols});
  e.bytes.assign(e.scalesOffset + static_cast<size_t>(4 * rows), 0);
  std::uniform_int_distribution<int> code(0, 0x7E), sign(0, 1);
  for (int64_t i = 0; i < rows * cols; ++i)
    e.bytes[static_cast<size_t>(i)] = static_cast<uint8_t>(code(rng) | (sign(rng) << 7));
  std::uniform_real_distribution<float> scale(1e-4f, 3e-3f);
  for (int64_t r = 0; r < rows; ++r) {
    const float v = scale(rng);
    std::memcpy(e.bytes.data() + e.scalesOffset + 4 * r, &v, 4);
  }
  return e;
}

} // namespace volt::testing
