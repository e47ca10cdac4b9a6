//===- Matmul.h - the shared body of Linear, QLinear and MoE GEMMs -*- C++ -*-===//
//
// Private to runtime/cpu. Work is split into items of columnGroup()
// output columns; an item multiplies its weight rows against FP32 copies of
// the activation rows (detail::dotBlock), a token tile at a time so the tile
// stays in cache. Every accumulator is one detail::dot (Kernels.h), so
// tiling, threading and the instruction set change speed, never bits.
// Numerics::Fast swaps the dot (gemmPath: BF16 rows and dotBlockBf16, or
// dotBlockFma), again the same bits for any tiling and thread count.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/ThreadPool.h"
#include "runtime/cpu/Types.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace volt::cpu::detail {

/// Output columns per work item; at up to 4 tokens an item may grow to
/// about kItemBytes of weights (up to kMaxColumnGroup columns), at up to
/// kFewTokens to kMaxFewTokensColumnGroup columns.
inline constexpr int64_t kColumnGroup = 16;
inline constexpr int64_t kItemBytes = int64_t{512} << 10;
inline constexpr int64_t kMaxColumnGroup = 1024;
inline constexpr int64_t kFewTokens = 32;
inline constexpr int64_t kMaxFewTokensColumnGroup = 64;

/// Output columns per work item for `columns` in all over `threads`, with
/// at most `tokens` activation rows per item and `rowBytes` of weights per
/// column. At a few tokens an item mostly streams its weight rows, and each
/// jump between items (a fused gate|up item reads two regions) restarts the
/// prefetchers: items grow to leave about four per thread, up to about
/// kItemBytes at up to 4 tokens (read once; the FP16 lm_head read no faster
/// with items of 1 MiB and slower with 2, the NVFP4 one 11 % faster with
/// 516 KiB than with 147), up to kMaxFewTokensColumnGroup at up to kFewTokens (a prompt's
/// experts: the rows of an item are reread for every token group, and 64
/// FP16 gate and up rows of 1024 stay in a 1 MiB L2). With more tokens:
/// kColumnGroup.
inline int64_t columnGroup(int64_t columns, int64_t tokens, int threads, int64_t rowBytes) {
  if (tokens > kFewTokens)
    return kColumnGroup;
  const int64_t most =
      tokens > 4 ? kMaxFewTokensColumnGroup
                 : std::clamp(kItemBytes / std::max<int64_t>(rowBytes, 1) / kColumnGroup *
                                  kColumnGroup,
                              kColumnGroup, kMaxColumnGroup);
  // Four items per thread, each cut into the fewest equal parts that fit
  // `most`: the items stay a multiple of the threads (10 items of 448 of
  // 4096 columns left one thread two more than the other).
  const int64_t fourPerThread = columns / (4 * std::max(threads, 1));
  const int64_t parts = std::max<int64_t>(1, (fourPerThread + most - 1) / most);
  return std::clamp(fourPerThread / parts / kColumnGroup * kColumnGroup, kColumnGroup, most);
}

/// How a GEMM multiplies here: the reference (dotBlock), Numerics::Fast
/// with BF16 dot products (dotBlockBf16) or, on CPUs without them, with
/// fused multiply-adds (dotBlockFma).
enum class GemmPath : uint8_t { Reference, Bf16, Fma };

/// The path of a GEMM asked for `numerics`: BF16 where the CPU has it and
/// dotBlock is not limited below VBMI, else FMA where an AVX-512 or AVX2 +
/// FMA path runs (setDotBlockPathLimit lets tests take each fallback).
inline GemmPath gemmPath(Numerics numerics) {
  if (numerics != Numerics::Fast)
    return GemmPath::Reference;
  if (fastNumericsAvailable() && dotBlockPath() == DotBlockPath::Avx512Vbmi)
    return GemmPath::Bf16;
  return fmaDotAvailable() ? GemmPath::Fma : GemmPath::Reference;
}

/// A GEMM's activation rows: FP32 copies (the reference and the FMA
/// path), or BF16 (rounded to nearest even, zero-padded to bf16Stride) for
/// the BF16 path; row t at t * stride of whichever is set.
struct Activations {
  const float *f32 = nullptr;
  const uint16_t *bf16 = nullptr;
  int64_t stride = 0;
  bool fma = false;

  Activations from(int64_t row) const {
    return {f32 ? f32 + row * stride : nullptr, bf16 ? bf16 + row * stride : nullptr, stride, fma};
  }
};

