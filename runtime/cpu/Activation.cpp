//===- Activation.cpp -----------------------------------------------------===//
#include "runtime/cpu/Activation.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/Scratch.h"
#include "runtime/numerics/Half.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

namespace volt::cpu {

void siluMul(const SiluMulParams &params, const uint16_t *in, uint16_t *out, ThreadPool &pool) {
  const int64_t dim = params.dim;
  assert(dim > 0 && params.rows >= 0);
  pool.parallelFor(params.rows, std::max<int64_t>(1, 8192 / dim), [&](int64_t begin, int64_t end) {
    std::vector<float> &x = detail::threadBuffer(0, 2 * dim), &y = detail::threadBuffer(1, dim);
    for (int64_t r = begin; r < end; ++r) {
      detail::halfToFloat(in + r * 2 * dim, x.data(), 2 * dim);
      for (int64_t i = 0; i < dim; ++i) {
        float g = x[static_cast<size_t>(i)], u = x[static_cast<size_t>(dim + i)];
        y[static_cast<size_t>(i)] = detail::siluTimes(g, u);
      }
      // The batch conversion: the scalar one's bits.
      detail::floatToHalf(y.data(), out + r * dim, dim);
    }
  });
}

void sigmoidGateAdd(const SigmoidGateAddParams &params, uint16_t *out, const uint16_t *value,
                    const void *gate, ThreadPool &pool) {
  const int64_t dim = params.dim;
  assert(dim > 0 && params.tokens >= 0);
  pool.parallelFor(
      params.tokens, std::max<int64_t>(1, 8192 / dim), [&](int64_t begin, int64_t end) {
        std::vector<float> &o = detail::threadBuffer(0, dim), &v = detail::threadBuffer(1, dim);
        for (int64_t t = begin; t < end; ++t) {
          float g = params.gateDtype == DType::F16
                        ? halfToFloat(static_cast<const uint16_t *>(gate)[t])
                        : static_cast<const float *>(gate)[t];
          float sigmoid = 1.0f / (1.0f + std::exp(-g));
          detail::halfToFloat(out + t * dim, o.data(), dim);
          detail::halfToFloat(value + t * dim, v.data(), dim);
          for (int64_t i = 0; i < dim; ++i)
            o[static_cast<size_t>(i)] += sigmoid * v[static_cast<size_t>(i)];
          detail::floatToHalf(o.data(), out + t * dim, dim);
        }
      });
}

void sigmoidMul(const SigmoidMulParams &params, const uint16_t *in, const uint16_t *gate,
                uint16_t *out, ThreadPool &pool) {
  const int64_t dim = params.dim;
  assert(dim > 0 && params.rows >= 0);
  pool.parallelFor(params.rows, std::max<int64_t>(1, 8192 / dim), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      for (int64_t i = 0; i < dim; ++i) {
        const float x = halfToFloat(in[r * dim + i]), g = halfToFloat(gate[r * dim + i]);
        out[r * dim + i] = floatToHalf(x * (1.0f / (1.0f + std::exp(-g))));
      }
  });
}

} // namespace volt::cpu
