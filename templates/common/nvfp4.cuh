// templates/common/nvfp4.cuh - NVFP4 to FP16 by bit operations.
//
// Volta has no FP4 or FP8 conversion instructions. Both NVFP4 formats map
// into FP16's fields with a mask and a shift (docs/reference/V100.md):
//
//   E2M1 nibble in bits 12-15 of a half: (q & 0x8000) | ((q & 0x7000) >> 3)
//     gives the element's value x 2^-14 (FP16 subnormals cover its own);
//   E4M3 byte in bits 8-15 of a half: (q & 0x8000) | ((q & 0x7F00) >> 1)
//     gives the scale's value x 2^-8; one FP16 multiply by 2^8 restores it
//     exactly (448 stays 448).
//
// FP8 E4M3 weights (fp8_gemv, fp8_gemm) take the second form as they are:
// their FP16 values x 2^-8 go to the tensor cores, and 2^8 x the row's
// scale multiplies the FP32 sum (the cpu backend's WeightRows::fp8).
//
// The element (x 2^-14) times the restored block scale is an exact FP16
// product (at most 6 significant bits, between 2^-24 and 0.164), the
// kernels multiply it by FP16 activations on tensor cores with FP32
// accumulation (exact products), and apply 2^14 x the part's global scale to
// the FP32 sum: the cpu backend's values, up to summation order.
//
// This header is plain C++ apart from mulHalf2 and the byte-permute forms
// of the half regroupers, so the host tests compile it and check the
// decoders bit for bit against runtime/numerics/Nvfp4.h.
#pragma once

#include "common/volt.cuh"

namespace volt {

/// The FP16 bits of 2^8, the E4M3 conversion's correction.
constexpr u32 kHalf2Two8 = 0x5C005C00u;

/// Eight E2M1 codes (element i in bits 4i..4i+3 of `q`, the canonical
/// packing) to FP16 pairs x 2^-14: out[i] holds element i in its low half
/// and element i + 4 in its high half.
VOLT_HD void decodeE2M1x8(u32 q, u32 (&out)[4]) {
  // Element i reaches bits 12-15 (and i + 4 bits 28-31) after a shift by
  // 4 * (3 - i).
  for (int i = 0; i < 4; ++i) {
    u32 t = q << (4 * (3 - i));
    out[i] = (t & 0x80008000u) | ((t & 0x70007000u) >> 3);
  }
}

/// One E4M3 scale byte, in both halves, as FP16 x 2^-8 (before the 2^8
/// correction).
VOLT_HD u32 decodeE4M3Pair(u32 scaleByte) {
  u32 t = (scaleByte << 8) | (scaleByte << 24);
  return (t & 0x80008000u) | ((t & 0x7F007F00u) >> 1);
}

/// What the FP32 sums of decodeE4M3x4's values are multiplied by (with the
/// row's scale) to give the E4M3 weights' own.
constexpr float kE4M3x4Bias = 256.0f;

/// Four E4M3 bytes (byte i in bits 8i..8i+7 of `q`) as FP16 x 2^-8, exact
/// for every finite code: out[0] holds bytes 0 and 1 (low half first),
/// out[1] bytes 2 and 3.
#if defined(__CUDACC__) || defined(VOLT_SIMT)
VOLT_DEVICE void decodeE4M3x4(u32 q, u32 (&out)[2]) {
  // Each byte into the high byte of a half: one permute per pair.
  const u32 t0 = bytePermute<0x1404>(q, 0u), t1 = bytePermute<0x3424>(q, 0u);
  out[0] = (t0 & 0x80008000u) | ((t0 & 0x7F007F00u) >> 1);
  out[1] = (t1 & 0x80008000u) | ((t1 & 0x7F007F00u) >> 1);
}
#else
inline void decodeE4M3x4(u32 q, u32 (&out)[2]) {
  const u32 t0 = ((q & 0xFFu) << 8) | ((q & 0xFF00u) << 16),
            t1 = ((q >> 8) & 0xFF00u) | (q & 0xFF000000u);
  out[0] = (t0 & 0x80008000u) | ((t0 & 0x7F007F00u) >> 1);
  out[1] = (t1 & 0x80008000u) | ((t1 & 0x7F007F00u) >> 1);
}
#endif

/// (low half of a, low half of b) and (high half of a, high half of b):
/// how activation pairs are regrouped to match decodeE2M1x8's pairs. On the
/// device (and in the SIMT emulation) one byte permute each: NVVM turns the
/// shift-and-mask form into two instructions (a mask, then PRMT or
/// LEA.HI), which the decode GEMV would pay 16 times per chunk.
#if defined(__CUDACC__) || defined(VOLT_SIMT)
VOLT_DEVICE u32 lowHalves(u32 a, u32 b) { return bytePermute<0x5410>(a, b); }
VOLT_DEVICE u32 highHalves(u32 a, u32 b) { return bytePermute<0x7632>(a, b); }
#else
inline u32 lowHalves(u32 a, u32 b) { return (a & 0xFFFFu) | (b << 16); }
inline u32 highHalves(u32 a, u32 b) { return (a >> 16) | (b & 0xFFFF0000u); }
#endif

#if defined(__CUDACC__) || defined(VOLT_SIMT)
/// The block scale of one byte as an exact FP16 pair.
VOLT_DEVICE u32 blockScalePair(u32 scaleByte) {
  return mulHalf2(decodeE4M3Pair(scaleByte), kHalf2Two8);
}
#endif

} // namespace volt
