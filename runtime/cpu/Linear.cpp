//===- Linear.cpp ---------------------------------------------------------===//
#include "runtime/cpu/Linear.h"

#include "runtime/cpu/Matmul.h"
#include "runtime/numerics/Half.h"

#include <algorithm>
#include <cassert>
#include <vector>

namespace volt::cpu {
namespace {

/// The bias in FP32, in the calling thread's buffer (null without one).
const float *loadBias(const uint16_t *bias, int64_t n) {
  if (!bias)
    return nullptr;
  static thread_local std::vector<float> b;
  b.resize(static_cast<size_t>(n));
  detail::halfToFloat(bias, b.data(), n);
  return b.data();
}

/// The body both ops share; `epilogue` has the scales and the bias.
void multiply(int64_t tokens, int64_t k, int64_t n, const uint16_t *in,
              detail::GemmEpilogue epilogue, bool silu, DType outDtype, Numerics numerics,
              void *out, ThreadPool &pool, const detail::WeightRows &weights) {
  const detail::Activations x =
      detail::loadActivations(detail::activationScratch(), in, tokens, k,
                              detail::gemmPath(numerics), [](int64_t j) { return j; }, pool);
  const int64_t columns = silu ? n / 2 : n;
  epilogue.siluUpOffset = silu ? n / 2 : -1;
  const int64_t group = detail::columnGroup(columns, tokens, pool.threads(), weights.rowBytes());
  const int64_t items = (columns + group - 1) / group;
  pool.parallelFor(items, 1, [&](int64_t begin, int64_t end) {
    detail::GemmScratch &scratch = detail::gemmScratch();
    for (int64_t item = begin; item < end; ++item) {
      const int64_t column0 = item * group, width = std::min(group, columns - column0);
      detail::gemmItem(column0, width, x, tokens, k, epilogue, scratch, weights,
                       [&](int64_t t, const float *y) {
                         if (outDtype == DType::F16)
                           detail::floatToHalf(y, static_cast<uint16_t *>(out) + t * columns +
                                                      column0,
                                               width);
                         else
                           std::copy(y, y + width,
                                     static_cast<float *>(out) + t * columns + column0);
                       });
    }
  });
}

} // namespace

void linear(const LinearParams &params, const uint16_t *in, const uint16_t *weight,
            const uint16_t *bias, void *out, ThreadPool &pool) {
  const int64_t k = params.inFeatures, n = params.outFeatures;
  assert(k > 0 && n > 0 && params.tokens >= 0);
  detail::GemmEpilogue epilogue;
  epilogue.bias = loadBias(bias, n);
  multiply(params.tokens, k, n, in, epilogue, false, params.outDtype, params.numerics, out, pool,
           detail::WeightRows::f16(weight, k));
}

void fp8Linear(const LinearParams &params, const uint16_t *in, const Fp8Matrix &weight,
               const uint16_t *bias, void *out, ThreadPool &pool) {
  const int64_t k = params.inFeatures, n = params.outFeatures;
  assert(k > 0 && n > 0 && params.tokens >= 0 && weight.rows == n && weight.cols == k);
  detail::GemmEpilogue epilogue;
  // dotBlock gives the sums of the E4M3 values times 2^-8 (WeightRows::fp8).
  epilogue.rowScales = weight.rowScales;
  epilogue.rowScaleFactor = detail::kFp8RowsBias;
  epilogue.bias = loadBias(bias, n);
  multiply(params.tokens, k, n, in, epilogue, false, params.outDtype, params.numerics, out, pool,
           detail::WeightRows::fp8(weight.bytes, k));
}

void qlinear(const QLinearParams &params, const uint16_t *in, const Nvfp4Matrix &weight,
             const uint16_t *bias, void *out, ThreadPool &pool) {
  const int64_t k = params.inFeatures, n = params.outFeatures;
  const bool silu = params.epilogue == Epilogue::SiluMul;
  assert(k > 0 && k % 16 == 0 && n > 0 && params.tokens >= 0);
  assert(weight.rows == n && weight.cols == k && (!silu || n % 2 == 0));
  detail::GemmEpilogue epilogue;
  epilogue.partScales = params.globalScales.data();
  if (params.partRows.empty()) {
    assert(params.globalScales.size() == 1);
  } else {
    assert(params.globalScales.size() == params.partRows.size());
    std::vector<int64_t> &ends = detail::partEnds(params.partRows);
    assert(ends.back() == n);
    epilogue.partEnds = ends.data();
    epilogue.parts = static_cast<int64_t>(ends.size());
  }
  epilogue.bias = loadBias(bias, n);
  multiply(params.tokens, k, n, in, epilogue, silu, params.outDtype, params.numerics, out, pool,
           detail::WeightRows::nvfp4(weight.packed, weight.scales, k));
}

} // namespace volt::cpu
