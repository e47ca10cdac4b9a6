//===- Rope.cpp -----------------------------------------------------------===//
#include "runtime/cpu/Rope.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/Scratch.h"
#include "runtime/numerics/Half.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace volt::cpu {

std::vector<float> ropeInverseFrequencies(int64_t headDim, float theta) {
  assert(headDim > 0 && headDim % 2 == 0);
  std::vector<float> inv(static_cast<size_t>(headDim / 2));
  for (int64_t i = 0; i < headDim / 2; ++i) {
    float exponent = static_cast<float>(2 * i) / static_cast<float>(headDim);
    float power = static_cast<float>(std::pow(static_cast<double>(theta), exponent));
    inv[static_cast<size_t>(i)] = 1.0f / power;
  }
  return inv;
}

void ropeCosSin(int64_t position, const std::vector<float> &invFreq, float *cos, float *sin) {
  float p = static_cast<float>(position);
  for (size_t i = 0; i < invFreq.size(); ++i) {
    float angle = p * invFreq[i];
    cos[i] = static_cast<float>(std::cos(static_cast<double>(angle)));
    sin[i] = static_cast<float>(std::sin(static_cast<double>(angle)));
  }
}

namespace {

/// Normalises (when weight is given) and rotates one head in place; x and y
/// are dim floats of scratch. Each output is rounded to FP16 by the batch
/// conversion (the scalar one's bits).
void transformHead(uint16_t *head, int64_t dim, int64_t rotary, const float *weight, float eps,
                   const float *cos, const float *sin, float *x, float *y) {
  detail::halfToFloat(head, x, dim);
  if (weight) {
    float meanSquare = detail::sumSquares(x, dim) / static_cast<float>(dim);
    float inverse = 1.0f / std::sqrt(meanSquare + eps);
    for (int64_t i = 0; i < dim; ++i)
      x[i] = x[i] * inverse * weight[i];
  }
  int64_t half = rotary / 2;
  for (int64_t i = 0; i < half; ++i) {
    float x1 = x[i], x2 = x[i + half];
    y[i] = x1 * cos[i] - x2 * sin[i];
    y[i + half] = x2 * cos[i] + x1 * sin[i];
  }
  for (int64_t i = rotary; i < dim; ++i)
    y[i] = x[i];
  detail::floatToHalf(y, head, dim);
}

/// The cos and sin of a step's angles (ropeCosSin of each token's
/// position), kept in the calling thread between calls: every layer of a
/// step asks for the same positions, and each angle costs a cos and a sin
/// in double.
struct RopeTable {
  float theta = 0;
  int64_t rotary = 0;
  std::vector<float> inverseFrequencies; // of theta and rotary
  std::vector<int32_t> positions;
  std::vector<float> cos, sin; // [token][rotary / 2]
};

const RopeTable &ropeTable(const int32_t *positions, int64_t tokens, int64_t rotary, float theta,
                           ThreadPool &pool) {
  // Named through a reference, so that the workers' lambda below fills
  // this thread's table, not their own.
  static thread_local RopeTable buffer;
  RopeTable &table = buffer;
  if (table.theta == theta && table.rotary == rotary &&
      table.positions.size() == static_cast<size_t>(tokens) &&
      std::equal(positions, positions + tokens, table.positions.begin()))
    return table;
  const int64_t half = rotary / 2;
  if (table.inverseFrequencies.empty() || table.theta != theta || table.rotary != rotary)
    table.inverseFrequencies = ropeInverseFrequencies(rotary, theta);
  table.theta = theta;
  table.rotary = rotary;
  table.positions.assign(positions, positions + tokens);
  table.cos.resize(static_cast<size_t>(tokens * half));
  table.sin.resize(table.cos.size());
  const std::vector<float> &inv = table.inverseFrequencies;
  pool.parallelFor(tokens, 4, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      assert(positions[t] >= 0);
      ropeCosSin(positions[t], inv, table.cos.data() + t * half, table.sin.data() + t * half);
    }
  });
  return table;
}

} // namespace

void qkNormRope(const QkNormRopeParams &params, uint16_t *qkv, const int32_t *positions,
                const uint16_t *qNorm, const uint16_t *kNorm, ThreadPool &pool) {
  const int64_t dim = params.headDim;
  assert(dim > 0 && dim % 2 == 0 && params.numHeads > 0 && params.numKvHeads > 0);
  const int64_t rowElems = (params.numHeads + 2 * params.numKvHeads) * dim;
  const int64_t rotary = params.rotaryDim > 0 ? params.rotaryDim : dim;
  assert(rotary % 2 == 0 && rotary <= dim);
  const RopeTable &table = ropeTable(positions, params.tokens, rotary, params.ropeTheta, pool);
  // The norm weights in the caller's slots 0 and 1; a head in each
  // worker's 2 and 3.
  const float *qWeight = qNorm ? detail::widenedHalves(qNorm, dim, 0) : nullptr;
  const float *kWeight = kNorm ? detail::widenedHalves(kNorm, dim, 1) : nullptr;
  const int64_t half = rotary / 2;
  pool.parallelFor(params.tokens, 4, [&](int64_t begin, int64_t end) {
    float *x = detail::threadBuffer(2, dim).data(), *y = detail::threadBuffer(3, dim).data();
    for (int64_t t = begin; t < end; ++t) {
      uint16_t *row = qkv + t * rowElems;
      for (int64_t h = 0; h < params.numHeads + params.numKvHeads; ++h) {
        const float *w = h < params.numHeads ? qWeight : kWeight;
        transformHead(row + h * dim, dim, rotary, w, params.eps, table.cos.data() + t * half,
                      table.sin.data() + t * half, x, y);
      }
    }
  });
}

} // namespace volt::cpu
