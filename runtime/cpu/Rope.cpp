//===- Rope.cpp -----------------------------------------------------------===//
#include "runtime/cpu/Rope.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/numerics/Half.h"

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

/// Normalises (when weight is given) and rotates one head in place.
void transformHead(uint16_t *head, int64_t dim, int64_t rotary, const float *weight, float eps,
                   const float *cos, const float *sin, float *x) {
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
    head[i] = floatToHalf(x1 * cos[i] - x2 * sin[i]);
    head[i + half] = floatToHalf(x2 * cos[i] + x1 * sin[i]);
  }
  for (int64_t i = rotary; i < dim; ++i)
    head[i] = floatToHalf(x[i]);
}

} // namespace

void qkNormRope(const QkNormRopeParams &params, uint16_t *qkv, const int32_t *positions,
                const uint16_t *qNorm, const uint16_t *kNorm, ThreadPool &pool) {
  const int64_t dim = params.headDim;
  assert(dim > 0 && dim % 2 == 0 && params.numHeads > 0 && params.numKvHeads > 0);
  const int64_t rowElems = (params.numHeads + 2 * params.numKvHeads) * dim;
  const int64_t rotary = params.rotaryDim > 0 ? params.rotaryDim : dim;
  assert(rotary % 2 == 0 && rotary <= dim);
  std::vector<float> inv = ropeInverseFrequencies(rotary, params.ropeTheta);
  std::vector<float> qWeight, kWeight;
  if (qNorm) {
    qWeight.resize(static_cast<size_t>(dim));
    detail::halfToFloat(qNorm, qWeight.data(), dim);
  }
  if (kNorm) {
    kWeight.resize(static_cast<size_t>(dim));
    detail::halfToFloat(kNorm, kWeight.data(), dim);
  }
  pool.parallelFor(params.tokens, 4, [&](int64_t begin, int64_t end) {
    std::vector<float> cos(static_cast<size_t>(rotary / 2)), sin(cos.size()),
        x(static_cast<size_t>(dim));
    for (int64_t t = begin; t < end; ++t) {
      assert(positions[t] >= 0);
      ropeCosSin(positions[t], inv, cos.data(), sin.data());
      uint16_t *row = qkv + t * rowElems;
      for (int64_t h = 0; h < params.numHeads + params.numKvHeads; ++h) {
        bool isQ = h < params.numHeads;
        const float *w =
            isQ ? (qNorm ? qWeight.data() : nullptr) : (kNorm ? kWeight.data() : nullptr);
        transformHead(row + h * dim, dim, rotary, w, params.eps, cos.data(), sin.data(),
                      x.data());
      }
    }
  });
}

} // namespace volt::cpu
