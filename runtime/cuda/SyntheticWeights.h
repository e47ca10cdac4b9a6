//===- SyntheticWeights.h - pseudo-random weights for benchmarking -*- C++ -*-===//
//
// A full-size plan's weight packs are many gigabytes; to measure how fast
// a plan serves, their contents do not matter, only that they keep the
// model numerically tame (no NaN, no overflow) and that MoE routing
// spreads tokens over the experts as real weights do. The cuda backend's
// synthetic mode (CudaBackendOptions::syntheticWeights) therefore fills a
// rank's weight memory on the device from a few small host patterns, one
// per kind of content, with device-to-device copies:
//
//   - dense FP16 / BF16 / FP32 matrices: uniform in [-0.02, 0.02];
//   - dense 1-D entries (norm weights, biases): uniform in [0.9, 1.1], so
//     that RMSNorm keeps activations at unit scale;
//   - NVFP4 element codes: random bytes (every E2M1 code is finite);
//   - NVFP4 block scales: finite positive E4M3 codes chosen so that
//     code x scale x global scale is about 0.02 in magnitude (RMS), given
//     the plan's global scales;
//   - NVFP4 MoE epilogue scales: the plan's own (2^14 x each global scale),
//     written from the host;
//   - FP8 entries (E4M3 with row scales): random E4M3 codes below 2 in
//     magnitude, and row scales uniform in [-0.02, 0.02];
//   - other dtypes (integers): zeros.
//
// Each entry starts its pattern at a different offset, so that entries
// (router rows above all) differ from one another. Everything here is a
// pure function of the plan, so that it is tested without a device.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/schema/PlanFormat.h"

#include <cstdint>
#include <vector>

namespace volt::cuda {

/// The contents a part of a weight entry gets.
enum class SyntheticKind : uint32_t {
  Half,       ///< FP16, uniform in [-0.02, 0.02]
  HalfNorm,   ///< FP16, uniform in [0.9, 1.1]
  BFloat,     ///< BF16, uniform in [-0.02, 0.02]
  BFloatNorm, ///< BF16, uniform in [0.9, 1.1]
  Float,      ///< FP32, uniform in [-0.02, 0.02]
  FloatNorm,  ///< FP32, uniform in [0.9, 1.1]
  Codes,      ///< random bytes (packed E2M1 pairs)
  Scales,     ///< finite positive E4M3 block scales
  Fp8Codes,   ///< E4M3 weights: random codes of magnitude below 2 (never NaN)
  Zeros,      ///< zero bytes (a memset, not a copy)
};
inline constexpr uint32_t kSyntheticPatternKinds = 9; ///< all but Zeros

/// One piece of a fill: `bytes` bytes at `to` (relative to the rank's
/// weights) copied from the pattern of `kind` at offset `from`.
struct SyntheticCopy {
  SyntheticKind kind = SyntheticKind::Zeros;
  uint64_t from = 0, to = 0, bytes = 0;
};

/// The host patterns of one rank and the copies that fill its weights.
struct SyntheticFill {
  /// Bytes of one pattern period (a multiple of 256).
  uint64_t period = 0;
  /// kSyntheticPatternKinds patterns, each its period twice over (so that
  /// a copy of up to `period` bytes may start anywhere in the first), in
  /// SyntheticKind order: patternOffset(kind) locates one.
  std::vector<uint8_t> patterns;
  std::vector<SyntheticCopy> copies;
  /// Exact bytes written from the host: NVFP4 MoE entries' epilogue scales.
  struct Write {
    uint64_t to = 0;
    std::vector<uint8_t> bytes;
  };
  std::vector<Write> writes;
  /// The E4M3 block scale codes the Scales pattern draws from.
  std::vector<uint8_t> scaleCodes;

  uint64_t patternOffset(SyntheticKind kind) const {
    return static_cast<uint64_t>(kind) * 2 * period;
  }
};

/// Default pattern period: 512 KiB per kind, 8 MiB of patterns in all.
inline constexpr uint64_t kSyntheticPeriod = 512 << 10;

/// The fill of `rank`'s weight entries (deterministic in `rank` and
/// `period`, which is rounded up to a multiple of 256).
SyntheticFill syntheticFill(const plan::Rank &rank, uint64_t period = kSyntheticPeriod);

} // namespace volt::cuda
