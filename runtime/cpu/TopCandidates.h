//===- TopCandidates.h - the K largest logits of each row --------*- C++ -*-===//
//
// The reference for templates/top_candidates.cu: per sequence, the K
// largest logits with their ids, and the row's normalisers, from which the
// engine samples without the whole vocabulary row whenever the request's
// filters keep only candidates. Order: larger logit first, equal logits by
// lower id (-0 equals +0); NaN logits are never candidates and count in no
// sum.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/ThreadPool.h"

#include <cstdint>

namespace volt::cpu {

struct TopCandidatesParams {
  /// Rows (S), their length (the vocabulary), candidates per row (K <=
  /// vocab).
  int64_t rows = 0;
  int64_t vocab = 0;
  int64_t k = 0;
};

/// For each row r of `logits` f32[rows, vocab] with temperature
/// temperatures[r]: ids[r][0..k) and values[r][0..k) the k largest logits
/// (id -1 and NaN past the row's non-NaN logits); stats[r] = (M,
/// sum e^(x - M), sum e^((x - M) / T)) over the non-NaN logits, M their
/// largest (-inf when there is none), the last 1 when T <= 0. Sums are
/// computed in double and rounded once.
void topCandidates(const TopCandidatesParams &params, const float *logits,
                   const float *temperatures, int32_t *ids, float *values, float *stats,
                   ThreadPool &pool);

} // namespace volt::cpu
