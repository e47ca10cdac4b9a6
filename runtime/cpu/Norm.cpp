//===- Norm.cpp -----------------------------------------------------------===//
#include "runtime/cpu/Norm.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/numerics/Half.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

namespace volt::cpu {
namespace {

void loadRow(const void *base, DType dtype, int64_t row, int64_t dim, float *out) {
  if (dtype == DType::F16)
    detail::halfToFloat(static_cast<const uint16_t *>(base) + row * dim, out, dim);
  else
    std::copy_n(static_cast<const float *>(base) + row * dim, dim, out);
}

/// Normalises x[dim] (FP32) with the FP32 weight and stores FP16.
void normalizeRow(const float *x, const float *weight, int64_t dim, float eps, uint16_t *out) {
  float meanSquare = detail::sumSquares(x, dim) / static_cast<float>(dim);
  float inverse = 1.0f / std::sqrt(meanSquare + eps);
  for (int64_t i = 0; i < dim; ++i)
    out[i] = floatToHalf(x[i] * inverse * weight[i]);
}

std::vector<float> loadWeight(const uint16_t *weight, int64_t dim) {
  std::vector<float> w(static_cast<size_t>(dim));
  detail::halfToFloat(weight, w.data(), dim);
  return w;
}

int64_t rowGrain(int64_t dim) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(dim, 1)); }

} // namespace

void rmsNorm(const RmsNormParams &params, const void *in, const uint16_t *weight, uint16_t *out,
             ThreadPool &pool) {
  assert(params.dim > 0 && params.rows >= 0);
  assert(in != static_cast<const void *>(out) || params.inDtype == DType::F16);
  std::vector<float> w = loadWeight(weight, params.dim);
  pool.parallelFor(params.rows, rowGrain(params.dim), [&](int64_t begin, int64_t end) {
    std::vector<float> x(static_cast<size_t>(params.dim));
    for (int64_t r = begin; r < end; ++r) {
      loadRow(in, params.inDtype, r, params.dim, x.data());
      normalizeRow(x.data(), w.data(), params.dim, params.eps, out + r * params.dim);
    }
  });
}

void addRmsNorm(const AddRmsNormParams &params, const void *in, void *residual,
                const uint16_t *weight, uint16_t *out, ThreadPool &pool) {
  assert(params.dim > 0 && params.tokens >= 0);
  const int64_t dim = params.dim;
  std::vector<float> w = loadWeight(weight, dim);
  pool.parallelFor(params.tokens, rowGrain(dim), [&](int64_t begin, int64_t end) {
    std::vector<float> x(static_cast<size_t>(dim)), add(static_cast<size_t>(dim));
    for (int64_t t = begin; t < end; ++t) {
      loadRow(residual, params.residualDtype, t, dim, x.data());
      loadRow(in, params.inDtype, t, dim, add.data());
      if (params.residualDtype == DType::F16) {
        uint16_t *res = static_cast<uint16_t *>(residual) + t * dim;
        for (int64_t i = 0; i < dim; ++i) {
          res[i] = floatToHalf(x[i] + add[i]);
          x[i] = halfToFloat(res[i]);
        }
      } else {
        float *res = static_cast<float *>(residual) + t * dim;
        for (int64_t i = 0; i < dim; ++i)
          res[i] = x[i] = x[i] + add[i];
      }
      normalizeRow(x.data(), w.data(), dim, params.eps, out + t * dim);
    }
  });
}

} // namespace volt::cpu
