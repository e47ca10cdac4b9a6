//===- VocabMath.cpp - loops over a vocabulary-sized row ------------------===//
#include "runtime/engine/VocabMath.h"

#include <algorithm>
#include <cstring>
#include <limits>

// The 32-byte vector helpers below are forced inline into each clone, so no
// vector is ever passed between functions compiled for different targets
// (which would disagree on how to pass it: the ABI change GCC notes).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace volt::engine {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

#define VOLT_INLINE inline __attribute__((always_inline))

typedef float F8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));

VOLT_INLINE F8 load(const float *p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
VOLT_INLINE void store(float *p, F8 v) { std::memcpy(p, &v, sizeof v); }
VOLT_INLINE F8 splat(float x) { return F8{} + x; }

// expNonPositive, eight at a time.
VOLT_INLINE F8 expNonPositive8(F8 x) {
  const F8 lo = splat(-87.0f);
  I8 valid = x > lo;
  F8 clamped = valid ? x : lo;
  F8 rounded = (clamped * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  F8 r = clamped - rounded * 0.693359375f;
  r = r + rounded * 2.12194440e-4f;
  F8 p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  F8 e = p * r * r + r + 1.0f;
  I8 bits = (__builtin_convertvector(rounded, I8) + 127) << 23;
  F8 scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return valid ? e * scale : splat(0.0f);
}

VOLT_INLINE float horizontalMax(F8 v) {
  float m = kNegInf;
  for (int j = 0; j < 8; ++j)
    m = v[j] > m ? v[j] : m;
  return m;
}

VOLT_INLINE double horizontalSum(F8 v) {
  double s = 0;
  for (int j = 0; j < 8; ++j)
    s += v[j];
  return s;
}

} // namespace

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VOLT_VOCAB_LOOP __attribute__((target_clones("avx2", "default")))
#else
#define VOLT_VOCAB_LOOP
#endif

VOLT_VOCAB_LOOP float maxOf(std::span<const float> x) {
  F8 acc = splat(kNegInf);
  size_t i = 0;
  for (; i + 8 <= x.size(); i += 8) {
    F8 v = load(&x[i]);
    acc = v > acc ? v : acc;
  }
  float m = horizontalMax(acc);
  for (; i < x.size(); ++i)
    m = x[i] > m ? x[i] : m;
  return m;
}

VOLT_VOCAB_LOOP double sumOf(std::span<const float> x) {
  // Float lanes over blocks of 4096 keep the rounding error far below
  // what sampling can notice; blocks add up in double.
  double total = 0;
  for (size_t base = 0; base < x.size(); base += 4096) {
    size_t end = std::min(x.size(), base + 4096);
    F8 acc = splat(0.0f);
    size_t i = base;
    for (; i + 8 <= end; i += 8)
      acc += load(&x[i]);
    total += horizontalSum(acc);
    for (; i < end; ++i)
      total += x[i];
  }
  return total;
}

VOLT_VOCAB_LOOP double expWeights(std::span<const float> x, float shift, float floor,
                                  std::span<float> w) {
  double total = 0;
  const F8 zero = splat(0.0f);
  for (size_t base = 0; base < x.size(); base += 4096) {
    size_t end = std::min(x.size(), base + 4096);
    F8 acc = zero;
    size_t i = base;
    for (; i + 8 <= end; i += 8) {
      F8 v = expNonPositive8(load(&x[i]) - shift);
      v = v >= floor ? v : zero;
      store(&w[i], v);
      acc += v;
    }
    total += horizontalSum(acc);
    for (; i < end; ++i) {
      float v = expNonPositive(x[i] - shift);
      w[i] = v >= floor ? v : 0.0f;
      total += w[i];
    }
  }
  return total;
}

VOLT_VOCAB_LOOP void divideAll(std::span<float> x, float by) {
  size_t i = 0;
  for (; i + 8 <= x.size(); i += 8)
    store(&x[i], load(&x[i]) / by);
  for (; i < x.size(); ++i)
    x[i] /= by;
}

VOLT_VOCAB_LOOP float divideCopyMax(std::span<const float> x, float by, std::span<float> out) {
  F8 acc = splat(kNegInf);
  size_t i = 0;
  for (; i + 8 <= x.size(); i += 8) {
    F8 v = load(&x[i]) / by;
    store(&out[i], v);
    acc = v > acc ? v : acc;
  }
  float m = horizontalMax(acc);
  for (; i < x.size(); ++i) {
    out[i] = x[i] / by;
    m = out[i] > m ? out[i] : m;
  }
  return m;
}

VOLT_VOCAB_LOOP double expWeightsGather(std::span<const float> x, float shift, float floor,
                                        std::span<float> w, float theta, std::vector<int32_t> &ids,
                                        std::vector<float> &gathered, double &mass) {
  // expWeights' loop, with the 4096-entry partial sums kept exactly as
  // there; each run of 64 weights is scanned for the gather only when its
  // largest reaches theta, which few do.
  constexpr size_t kRun = 64;
  double total = 0;
  const F8 zero = splat(0.0f);
  auto gather = [&](size_t from, size_t to) {
    for (size_t j = from; j < to; ++j)
      if (w[j] > 0 && w[j] >= theta) {
        ids.push_back(int32_t(j));
        gathered.push_back(w[j]);
        mass += w[j];
      }
  };
  for (size_t base = 0; base < x.size(); base += 4096) {
    size_t end = std::min(x.size(), base + 4096);
    F8 acc = zero;
    size_t i = base;
    while (i + kRun <= end) {
      F8 top = zero;
      for (size_t r = 0; r < kRun; r += 8, i += 8) {
        F8 v = expNonPositive8(load(&x[i]) - shift);
        v = v >= floor ? v : zero;
        store(&w[i], v);
        acc += v;
        top = v > top ? v : top;
      }
      if (horizontalMax(top) >= theta)
        gather(i - kRun, i);
    }
    size_t tail = i;
    for (; i + 8 <= end; i += 8) {
      F8 v = expNonPositive8(load(&x[i]) - shift);
      v = v >= floor ? v : zero;
      store(&w[i], v);
      acc += v;
    }
    total += horizontalSum(acc);
    for (; i < end; ++i) {
      float v = expNonPositive(x[i] - shift);
      w[i] = v >= floor ? v : 0.0f;
      total += w[i];
    }
    gather(tail, end);
  }
  return total;
}

VOLT_VOCAB_LOOP int32_t countGreater(std::span<const float> x, float than) {
  I8 acc = I8{};
  size_t i = 0;
  for (; i + 8 <= x.size(); i += 8)
    acc -= load(&x[i]) > than; // true is -1
  int32_t n = 0;
  for (int j = 0; j < 8; ++j)
    n += acc[j];
  for (; i < x.size(); ++i)
    n += x[i] > than;
  return n;
}

VOLT_VOCAB_LOOP bool anyGreater(std::span<const float> x, float than) {
  I8 hit = I8{};
  size_t i = 0;
  for (; i + 8 <= x.size(); i += 8)
    hit |= load(&x[i]) > than;
  bool any = false;
  for (int j = 0; j < 8; ++j)
    any |= hit[j] != 0;
  for (; i < x.size(); ++i)
    any |= x[i] > than;
  return any;
}

VOLT_VOCAB_LOOP bool anyAtLeast(std::span<const float> x, float than) {
  I8 hit = I8{};
  size_t i = 0;
  for (; i + 8 <= x.size(); i += 8)
    hit |= load(&x[i]) >= than;
  bool any = false;
  for (int j = 0; j < 8; ++j)
    any |= hit[j] != 0;
  for (; i < x.size(); ++i)
    any |= x[i] >= than;
  return any;
}

int32_t argmax(std::span<const float> x) {
  // The maximum of each chunk vectorized; only the first chunk holding the
  // overall maximum is scanned.
  constexpr size_t kChunk = 2048;
  float best = kNegInf;
  size_t bestChunk = 0;
  for (size_t base = 0; base < x.size(); base += kChunk) {
    float m = maxOf(x.subspan(base, std::min(kChunk, x.size() - base)));
    if (m > best) {
      best = m;
      bestChunk = base;
    }
  }
  if (!(best > kNegInf))
    return -1;
  auto chunk = x.subspan(bestChunk, std::min(kChunk, x.size() - bestChunk));
  return int32_t(bestChunk + (std::find(chunk.begin(), chunk.end(), best) - chunk.begin()));
}

} // namespace volt::engine