/// The calling thread's activation buffers: kept across ops, so a step
/// allocates nothing once it has run at its largest shape. An op uses them
/// from its calling thread only (ops are not reentrant).
struct ActivationScratch {
  std::vector<float> f32;
  std::vector<uint16_t> bf16;
};
inline ActivationScratch &activationScratch() {
  static thread_local ActivationScratch x;
  return x;
}

/// Copies of FP16 activation rows [rows, cols] in the form `path` reads
/// (see Activations), in `x`: row j is in[source(j)].
template <typename Source>
Activations loadActivations(ActivationScratch &x, const uint16_t *in, int64_t rows, int64_t cols,
                            GemmPath path, Source &&source, ThreadPool &pool) {
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(cols, 1));
  if (path == GemmPath::Bf16) {
    const int64_t stride = bf16Stride(cols);
    x.bf16.resize(static_cast<size_t>(rows * stride));
    uint16_t *dst = x.bf16.data();
    pool.parallelFor(rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j)
        halfToBf16(in + source(j) * cols, dst + j * stride, cols, stride);
    });
    return {nullptr, dst, stride};
  }
  x.f32.resize(static_cast<size_t>(rows * cols));
  float *dst = x.f32.data();
  pool.parallelFor(rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j)
      halfToFloat(in + source(j) * cols, dst + j * cols, cols);
  });
  return {dst, nullptr, cols, path == GemmPath::Fma};
}

/// How a GEMM turns the FP32 dot of weight row r into its output:
/// y(r) = dot * scale(r) (when there are part or row scales) + bias[r]
/// (when given), where scale(r) is rowScales[r] * rowScaleFactor, or
/// partScales[p] for the part p whose rows [partEnds[p - 1], partEnds[p])
/// hold r; with `siluUpOffset` >= 0 the
/// output column c is siluTimes(y(c), y(c + siluUpOffset)), otherwise it is
/// y(c).
struct GemmEpilogue {
  const float *partScales = nullptr;
  /// A scale per weight row (FP8 rows), times rowScaleFactor (a power of
  /// two, so the product is exact); in place of part scales.
  const float *rowScales = nullptr;
  float rowScaleFactor = 1.0f;
  /// Cumulative row counts of the parts; null with partScales: one part.
  const int64_t *partEnds = nullptr;
  int64_t parts = 0;
  const float *bias = nullptr;
  int64_t siluUpOffset = -1;

  float scale(int64_t row) const {
    if (rowScales)
      return rowScales[row] * rowScaleFactor;
    if (!partEnds)
      return partScales[0];
    int64_t p = 0;
    while (p + 1 < parts && row >= partEnds[p])
      ++p;
    return partScales[p];
  }
};

/// The cumulative row counts of `partRows`, in the calling thread's buffer.
inline std::vector<int64_t> &partEnds(std::span<const uint32_t> partRows) {
  static thread_local std::vector<int64_t> ends;
  ends.clear();
  int64_t row = 0;
  for (uint32_t rows : partRows)
    ends.push_back(row += rows);
  return ends;
}

/// Scratch one thread reuses across its items and ops (see gemmScratch).
struct GemmScratch {
  std::vector<float> weights;
  std::vector<float> acc;
  /// One activation row's outputs of an item, contiguous for storeRow.
  std::vector<float> row;
};

/// The calling thread's GEMM scratch, kept across ops.
inline GemmScratch &gemmScratch() {
  static thread_local GemmScratch scratch;
  return scratch;
}

