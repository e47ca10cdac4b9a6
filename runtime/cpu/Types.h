//===- Types.h - element types and views shared by the cpu ops --*- C++ -*-===//
//
// The cpu ops take raw pointers and a params struct per op; this header holds
// the few types several ops share. Activations are FP16 stored as their bit
// patterns (uint16_t); conversions go through runtime/numerics/Half.h
// semantics (round to nearest even).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>

namespace volt::cpu {

/// Element type of a buffer an op reads or writes where more than one is
/// allowed. The values match volt.plan.DType, so a plan's dtype converts with
/// a cast.
enum class DType : uint8_t {
  F32 = 0,
  F16 = 1,
};

/// What a GEMM (QLinear, MoeGroupedQLinear) does to its result before
/// storing it; the values match volt.plan.Epilogue.
enum class Epilogue : uint8_t {
  None = 0,
  /// The weight's N rows are gate (rows [0, N/2)) then up (rows [N/2, N));
  /// the output is silu(gate) * up, N/2 wide (SiluMul fused into the GEMM).
  SiluMul = 1,
};

/// How the GEMMs (Linear, QLinear and the grouped MoE ones) multiply.
/// Reference: the contract of Kernels.h, the bits every GPU kernel and
/// golden is checked against. Fast: activations rounded to BF16 and
/// multiplied by the weights rounded to BF16 (exact for NVFP4, FP8 and
/// weights that were BF16 before the plan held them in FP16) with
/// vdpbf16ps, summed in FP32 in another order; on a CPU without
/// AVX512_BF16 (fastNumericsAvailable() false), FP32 products fused into
/// their sums (fastFmaAvailable(); the reference's bits, since an FP16
/// activation times a plan's weight is exact in FP32), or else Reference.
enum class Numerics : uint8_t {
  Reference = 0,
  Fast = 1,
};

/// Where the cpu backend reads a plan's weights from (CpuBackendOptions).
enum class WeightMemory : uint8_t {
  /// HugePages where the kernel has transparent huge pages ("always" or
  /// "madvise") and the packs take at most 3/4 of the available memory
  /// (MemAvailable, which counts the packs' own page cache); Mapped
  /// otherwise.
  Auto,
  /// A copy of each pack in anonymous memory advised MADV_HUGEPAGE: a
  /// decode step streams every weight once, and in 2 MiB pages that takes
  /// 512 times fewer TLB entries than in the page cache's 4 KiB ones (the
  /// BF16 benchmark model decodes about 5 % faster,
  /// docs/perf/cpu-backend.md). The copy is made at load, and the mapped
  /// pages then leave the resident set; a pack file overwritten while the
  /// plan runs no longer reaches it (a mapping of a truncated file faults).
  HugePages,
  /// In place, from the mapped packs: nothing copied, and a plan larger
  /// than memory still runs (paged in from the file).
  Mapped,
};

/// Whether this CPU (and build) runs Numerics::Fast with BF16 dot
/// products as described above.
bool fastNumericsAvailable();

/// Whether, without them, Numerics::Fast runs with fused multiply-adds
/// (FP32 activations; AVX-512, or AVX2 and FMA); else it runs Reference.
bool fastFmaAvailable();

/// Bytes per element of `dtype`.
inline constexpr size_t dtypeSize(DType dtype) { return dtype == DType::F32 ? 4 : 2; }

/// An NVFP4 matrix in the canonical layout (volt.plan.WeightLayout
/// Nvfp4RowMajor): packed E2M1 [rows, cols / 2], even element in the low
/// nibble, and E4M3 block scales [rows, cols / 16]. `cols` is a multiple of
/// 16. A MoE entry is one matrix of experts * rows rows.
struct Nvfp4Matrix {
  const uint8_t *packed = nullptr;
  const uint8_t *scales = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
};

/// An FP8 E4M3 matrix with a scale per row (volt.plan.WeightLayout
/// Fp8RowScaled): `bytes` [rows, cols] row-major, `rowScales` f32 [rows];
/// element (r, c) is e4m3(bytes[r, c]) * rowScales[r].
struct Fp8Matrix {
  const uint8_t *bytes = nullptr;
  const float *rowScales = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
};

} // namespace volt::cpu
