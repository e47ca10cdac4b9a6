//===- Kernels.cpp --------------------------------------------------------===//
//
// Written as plain loops that GCC vectorises. The hottest ones are compiled
// for AVX-512, AVX2 and baseline x86-64 (target_clones, picked at load time
// by the CPU); the lane structure is in the source, so every clone computes
// the same bits.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Kernels.h"

#ifdef VOLT_CPU_AVX512
#include "runtime/cpu/DotBlockAvx2.h"
#include "runtime/cpu/DotBlockAvx512.h"
#include "runtime/cpu/DotBlockAvx512Bf16.h"
#endif
#include "runtime/cpu/Types.h"
#include "runtime/numerics/Half.h"

#include <algorithm>
#include <atomic>

#include <bit>
#include <cmath>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VOLT_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VOLT_CPU_CLONES
#endif

namespace volt::cpu::detail {
namespace {

float e4m3Value(int code) {
  int exp = (code >> 3) & 0xF;
  int mant = code & 0x7;
  if (exp == 0xF && mant == 0x7)
    return std::nanf("");
  float v = exp == 0 ? std::ldexp(static_cast<float>(mant), -9)
                     : std::ldexp(1.0f + static_cast<float>(mant) / 8.0f, exp - 7);
  return (code & 0x80) ? -v : v;
}

/// The E4M3FN value of each byte.
const float *e4m3Values() {
  static const struct Table {
    float values[256];
    Table() {
      for (int c = 0; c < 256; ++c)
        values[c] = e4m3Value(c);
    }
  } table;
  return table.values;
}

/// a when `condition`, else b, without a branch (so that loops using it
/// vectorise).
inline uint32_t select(bool condition, uint32_t a, uint32_t b) {
  uint32_t mask = 0u - static_cast<uint32_t>(condition);
  return (a & mask) | (b & ~mask);
}

inline float foldLanes(float *acc) {
  for (int width = kLanes / 2; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l)
      acc[l] += acc[l + width];
  return acc[0];
}

} // namespace

VOLT_CPU_CLONES
void halfToFloat(const uint16_t *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t h = in[i];
    uint32_t magnitude = (h & 0x7FFFu) << 13;
    uint32_t exp = h & 0x7C00u;
    // Normal: rebias the exponent by 127 - 15. Inf/NaN: all exponent bits
    // set. Zero and subnormal: 2^-14 * (1 + m/1024) - 2^-14, which is exact.
    uint32_t normal = magnitude + 0x38000000u;
    uint32_t special = magnitude | 0x7F800000u;
    uint32_t subnormal =
        std::bit_cast<uint32_t>(std::bit_cast<float>(magnitude + 0x38800000u) - 0x1p-14f);
    uint32_t bits = select(exp == 0x7C00u, special, normal);
    bits = select(exp == 0, subnormal, bits);
    out[i] = std::bit_cast<float>(bits | (h & 0x8000u) << 16);
  }
}

VOLT_CPU_CLONES
void floatToHalf(const float *in, uint16_t *out, int64_t n) {
  // volt::floatToHalf without branches, so that it vectorizes.
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = std::bit_cast<uint32_t>(in[i]);
    const uint32_t a = u & 0x7FFFFFFFu;
    // Normal half: round the 13 dropped bits to nearest even, rebias.
    const uint32_t rounded = (a + 0xFFFu + ((a >> 13) & 1u) - ((127u - 15u) << 23)) >> 13;
    const uint32_t normal = rounded > 0x7C00u ? 0x7C00u : rounded;
    // Subnormal half (or zero): |x| + 0.5 has an ulp of 2^-24, the half's
    // unit, so the addition rounds to nearest even and leaves the half's
    // bits in the low mantissa.
    const uint32_t subnormal =
        std::bit_cast<uint32_t>(std::bit_cast<float>(a) + 0.5f) - 0x3F000000u;
    uint32_t h = select(a >= 0x38800000u, normal, subnormal);
    h = select(a >= 0x47800000u, 0x7C00u, h);
    h = select(a > 0x7F800000u, 0x7E00u, h);
    out[i] = static_cast<uint16_t>(h | ((u >> 16) & 0x8000u));
  }
}

VOLT_CPU_CLONES
float dot(const float *a, const float *b, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      acc[l] += a[i + l] * b[i + l];
  for (int l = 0; i + l < n; ++l)
    acc[l] += a[i + l] * b[i + l];
  return foldLanes(acc);
}

