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

/// A thread's row buffers, kept across ops so that a step allocates
/// nothing once it has run at its largest shape.
struct NormScratch {
  std::vector<float> x, add, y;
  void resize(int64_t dim) {
    x.resize(static_cast<size_t>(dim));
    add.resize(static_cast<size_t>(dim));
    y.resize(static_cast<size_t>(dim));
  }
};
NormScratch &normScratch() {
  static thread_local NormScratch scratch;
  return scratch;
}

/// The norm weight in FP32, in the calling thread's buffer (named through
/// a reference, so that the workers read this thread's).
const std::vector<float> &loadWeight(const uint16_t *weight, int64_t dim) {
  static thread_local std::vector<float> w;
  w.resize(static_cast<size_t>(dim));
  detail::halfToFloat(weight, w.data(), dim);
  return w;
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
  const std::vector<float> &w = loadWeight(weight, params.dim);
  pool.parallelFor(params.rows, rowGrain(params.dim), [&](int64_t begin, int64_t end) {
    NormScratch &s = normScratch();
    s.resize(params.dim);
    for (int64_t r = begin; r < end; ++r) {
      loadRow(in, params.inDtype, r, params.dim, s.x.data());
      normalizeRow(s.x.data(), w.data(), params.dim, params.eps, s.y.data(),
                   out + r * params.dim);
    }
  });
}

void addRmsNorm(const AddRmsNormParams &params, const void *in, void *residual,
                const uint16_t *weight, uint16_t *out, ThreadPool &pool) {
  assert(params.dim > 0 && params.tokens >= 0);
  const int64_t dim = params.dim;
  const std::vector<float> &w = loadWeight(weight, dim);
  pool.parallelFor(params.tokens, rowGrain(dim), [&](int64_t begin, int64_t end) {
    NormScratch &s = normScratch();
    s.resize(dim);
    float *x = s.x.data(), *add = s.add.data(), *y = s.y.data();
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
      normalizeRow(x, w.data(), dim, params.eps, y, out + t * dim);
    }
  });
}

} // namespace volt::cpu