/// Output columns [column0, column0 + columns) for `tokens` activation rows
/// x [tokens, cols] against `weights` (its row r is output column r), by
/// dotBlock, dotBlockFma when x says so, or dotBlockBf16 when x holds BF16
/// rows; storeRow(t, y) stores y[c] as output column column0 + c of
/// activation row t, for c < columns.
template <typename StoreRow>
void gemmItem(int64_t column0, int64_t columns, const Activations &x, int64_t tokens, int64_t cols,
              const GemmEpilogue &epilogue, GemmScratch &scratch, const WeightRows &weights,
              StoreRow &&storeRow) {
  const bool silu = epilogue.siluUpOffset >= 0;
  const int64_t rows = silu ? 2 * columns : columns;
  auto weightRow = [&](int64_t r) {
    return r < columns ? column0 + r : column0 + epilogue.siluUpOffset + (r - columns);
  };

  // A token tile of about 256 KiB of activations stays in cache across the
  // item's rows.
  const int64_t tile = std::clamp<int64_t>((int64_t{256} << 10) / (cols * 4), 4, 256);
  scratch.acc.resize(static_cast<size_t>(rows * tile));
  float *acc = scratch.acc.data();
  for (int64_t t0 = 0; t0 < tokens; t0 += tile) {
    const int64_t n = std::min(tile, tokens - t0);
    const Activations xt = x.from(t0);
    auto block = [&](int64_t first, float *out) {
      if (xt.bf16)
        dotBlockBf16(weights, first, columns, xt.bf16, xt.stride, n, out, tile, scratch.weights);
      else if (xt.fma)
        dotBlockFma(weights, first, columns, xt.f32, xt.stride, n, out, tile, scratch.weights);
      else
        dotBlock(weights, first, columns, xt.f32, xt.stride, n, out, tile, scratch.weights);
    };
    block(column0, acc);
    if (silu)
      block(column0 + epilogue.siluUpOffset, acc + columns * tile);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t row = weightRow(r);
      const bool scaled = epilogue.partScales != nullptr || epilogue.rowScales != nullptr;
      const float scale = scaled ? epilogue.scale(row) : 1.0f;
      for (int64_t i = 0; i < n; ++i) {
        float y = scaled ? acc[r * tile + i] * scale : acc[r * tile + i];
        acc[r * tile + i] = epilogue.bias ? y + epilogue.bias[row] : y;
      }
    }
    scratch.row.resize(static_cast<size_t>(columns));
    float *y = scratch.row.data();
    for (int64_t i = 0; i < n; ++i) {
      if (silu)
        for (int64_t c = 0; c < columns; ++c)
          y[c] = siluTimes(acc[c * tile + i], acc[(columns + c) * tile + i]);
      else
        for (int64_t c = 0; c < columns; ++c)
          y[c] = acc[c * tile + i];
      storeRow(t0 + i, static_cast<const float *>(y));
    }
  }
}

/// The body of the grouped MoE GEMMs (MoeGroupedLinear, MoeGroupedQLinear):
/// the pairs' activations (row j is in[order[j] / topK] with gatherTokens,
/// else in[j]), then one item per (expert with pairs, 16 output columns),
/// run by gemmItem against expert e's rows weights.from(e * n) with
/// epilogueOf(e) (its siluUpOffset is set here) in `numerics`; out is FP16
/// [pairs, silu ? n / 2 : n].
template <typename EpilogueOf>
void groupedGemm(const uint16_t *in, const int32_t *order, const int32_t *expertStarts,
                 int64_t experts, int64_t topK, int64_t pairs, bool gatherTokens, int64_t k,
                 int64_t n, bool silu, const WeightRows &weights, EpilogueOf &&epilogueOf,
                 Numerics numerics, uint16_t *out, ThreadPool &pool) {
  const Activations x = loadActivations(
      activationScratch(), in, pairs, k, gemmPath(numerics),
      [&](int64_t j) -> int64_t { return gatherTokens ? order[j] / topK : j; }, pool);
  const int64_t columns = silu ? n / 2 : n;
  struct Item {
    int64_t expert;
    int64_t column0;
  };
  int64_t active = 0, mostPairs = 0;
  for (int64_t e = 0; e < experts; ++e)
    if (const int64_t count = expertStarts[e + 1] - expertStarts[e]; count > 0) {
      ++active;
      mostPairs = std::max(mostPairs, count);
    }
  const int64_t group =
      columnGroup(active * columns, mostPairs, pool.threads(), weights.rowBytes());
  // The calling thread's buffer, named through a reference so that the
  // workers' lambda reads this thread's (not their own thread_local).
  static thread_local std::vector<Item> itemBuffer;
  std::vector<Item> &items = itemBuffer;
  items.clear();
  for (int64_t e = 0; e < experts; ++e)
    if (expertStarts[e + 1] > expertStarts[e])
      for (int64_t c0 = 0; c0 < columns; c0 += group)
        items.push_back({e, c0});

  pool.parallelFor(static_cast<int64_t>(items.size()), 1, [&](int64_t begin, int64_t end) {
    GemmScratch &scratch = gemmScratch();
    for (int64_t i = begin; i < end; ++i) {
      const Item item = items[static_cast<size_t>(i)];
      const int64_t first = expertStarts[item.expert];
      const int64_t count = expertStarts[item.expert + 1] - first;
      GemmEpilogue epilogue = epilogueOf(item.expert);
      epilogue.siluUpOffset = silu ? n / 2 : -1;
      const int64_t width = std::min(group, columns - item.column0);
      gemmItem(item.column0, width, x.from(first), count, k, epilogue, scratch,
               weights.from(item.expert * n), [&](int64_t j, const float *y) {
                 floatToHalf(y, out + (first + j) * columns + item.column0, width);
               });
    }
  });
}

} // namespace volt::cpu::detail