VOLT_CPU_CLONES
void dotRows(const float *w, const float *x, int64_t stride, int64_t rows, int64_t n, float *out) {
  constexpr int kRows = 4;
  int64_t r = 0;
  for (; r + kRows <= rows; r += kRows) {
    float acc[kRows][kLanes] = {};
    const float *x0 = x + r * stride;
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int j = 0; j < kRows; ++j)
        for (int l = 0; l < kLanes; ++l)
          acc[j][l] += x0[j * stride + i + l] * w[i + l];
    for (int j = 0; j < kRows; ++j) {
      for (int l = 0; i + l < n; ++l)
        acc[j][l] += x0[j * stride + i + l] * w[i + l];
      out[r + j] = foldLanes(acc[j]);
    }
  }
  for (; r < rows; ++r)
    out[r] = dot(x + r * stride, w, n);
}

VOLT_CPU_CLONES
void axpy(float a, const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] += a * x[i];
}

VOLT_CPU_CLONES
float sumSquares(const float *a, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      acc[l] += a[i + l] * a[i + l];
  for (int l = 0; i + l < n; ++l)
    acc[l] += a[i + l] * a[i + l];
  return foldLanes(acc);
}

// Two versions with the same results (every value is exact), picked once by
// the CPU. With AVX-512, shifting each block's 64-bit word and building the
// FP32 bits of the codes arithmetically vectorises well; without it, GCC's
// code for the shifts is poor and a table lookup per element is fastest.
void decodeNvfp4RowWithTable(const uint8_t *packed, const uint8_t *scales, int64_t cols,
                             float *out) {
  static constexpr float kE2M1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                      -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  const float *e4m3 = e4m3Values();
  for (int64_t b = 0; b < cols / 16; ++b) {
    float scale = e4m3[scales[b]];
    const uint8_t *p = packed + b * 8;
    float *o = out + b * 16;
    for (int64_t j = 0; j < 8; ++j) {
      o[2 * j] = kE2M1[p[j] & 0xF] * scale;
      o[2 * j + 1] = kE2M1[p[j] >> 4] * scale;
    }
  }
}

namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VOLT_CPU_HAVE_AVX512_DECODE 1
__attribute__((target("avx512f,avx512bw,avx512vl"))) void
decodeWithShifts(const uint8_t *packed, const uint8_t *scales, int64_t cols, float *out) {
  const float *e4m3 = e4m3Values();
  for (int64_t b = 0; b < cols / 16; ++b) {
    float scale = e4m3[scales[b]];
    uint64_t word;
    std::memcpy(&word, packed + b * 8, 8);
    float *o = out + b * 16;
    for (int j = 0; j < 16; ++j) {
      // The 3-bit magnitude e:m with e > 0 is 2^(e-1) * (1 + m/2): FP32
      // exponent e + 126 with m as the top mantissa bit; codes 0 and 1 are
      // 0 and 0.5.
      uint32_t code = static_cast<uint32_t>(word >> (4 * j)) & 0xFu;
      uint32_t magnitude = code & 7u;
      uint32_t bits =
          select(magnitude >= 2u, (magnitude << 22) + 0x3F000000u, magnitude * 0x3F000000u);
      o[j] = std::bit_cast<float>(bits | (code & 8u) << 28) * scale;
    }
  }
}
#endif

using DecodeFn = void (*)(const uint8_t *, const uint8_t *, int64_t, float *);

DecodeFn pickDecode() {
#ifdef VOLT_CPU_HAVE_AVX512_DECODE
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    return decodeWithShifts;
#endif
  return decodeNvfp4RowWithTable;
}

} // namespace

void decodeNvfp4Row(const uint8_t *packed, const uint8_t *scales, int64_t cols, float *out) {
  static const DecodeFn decode = pickDecode();
  decode(packed, scales, cols, out);
}

VOLT_CPU_CLONES
void halfToBf16(const uint16_t *in, uint16_t *out, int64_t n, int64_t padTo) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t h = in[i];
    // The FP32 bits of the half (as halfToFloat), then rounded to nearest
    // even at bit 16; a NaN keeps its top mantissa bit set (quiet).
    uint32_t magnitude = (h & 0x7FFFu) << 13;
    uint32_t exp = h & 0x7C00u;
    uint32_t normal = magnitude + 0x38000000u;
    uint32_t special = magnitude | 0x7F800000u | select((h & 0x3FFu) != 0, 0x00400000u, 0u);
    uint32_t subnormal =
        std::bit_cast<uint32_t>(std::bit_cast<float>(magnitude + 0x38800000u) - 0x1p-14f);
    uint32_t bits = select(exp == 0x7C00u, special, normal);
    bits = select(exp == 0, subnormal, bits);
    uint32_t rounded = select(exp == 0x7C00u, bits, bits + 0x7FFFu + ((bits >> 16) & 1u));
    out[i] = static_cast<uint16_t>(rounded >> 16 | (h & 0x8000u));
  }
  for (int64_t i = n; i < padTo; ++i)
    out[i] = 0;
}

