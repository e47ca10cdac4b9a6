//===- Gather.h - Embedding and GatherRows -----------------------*- C++ -*-===//
//
// OpKind Embedding, GatherRows (and GatherHidden) and Concat of
// runtime/schema/Ops.def: row copies,
// exact.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/ThreadPool.h"
#include "runtime/cpu/Types.h"

#include <cstdint>

namespace volt::cpu {

struct EmbeddingParams {
  int64_t tokens = 0;
  /// Hidden size H.
  int64_t dim = 0;
  /// The vocabulary rows this rank holds: [vocabStart, vocabStart + vocabRows).
  int64_t vocabStart = 0;
  int64_t vocabRows = 0;
};

/// out[t] = table[tokens[t] - vocabStart] when the token falls in this rank's
/// slice, else zeros (an all-reduce over the vocab-parallel ranks completes
/// the row). `table` FP16 [vocabRows, H], `out` FP16 [T, H].
void embedding(const EmbeddingParams &params, const int32_t *tokens, const uint16_t *table,
               uint16_t *out, ThreadPool &pool);

struct GatherRowsParams {
  /// Rows to gather (R, the logits rows).
  int64_t rows = 0;
  /// Elements per row (H).
  int64_t dim = 0;
  DType dtype = DType::F16;
};

/// out[r] = in[rowIndices[r]]; `in` [T, H], `out` [R, H].
void gatherRows(const GatherRowsParams &params, const void *in, const int32_t *rowIndices,
                void *out, ThreadPool &pool);

struct ConcatParams {
  int64_t rows = 0;
  /// Elements per row of a and of b.
  int64_t aDim = 0, bDim = 0;
  DType dtype = DType::F16;
};

/// out[t] = a[t] | b[t] (OpKind Concat): `a` [rows, aDim], `b` [rows,
/// bDim], `out` [rows, aDim + bDim], all of one dtype.
void concatRows(const ConcatParams &params, const void *a, const void *b, void *out,
                ThreadPool &pool);

} // namespace volt::cpu
