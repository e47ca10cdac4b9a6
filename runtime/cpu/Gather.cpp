//===- Gather.cpp ---------------------------------------------------------===//
#include "runtime/cpu/Gather.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace volt::cpu {

void embedding(const EmbeddingParams &params, const int32_t *tokens, const uint16_t *table,
               uint16_t *out, ThreadPool &pool) {
  assert(params.dim > 0 && params.tokens >= 0 && params.vocabRows >= 0);
  const int64_t dim = params.dim;
  pool.parallelFor(params.tokens, 64, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t row = static_cast<int64_t>(tokens[t]) - params.vocabStart;
      uint16_t *dst = out + t * dim;
      if (row >= 0 && row < params.vocabRows)
        std::memcpy(dst, table + row * dim, static_cast<size_t>(dim) * sizeof(uint16_t));
      else
        std::fill_n(dst, dim, uint16_t{0});
    }
  });
}

void gatherRows(const GatherRowsParams &params, const void *in, const int32_t *rowIndices,
                void *out, ThreadPool &pool) {
  assert(params.dim > 0 && params.rows >= 0);
  const size_t rowBytes = static_cast<size_t>(params.dim) * dtypeSize(params.dtype);
  pool.parallelFor(params.rows, 64, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      assert(rowIndices[s] >= 0);
      std::memcpy(static_cast<char *>(out) + static_cast<size_t>(s) * rowBytes,
                  static_cast<const char *>(in) + static_cast<size_t>(rowIndices[s]) * rowBytes,
                  rowBytes);
    }
  });
}

void concatRows(const ConcatParams &params, const void *a, const void *b, void *out,
                ThreadPool &pool) {
  assert(params.aDim > 0 && params.bDim > 0 && params.rows >= 0);
  const size_t elem = dtypeSize(params.dtype);
  const size_t aBytes = static_cast<size_t>(params.aDim) * elem;
  const size_t bBytes = static_cast<size_t>(params.bDim) * elem;
  pool.parallelFor(params.rows, 64, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      char *row = static_cast<char *>(out) + static_cast<size_t>(t) * (aBytes + bBytes);
      std::memcpy(row, static_cast<const char *>(a) + static_cast<size_t>(t) * aBytes, aBytes);
      std::memcpy(row + aBytes, static_cast<const char *>(b) + static_cast<size_t>(t) * bBytes,
                  bBytes);
    }
  });
}

} // namespace volt::cpu