void fp8ToHalfScaled(const uint8_t *in, uint16_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<uint16_t>(((in[i] & 0x80u) << 8) | ((in[i] & 0x7Fu) << 7));
}

WeightRows WeightRows::from(int64_t first) const {
  WeightRows w = *this;
  switch (format) {
  case Format::F32:
    w.data = static_cast<const float *>(data) + first * cols;
    break;
  case Format::F16:
    w.data = static_cast<const uint16_t *>(data) + first * cols;
    break;
  case Format::Nvfp4:
    w.data = static_cast<const uint8_t *>(data) + first * (cols / 2);
    w.scales = scales + first * (cols / 16);
    break;
  case Format::Fp8:
    w.data = static_cast<const uint8_t *>(data) + first * cols;
    break;
  }
  return w;
}

namespace {

DotBlockPath cpuBestPath() {
#if defined(VOLT_CPU_AVX512) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return __builtin_cpu_supports("avx512vbmi") ? DotBlockPath::Avx512Vbmi
                                                 : DotBlockPath::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c"))
    return DotBlockPath::Avx2;
#endif
  return DotBlockPath::Portable;
}

std::atomic<DotBlockPath> &pathLimit() {
  static std::atomic<DotBlockPath> limit{DotBlockPath::Avx512Vbmi};
  return limit;
}

/// Tokens up to which NVFP4 and FP8 rows are decoded in registers for every
/// group of 4 tokens rather than once into scratch: a second pass reads
/// them from cache, and the first one's reads from memory overlap its
/// products (a prompt's NVFP4 MoE gate|up, 2 threads: 1.66-1.68 -> 1.29-1.33
/// ms with 8 rather than 4).
[[maybe_unused]] constexpr int64_t kDecodeInRegistersTokens = 8;

void dotBlockPortable(const WeightRows &w, int64_t rows, const float *x, int64_t xStride,
                      int64_t tokens, float *out, int64_t outStride, std::vector<float> &scratch) {
  const int64_t cols = w.cols;
  scratch.resize(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = scratch.data();
    switch (w.format) {
    case WeightRows::Format::F32:
      row = static_cast<const float *>(w.data) + r * cols;
      break;
    case WeightRows::Format::F16:
      halfToFloat(static_cast<const uint16_t *>(w.data) + r * cols, scratch.data(), cols);
      break;
    case WeightRows::Format::Nvfp4:
      decodeNvfp4Row(static_cast<const uint8_t *>(w.data) + r * (cols / 2),
                     w.scales + r * (cols / 16), cols, scratch.data());
      break;
    case WeightRows::Format::Fp8: {
      thread_local std::vector<uint16_t> halves;
      halves.resize(static_cast<size_t>(cols));
      fp8ToHalfScaled(static_cast<const uint8_t *>(w.data) + r * cols, halves.data(), cols);
      halfToFloat(halves.data(), scratch.data(), cols);
      break;
    }
    }
    dotRows(row, x, xStride, tokens, cols, out + r * outStride);
  }
}

} // namespace

