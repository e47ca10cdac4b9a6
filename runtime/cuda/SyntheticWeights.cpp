//===- SyntheticWeights.cpp -----------------------------------------------===//
#include "runtime/cuda/SyntheticWeights.h"

#include "runtime/numerics/Half.h"
#include "runtime/numerics/Nvfp4.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace volt::cuda {
namespace {

/// SplitMix64: a good enough stream from any seed, the same everywhere.
struct Random {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi).
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(next() >> 40) * (1.0f / 16777216.0f);
  }
};

/// The root mean square of a uniformly random E2M1 code's value.
constexpr double kE2M1Rms = 2.926;
/// The magnitude (RMS) synthetic weights aim at.
constexpr double kWeightRms = 0.02;

/// The finite positive E4M3 codes whose value is within a factor of two of
/// what puts NVFP4 weights at kWeightRms given the rank's global scales
/// (their geometric mean), or the nearest one code when none is.
std::vector<uint8_t> chooseScaleCodes(const plan::Rank &rank) {
  double logSum = 0;
  uint64_t count = 0;
  for (const plan::WeightEntry *w : *rank.weights()) {
    if (w->layout() != plan::WeightLayout::Nvfp4RowMajor || !w->global_scales())
      continue;
    for (float g : *w->global_scales())
      if (std::isfinite(g) && g > 0) {
        logSum += std::log(static_cast<double>(g));
        ++count;
      }
  }
  const double global = count ? std::exp(logSum / static_cast<double>(count)) : 1.0;
  const double target = kWeightRms / (kE2M1Rms * global);
  std::vector<uint8_t> codes;
  for (uint32_t c = 1; c < 0x7F; ++c) {
    const double v = nvfp4::decodeE4M3(static_cast<uint8_t>(c));
    if (v >= target / 2 && v <= target * 2)
      codes.push_back(static_cast<uint8_t>(c));
  }
  if (codes.empty()) {
    // Out of E4M3's range: its smallest or largest finite positive code.
    const uint8_t nearest = nvfp4::encodeE4M3(static_cast<float>(target));
    codes.push_back(std::clamp<uint8_t>(nearest, 1, 0x7E));
  }
  return codes;
}

void fillPattern(SyntheticKind kind, std::span<uint8_t> out, const std::vector<uint8_t> &scales) {
  Random random{0x766F6C74ull * (static_cast<uint64_t>(kind) + 1)};
  const bool norm = kind == SyntheticKind::HalfNorm || kind == SyntheticKind::BFloatNorm ||
                    kind == SyntheticKind::FloatNorm;
  const float lo = norm ? 0.9f : -0.02f, hi = norm ? 1.1f : 0.02f;
  switch (kind) {
  case SyntheticKind::Half:
  case SyntheticKind::HalfNorm:
  case SyntheticKind::BFloat:
  case SyntheticKind::BFloatNorm:
    for (size_t i = 0; i + 2 <= out.size(); i += 2) {
      const float v = random.uniform(lo, hi);
      const uint16_t bits = kind == SyntheticKind::Half || kind == SyntheticKind::HalfNorm
                                ? floatToHalf(v)
                                : floatToBf16(v);
      std::memcpy(out.data() + i, &bits, 2);
    }
    break;
  case SyntheticKind::Float:
  case SyntheticKind::FloatNorm:
    for (size_t i = 0; i + 4 <= out.size(); i += 4) {
      const float v = random.uniform(lo, hi);
      std::memcpy(out.data() + i, &v, 4);
    }
    break;
  case SyntheticKind::Codes:
    for (uint8_t &b : out)
      b = static_cast<uint8_t>(random.next() >> 56);
    break;
  case SyntheticKind::Scales:
    for (uint8_t &b : out)
      b = scales[random.next() % scales.size()];
    break;
  case SyntheticKind::Fp8Codes:
    // Bit 6 clear: exponents up to 7 (values below 2), and never 0x7F.
    for (uint8_t &b : out)
      b = static_cast<uint8_t>(random.next() >> 56) & 0xBF;
    break;
  case SyntheticKind::Zeros:
    break;
  }
}

SyntheticKind denseKind(const plan::WeightEntry &w) {
  const bool vector = w.shape() && w.shape()->size() == 1;
  switch (w.dtype()) {
  case plan::DType::F16:
    return vector ? SyntheticKind::HalfNorm : SyntheticKind::Half;
  case plan::DType::BF16:
    return vector ? SyntheticKind::BFloatNorm : SyntheticKind::BFloat;
  case plan::DType::F32:
    return vector ? SyntheticKind::FloatNorm : SyntheticKind::Float;
  default:
    return SyntheticKind::Zeros;
  }
}

} // namespace

SyntheticFill syntheticFill(const plan::Rank &rank, uint64_t period) {
  SyntheticFill fill;
  fill.period = std::max<uint64_t>(256, (period + 255) / 256 * 256);
  fill.scaleCodes = chooseScaleCodes(rank);
  fill.patterns.resize(kSyntheticPatternKinds * 2 * fill.period);
  for (uint32_t k = 0; k < kSyntheticPatternKinds; ++k) {
    const auto kind = static_cast<SyntheticKind>(k);
    uint8_t *first = fill.patterns.data() + fill.patternOffset(kind);
    fillPattern(kind, {first, fill.period}, fill.scaleCodes);
    std::memcpy(first + fill.period, first, fill.period);
  }

  // Each part starts its pattern at its own 256-byte-aligned offset (an
  // alignment every element size divides).
  Random starts{0x5EED};
  auto add = [&](SyntheticKind kind, uint64_t to, uint64_t bytes) {
    if (bytes == 0)
      return;
    if (kind == SyntheticKind::Zeros) {
      fill.copies.push_back({kind, 0, to, bytes});
      return;
    }
    const uint64_t from = (starts.next() % (fill.period / 256)) * 256;
    for (uint64_t done = 0; done < bytes;) {
      const uint64_t n = std::min(bytes - done, fill.period);
      fill.copies.push_back({kind, from, to + done, n});
      done += n;
    }
  };
  for (const plan::WeightEntry *w : *rank.weights()) {
    if (w->layout() == plan::WeightLayout::Nvfp4RowMajor) {
      // The loader checked that the scales lie inside the entry.
      const uint64_t scalesEnd = w->epilogue_offset() ? w->epilogue_offset() : w->bytes();
      add(SyntheticKind::Codes, w->offset(), w->scales_offset());
      add(SyntheticKind::Scales, w->offset() + w->scales_offset(), scalesEnd - w->scales_offset());
      if (w->epilogue_offset()) {
        // The loader checked that experts x parts scales fit the entry.
        SyntheticFill::Write write{w->offset() + w->epilogue_offset(), {}};
        if (w->global_scales())
          for (float g : *w->global_scales()) {
            const float v = g * nvfp4::kEpilogueBias;
            const auto *b = reinterpret_cast<const uint8_t *>(&v);
            write.bytes.insert(write.bytes.end(), b, b + 4);
          }
        fill.writes.push_back(std::move(write));
      }
    } else if (w->layout() == plan::WeightLayout::Fp8RowScaled) {
      // The loader checked that the row scales lie inside the entry.
      add(SyntheticKind::Fp8Codes, w->offset(), w->scales_offset());
      add(SyntheticKind::Float, w->offset() + w->scales_offset(),
          w->bytes() - w->scales_offset());
    } else {
      add(denseKind(*w), w->offset(), w->bytes());
    }
  }
  return fill;
}

} // namespace volt::cuda
