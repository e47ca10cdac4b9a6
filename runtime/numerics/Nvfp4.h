//===- Nvfp4.h - the NVFP4 number formats on the host ----------*- C++ -*-===//
//
// NVFP4 stores a weight as E2M1 elements (4 bits, two per byte, the even
// index in the low nibble), one E4M3 scale per 16 elements along K, and one
// FP32 global scale per tensor. volt keeps one convention for the global
// scale throughout (ModelOpt's, a multiplier):
//
//   w = e2m1(element) * e4m3(block scale) * globalScale
//
// compressed-tensors checkpoints store the reciprocal; ingestion converts.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace volt::nvfp4 {

/// Elements per block scale along K.
inline constexpr int64_t kBlockSize = 16;
/// Largest E2M1 magnitude.
inline constexpr float kE2M1Max = 6.0f;
/// The GPU kernels' E2M1 decode (through FP16 exponent bits) leaves each
/// element 2^-14 of its value; their epilogue scale, 2^14 x the global
/// scale, puts it back (exact: a power of two). Codegen passes it by value
/// to dense QLinears; the packer stores it in MoE entries.
inline constexpr float kEpilogueBias = 16384.0f;
/// Largest finite E4M3FN magnitude.
inline constexpr float kE4M3Max = 448.0f;

/// The value of an E2M1 code (low 4 bits used): 0, 0.5, 1, 1.5, 2, 3, 4, 6,
/// and the same negated for codes 8..15 (8 is -0).
float decodeE2M1(uint8_t code);

/// The value of an E4M3FN byte: bias 7, no infinities, 0x7F and 0xFF NaN,
/// subnormals m * 2^-9.
float decodeE4M3(uint8_t code);

/// Nearest E2M1 code to `x`, ties to even, saturating at ±6. Zero and values
/// that round to zero give code 0 (+0). NaN gives code 0.
uint8_t encodeE2M1(float x);

/// Nearest E4M3FN byte to `x`, ties to even, saturating at ±448. NaN gives
/// 0x7F.
uint8_t encodeE4M3(float x);

/// The i-th element (along K) of a packed row.
inline uint8_t packedElement(std::span<const uint8_t> row, int64_t i) {
  uint8_t byte = row[static_cast<size_t>(i / 2)];
  return (i % 2 == 0) ? (byte & 0x0F) : (byte >> 4);
}

/// One quantized [N, K] weight in volt's convention.
struct Quantized {
  std::vector<uint8_t> packed; ///< [N, K/2], even index in the low nibble
  std::vector<uint8_t> scales; ///< [N, K/16], E4M3FN
  float globalScale = 1.0f;    ///< multiplier (ModelOpt's weight_scale_2)
};

/// Quantizes a row-major [N, K] FP32 matrix with ModelOpt's recipe:
/// globalScale = amax / (6 * 448); per block s = e4m3(block_amax / 6 /
/// globalScale); element = nearest E2M1 of x / (s * globalScale).
/// K must be a multiple of 16. An all-zero matrix gets globalScale 1.
Quantized quantize(std::span<const float> weights, int64_t n, int64_t k);

/// The same with a given global scale (for parts of a fused projection that
/// share one, as ModelOpt exports gate/up and q/k/v). Block scales saturate
/// at 448 when `globalScale` is smaller than the recipe's.
Quantized quantizeWithGlobalScale(std::span<const float> weights, int64_t n, int64_t k,
                                  float globalScale);

/// The largest magnitude of `weights` (0 for an empty span).
float absMax(std::span<const float> weights);

/// Dequantizes one row of a quantized [N, K] matrix into `out` (K floats).
void dequantizeRow(std::span<const uint8_t> packedRow, std::span<const uint8_t> scaleRow,
                   float globalScale, std::span<float> out);

} // namespace volt::nvfp4