#ifdef VOLT_CPU_AVX512
namespace {

/// The register paths' entry points, one struct per instruction set.
struct Avx512Body {
  static constexpr auto f32 = avx512::dotBlockF32;
  static constexpr auto f16 = avx512::dotBlockF16;
  static constexpr auto nvfp4 = avx512::dotBlockNvfp4;
  static constexpr auto decodeNvfp4 = avx512::decodeNvfp4Rows;
  static constexpr auto fp8 = avx512::dotBlockFp8;
  static constexpr auto fp8ToHalves = avx512::fp8ToHalfScaled;
};
/// VBMI unpacks NVFP4 codes in one instruction; the rest is AVX-512's.
struct Avx512VbmiBody : Avx512Body {
  static constexpr auto nvfp4 = avx512vbmi::dotBlockNvfp4;
};
struct Avx2Body {
  static constexpr auto f32 = avx2::dotBlockF32;
  static constexpr auto f16 = avx2::dotBlockF16;
  static void nvfp4(const uint8_t *packed, const uint8_t *scales, const float *e4m3, int64_t rows,
                    int64_t cols, const float *x, int64_t xStride, int64_t tokens, float *out,
                    int64_t outStride, float * /*xPacked: not used*/, bool fma) {
    avx2::dotBlockNvfp4(packed, scales, e4m3, rows, cols, x, xStride, tokens, out, outStride,
                        fma);
  }
  static constexpr auto decodeNvfp4 = avx2::decodeNvfp4Rows;
  static constexpr auto fp8 = avx2::dotBlockFp8;
  static constexpr auto fp8ToHalves = avx2::fp8ToHalfScaled;
};

/// The register paths' dotBlock; `fma`: Numerics::Fast's fused form.
template <typename Body>
void dotBlockIn(const WeightRows &w, int64_t rows, const float *x, int64_t xStride, int64_t tokens,
                float *out, int64_t outStride, std::vector<float> &scratch, bool fma) {
  const int64_t cols = w.cols;
  switch (w.format) {
  case WeightRows::Format::F32:
    Body::f32(static_cast<const float *>(w.data), rows, cols, x, xStride, tokens, out, outStride,
              fma);
    return;
  case WeightRows::Format::F16:
    Body::f16(static_cast<const uint16_t *>(w.data), rows, cols, x, xStride, tokens, out,
              outStride, fma);
    return;
  case WeightRows::Format::Nvfp4: {
    const auto *packed = static_cast<const uint8_t *>(w.data);
    if (tokens <= kDecodeInRegistersTokens) {
      // Room for 8 tokens' activations packed (avx512::dotBlockNvfp4), on
      // a cache line's start: its 64-byte loads then never straddle two.
      scratch.resize(static_cast<size_t>(8 * ((cols + 15) / 16 * 16) + 16));
      float *xPacked = scratch.data();
      xPacked += (64 - reinterpret_cast<uintptr_t>(xPacked) % 64) % 64 / sizeof(float);
      Body::nvfp4(packed, w.scales, e4m3Values(), rows, cols, x, xStride, tokens, out, outStride,
                  xPacked, fma);
      return;
    }
    scratch.resize(static_cast<size_t>(rows * cols));
    Body::decodeNvfp4(packed, w.scales, e4m3Values(), rows, cols, scratch.data());
    Body::f32(scratch.data(), rows, cols, x, xStride, tokens, out, outStride, fma);
    return;
  }
  case WeightRows::Format::Fp8: {
    // A few tokens: each byte decoded in registers where it is used. More:
    // a few rows at a time turned into FP16 bits (exact) once, then the
    // FP16 body over every token. Either way the pack's 1 byte per weight
    // is what streams from memory, with the bits of fp8ToHalfScaled.
    const auto *bytes = static_cast<const uint8_t *>(w.data);
    if (tokens <= kDecodeInRegistersTokens) {
      Body::fp8(bytes, rows, cols, x, xStride, tokens, out, outStride, fma);
      return;
    }
    constexpr int64_t kRows = 16;
    scratch.resize(static_cast<size_t>((std::min(rows, kRows) * cols + 1) / 2));
    auto *halves = reinterpret_cast<uint16_t *>(scratch.data());
    for (int64_t r0 = 0; r0 < rows; r0 += kRows) {
      const int64_t n = std::min(kRows, rows - r0);
      Body::fp8ToHalves(bytes + r0 * cols, halves, n * cols);
      Body::f16(halves, n, cols, x, xStride, tokens, out + r0 * outStride, outStride, fma);
    }
    return;
  }
  }
}

} // namespace
#endif

