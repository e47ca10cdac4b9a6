//===- Linear.cpp ---------------------------------------------------------===//
#include "runtime/cpu/Linear.h"

#include "runtime/cpu/Matmul.h"
#include "runtime/numerics/Half.h"

#include <cassert>
#include <vector>

namespace volt::cpu {
namespace {

/// Stores y at out[t, n] in `dtype`.
inline void store(void *out, DType dtype, int64_t index, float y) {
  if (dtype == DType::F16)
    static_cast<uint16_t *>(out)[index] = floatToHalf(y);
  else
    static_cast<float *>(out)[index] = y;
}

std::vector<float> loadBias(const uint16_t *bias, int64_t n) {
  std::vector<float> b;
  if (bias) {
    b.resize(static_cast<size_t>(n));
    detail::halfToFloat(bias, b.data(), n);
  }
  return b;
}

/// The body both ops share; decodeRow(n, out) writes weight row n in FP32.
template <typename DecodeRow>
void multiply(int64_t tokens, int64_t k, int64_t n, const uint16_t *in, const float *rowScale,
              const std::vector<float> &bias, DType outDtype, void *out, ThreadPool &pool,
              DecodeRow &&decodeRow) {
  std::vector<float> x = detail::loadActivations(
      in, tokens, k, [](int64_t j) { return j; }, pool);
  int64_t groups = (n + detail::kRowGroup - 1) / detail::kRowGroup;
  pool.parallelFor(groups, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> w(static_cast<size_t>(detail::kRowGroup * k));
    for (int64_t g = begin; g < end; ++g) {
      int64_t row0 = g * detail::kRowGroup;
      int64_t rows = std::min(detail::kRowGroup, n - row0);
      for (int64_t r = 0; r < rows; ++r)
        decodeRow(row0 + r, w.data() + r * k);
      detail::multiplyGroup(w.data(), rows, x.data(), tokens, k,
                            [&](int64_t t, int64_t r, float acc) {
                              int64_t row = row0 + r;
                              float y = rowScale ? acc * rowScale[row] : acc;
                              if (!bias.empty())
                                y += bias[static_cast<size_t>(row)];
                              store(out, outDtype, t * n + row, y);
                            });
    }
  });
}

} // namespace

void linear(const LinearParams &params, const uint16_t *in, const uint16_t *weight,
            const uint16_t *bias, void *out, ThreadPool &pool) {
  const int64_t k = params.inFeatures, n = params.outFeatures;
  assert(k > 0 && n > 0 && params.tokens >= 0);
  multiply(params.tokens, k, n, in, nullptr, loadBias(bias, n), params.outDtype, out, pool,
           [&](int64_t row, float *w) { detail::halfToFloat(weight + row * k, w, k); });
}

void qlinear(const QLinearParams &params, const uint16_t *in, const Nvfp4Matrix &weight,
             const uint16_t *bias, void *out, ThreadPool &pool) {
  const int64_t k = params.inFeatures, n = params.outFeatures;
  assert(k > 0 && k % 16 == 0 && n > 0 && params.tokens >= 0);
  assert(weight.rows == n && weight.cols == k);
  std::vector<float> rowScale(static_cast<size_t>(n));
  if (params.partRows.empty()) {
    assert(params.globalScales.size() == 1);
    std::fill(rowScale.begin(), rowScale.end(), params.globalScales[0]);
  } else {
    assert(params.globalScales.size() == params.partRows.size());
    size_t row = 0;
    for (size_t p = 0; p < params.partRows.size(); ++p)
      for (uint32_t i = 0; i < params.partRows[p]; ++i)
        rowScale[row++] = params.globalScales[p];
    assert(static_cast<int64_t>(row) == n);
  }
  multiply(params.tokens, k, n, in, rowScale.data(), loadBias(bias, n), params.outDtype, out, pool,
           [&](int64_t row, float *w) {
             detail::decodeNvfp4Row(weight.packed + row * (k / 2), weight.scales + row * (k / 16),
                                    k, w);
           });
}

} // namespace volt::cpu
