//===- StepInputs.h - step inputs as the device reads them -----*- C++ -*-===//
//
// The StepInput arrays of a step (runtime/engine/StepBatch) live in
// one device allocation at fixed offsets, so that a captured graph can keep
// reading them step after step, and are staged in pinned host memory of the
// same layout, so that their upload is an asynchronous DMA.
//
// A decode step (every sequence contributes one token, T == S) replays the
// graph captured for its bucket, the smallest bucket size B >= T. Its
// inputs are padded to B tokens and B sequences with inert entries: each
// padding sequence has one token (id 0, position 0) whose KV slot is -1,
// so paged_attention writes nothing to the cache, and a context of one, so
// it attends to its own key only and reads no cache block; its state slot
// is -1, so recurrent layers start it from zeros and keep nothing; its
// logits row is computed and never copied out. The functions here are pure, so that
// padding and buckets are tested without a GPU.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/StepBackend.h"

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace volt::cuda {

/// The number of StepInput arrays (plan.fbs: Tokens .. HiddenRows).
inline constexpr size_t kStepInputCount = 10;

/// Where each StepInput array sits in the device allocation and in its
/// pinned host staging (the same offsets), and how many elements it holds.
struct InputLayout {
  std::array<uint64_t, kStepInputCount> offset{};
  std::array<uint64_t, kStepInputCount> capacity{};
  uint64_t totalBytes = 0;

  /// Room for a step of `maxTokens` tokens, `maxSeqs` sequences and
  /// `maxRows` logits rows (0: maxSeqs) with block tables of width
  /// `maxBlocksPerSeq`; each array 256-byte aligned.
  static InputLayout forLimits(uint64_t maxTokens, uint64_t maxSeqs, uint64_t maxBlocksPerSeq,
                               uint64_t maxRows = 0);
};

/// The token counts decode steps are captured for: powers of two below
/// `maxNumSeqs`, every launch's max_tokens below it (so that a padded step
/// selects the same kernel variants as the unpadded one: Op.launches
/// switches variant at those counts), and `maxNumSeqs` itself; none above
/// `maxNumBatchedTokens`. Sorted, without duplicates.
std::vector<uint32_t> decodeBuckets(uint32_t maxNumSeqs, uint32_t maxNumBatchedTokens,
                                    std::span<const uint32_t> launchMaxTokens);

/// The smallest bucket >= `tokens`; 0 when `tokens` exceeds every bucket.
uint32_t bucketFor(std::span<const uint32_t> buckets, uint32_t tokens);

/// Whether every sequence of `batch` contributes exactly one token.
bool isDecodeStep(const engine::StepBatch &batch);

/// Writes `batch`'s arrays into `staging` (laid out by `layout`), padded to
/// `padTo` tokens and sequences as the file comment says (`padTo` 0: no
/// padding; otherwise `batch` is a decode step of at most `padTo`
/// sequences and `padTo` fits the layout). Returns each array's element
/// count, what the upload copies.
std::array<uint64_t, kStepInputCount> stageInputs(const engine::StepBatch &batch, uint32_t padTo,
                                                  const InputLayout &layout, int32_t *staging);

} // namespace volt::cuda