namespace {

bool cpuHasBf16Dot() {
#if defined(VOLT_CPU_AVX512) && defined(__GNUC__)
  return cpuBestPath() == DotBlockPath::Avx512Vbmi && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

} // namespace

void dotBlockBf16(const WeightRows &weights, int64_t first, int64_t rows, const uint16_t *x,
                  int64_t xStride, int64_t tokens, float *out, int64_t outStride,
                  std::vector<float> &scratch) {
  if (rows <= 0 || tokens <= 0)
    return;
#ifdef VOLT_CPU_AVX512
  const WeightRows w = weights.from(first);
  const int64_t cols = w.cols;
  uint16_t *decoded = nullptr;
  if (tokens > avx512bf16::kRegisterTokens) {
    scratch.resize(static_cast<size_t>((rows * bf16Stride(cols) + 1) / 2));
    decoded = reinterpret_cast<uint16_t *>(scratch.data());
  }
  switch (w.format) {
  case WeightRows::Format::F32:
    avx512bf16::dotBlockF32(static_cast<const float *>(w.data), rows, cols, x, xStride, tokens,
                            out, outStride, decoded);
    return;
  case WeightRows::Format::F16:
    avx512bf16::dotBlockF16(static_cast<const uint16_t *>(w.data), rows, cols, x, xStride,
                            tokens, out, outStride, decoded);
    return;
  case WeightRows::Format::Nvfp4:
    avx512bf16::dotBlockNvfp4(static_cast<const uint8_t *>(w.data), w.scales, e4m3Values(), rows,
                              cols, x, xStride, tokens, out, outStride, decoded);
    return;
  case WeightRows::Format::Fp8:
    avx512bf16::dotBlockFp8(static_cast<const uint8_t *>(w.data), rows, cols, x, xStride, tokens,
                            out, outStride, decoded);
    return;
  }
#else
  (void)weights, (void)first, (void)x, (void)xStride, (void)out, (void)outStride, (void)scratch;
#endif
}

DotBlockPath dotBlockPath() {
  static const DotBlockPath best = cpuBestPath();
  return std::min(best, pathLimit().load(std::memory_order_relaxed));
}

void setDotBlockPathLimit(DotBlockPath limit) { pathLimit().store(limit); }

namespace {

/// dotBlock and dotBlockFma: the path's body, fused or not.
void dispatch(const WeightRows &weights, int64_t first, int64_t rows, const float *x,
              int64_t xStride, int64_t tokens, float *out, int64_t outStride,
              std::vector<float> &scratch, bool fma) {
  if (rows <= 0 || tokens <= 0)
    return;
  const WeightRows w = weights.from(first);
#ifdef VOLT_CPU_AVX512
  const DotBlockPath path = dotBlockPath();
  if (path == DotBlockPath::Avx512Vbmi)
    dotBlockIn<Avx512VbmiBody>(w, rows, x, xStride, tokens, out, outStride, scratch, fma);
  else if (path == DotBlockPath::Avx512)
    dotBlockIn<Avx512Body>(w, rows, x, xStride, tokens, out, outStride, scratch, fma);
  else if (path == DotBlockPath::Avx2)
    dotBlockIn<Avx2Body>(w, rows, x, xStride, tokens, out, outStride, scratch, fma);
  else
    dotBlockPortable(w, rows, x, xStride, tokens, out, outStride, scratch);
#else
  (void)fma;
  dotBlockPortable(w, rows, x, xStride, tokens, out, outStride, scratch);
#endif
}

} // namespace

void dotBlock(const WeightRows &weights, int64_t first, int64_t rows, const float *x,
              int64_t xStride, int64_t tokens, float *out, int64_t outStride,
              std::vector<float> &scratch) {
  // Fused only where every product is exact (see Kernels.h): the same bits.
  const bool fma = weights.format != WeightRows::Format::F32 && fmaDotAvailable();
  dispatch(weights, first, rows, x, xStride, tokens, out, outStride, scratch, fma);
}

bool fmaDotAvailable() {
#ifdef VOLT_CPU_AVX512
  static const bool cpuHasFma = __builtin_cpu_supports("fma");
  const DotBlockPath path = dotBlockPath();
  return path >= DotBlockPath::Avx512 || (path == DotBlockPath::Avx2 && cpuHasFma);
#else
  return false;
#endif
}

void dotBlockFma(const WeightRows &weights, int64_t first, int64_t rows, const float *x,
                 int64_t xStride, int64_t tokens, float *out, int64_t outStride,
                 std::vector<float> &scratch) {
  // Only called where fmaDotAvailable(): the portable branch never runs.
  dispatch(weights, first, rows, x, xStride, tokens, out, outStride, scratch, true);
}

} // namespace volt::cpu::detail

namespace volt::cpu {

bool fastNumericsAvailable() {
  static const bool available = detail::cpuHasBf16Dot();
  return available;
}

bool fastFmaAvailable() {
#if defined(VOLT_CPU_AVX512) && defined(__GNUC__)
  // The best dotBlock path has FMA: AVX-512 F always, AVX2 where the CPU
  // says so.
  static const bool available = [] {
    const detail::DotBlockPath best = detail::cpuBestPath();
    return best >= detail::DotBlockPath::Avx512 ||
           (best == detail::DotBlockPath::Avx2 && __builtin_cpu_supports("fma"));
  }();
  return available;
#else
  return false;
#endif
}

} // namespace volt::cpu
