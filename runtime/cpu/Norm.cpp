//===- Norm.cpp -----------------------------------------------------------===//
#include "runtime/cpu/Norm.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/Scratch.h"
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

/// Normalises x[dim] (FP32) with the FP32 weight and stores FP16: each
/// element (x * inverse) * weight in FP32, then rounded to FP16 (the
/// batch conversion, which has the scalar one's bits).
void normalizeRow(const float *x, const float *weight, int64_t dim, float eps, float *y,
                  uint16_t *out) {
  float meanSquare = detail::sumSquares(x, dim) / static_cast<float>(dim);
  float inverse = 1.0f / std::sqrt(meanSquare + eps);
  for (int64_t i = 0; i < dim; ++i)
    y[i] = x[i] * inverse * weight[i];
  detail::floatToHalf(y, out, dim);
}

int64_t rowGrain(int64_t dim) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(dim, 1)); }

} // namespace

void rmsNorm(const RmsNormParams &params, const void *in, const uint16_t *weight, uint16_t *out,
             ThreadPool &pool) {
  assert(params.dim > 0 && params.rows >= 0);
  assert(in != static_cast<const void *>(out) || params.inDtype == DType::F16);
  // The weight in the caller's slot 0; the rows in each worker's 1 and 2.
  const float *w = detail::widenedHalves(weight, params.dim, 0);
  pool.parallelFor(params.rows, rowGrain(params.dim), [&](int64_t begin, int64_t end) {
    float *x = detail::threadBuffer(1, params.dim).data();
    float *y = detail::threadBuffer(2, params.dim).data();
    for (int64_t r = begin; r < end; ++r) {
      loadRow(in, params.inDtype, r, params.dim, x);
      normalizeRow(x, w, params.dim, params.eps, y, out + r * params.dim);
    }
  });
}

void addRmsNorm(const AddRmsNormParams &params, const void *in, void *residual,
                const uint16_t *weight, uint16_t *out, ThreadPool &pool) {
  assert(params.dim > 0 && params.tokens >= 0);
  const int64_t dim = params.dim;
  const float *w = detail::widenedHalves(weight, dim, 0);
  pool.parallelFor(params.tokens, rowGrain(dim), [&](int64_t begin, int64_t end) {
    float *x = detail::threadBuffer(1, dim).data(), *add = detail::threadBuffer(2, dim).data(),
          *y = detail::threadBuffer(3, dim).data();
    for (int64_t t = begin; t < end; ++t) {
      loadRow(residual, params.residualDtype, t, dim, x);
      loadRow(in, params.inDtype, t, dim, add);
      if (params.residualDtype == DType::F16) {
        // The sum rounded to FP16 is the residual, and what is normalised.
        uint16_t *res = static_cast<uint16_t *>(residual) + t * dim;
        for (int64_t i = 0; i < dim; ++i)
          y[i] = x[i] + add[i];
        detail::floatToHalf(y, res, dim);
        detail::halfToFloat(res, x, dim);
      } else {
        float *res = static_cast<float *>(residual) + t * dim;
        for (int64_t i = 0; i < dim; ++i)
          res[i] = x[i] = x[i] + add[i];
      }
      normalizeRow(x, w, dim, params.eps, y, out + t * dim);
    }
  });
}

} // namespace volt::cpu
