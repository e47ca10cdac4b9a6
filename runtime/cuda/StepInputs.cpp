//===- StepInputs.cpp -----------------------------------------------------===//
#include "runtime/cuda/StepInputs.h"

#include <algorithm>
#include <cstring>

namespace volt::cuda {

InputLayout InputLayout::forLimits(uint64_t maxTokens, uint64_t maxSeqs, uint64_t maxBlocksPerSeq,
                                   uint64_t maxRows) {
  InputLayout l;
  l.capacity = {maxTokens, maxTokens, maxTokens, maxSeqs + 1, maxSeqs, maxSeqs * maxBlocksPerSeq,
                std::max(maxRows, maxSeqs), maxSeqs, maxTokens, maxTokens};
  uint64_t at = 0;
  for (size_t i = 0; i < kStepInputCount; ++i) {
    l.offset[i] = at;
    at += (l.capacity[i] * sizeof(int32_t) + 255) / 256 * 256;
  }
  l.totalBytes = at;
  return l;
}

std::vector<uint32_t> decodeBuckets(uint32_t maxNumSeqs, uint32_t maxNumBatchedTokens,
                                    std::span<const uint32_t> launchMaxTokens) {
  const uint32_t largest = std::min(maxNumSeqs, maxNumBatchedTokens);
  std::vector<uint32_t> buckets;
  for (uint64_t b = 1; b < largest; b *= 2)
    buckets.push_back(static_cast<uint32_t>(b));
  for (uint32_t limit : launchMaxTokens)
    if (limit >= 1 && limit < largest)
      buckets.push_back(limit);
  if (largest >= 1)
    buckets.push_back(largest);
  std::sort(buckets.begin(), buckets.end());
  buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
  return buckets;
}

uint32_t bucketFor(std::span<const uint32_t> buckets, uint32_t tokens) {
  auto it = std::lower_bound(buckets.begin(), buckets.end(), tokens);
  return it == buckets.end() ? 0 : *it;
}

bool isDecodeStep(const engine::StepBatch &batch) {
  return batch.numTokens >= 1 && batch.numTokens == batch.numSeqs;
}

std::array<uint64_t, kStepInputCount> stageInputs(const engine::StepBatch &batch, uint32_t padTo,
                                                  const InputLayout &layout, int32_t *staging) {
  const std::span<const int32_t> arrays[kStepInputCount] = {
      batch.tokens,      batch.positions,   batch.slotMapping, batch.seqStarts,
      batch.contextLens, batch.blockTables, batch.logitsRows,  batch.stateSlots,
      batch.stateSnapshots, batch.hiddenRows};
  std::array<uint64_t, kStepInputCount> counts{};
  for (size_t i = 0; i < kStepInputCount; ++i) {
    std::memcpy(staging + layout.offset[i] / sizeof(int32_t), arrays[i].data(),
                arrays[i].size_bytes());
    counts[i] = arrays[i].size();
  }
  auto array = [&](size_t i) { return staging + layout.offset[i] / sizeof(int32_t); };
  // The state kernels read a snapshot slot per token: a step that makes no
  // copies gets -1 for each (padding tokens included).
  const uint64_t tokens = std::max<uint64_t>(static_cast<uint64_t>(batch.numTokens), padTo);
  if (!batch.stateSlots.empty() && batch.stateSnapshots.empty()) {
    std::fill_n(array(8), tokens, -1);
    counts[8] = static_cast<uint64_t>(batch.numTokens);
  }
  const uint32_t real = static_cast<uint32_t>(batch.numSeqs);
  if (padTo <= real)
    return counts;
  const uint64_t width = static_cast<uint64_t>(batch.maxBlocksPerSeq);
  for (uint32_t p = real; p < padTo; ++p) {
    array(0)[p] = 0;  // a token id every vocabulary has
    array(1)[p] = 0;  // position 0: its own first token
    array(2)[p] = -1; // no KV slot: nothing is written to the cache
    array(3)[p + 1] = static_cast<int32_t>(p + 1);
    array(4)[p] = 1; // attends to its own key only: no cache read
    std::fill_n(array(5) + p * width, width, 0);
    array(6)[p] = static_cast<int32_t>(p);
    array(7)[p] = -1; // no state slot: nothing is read or kept
    array(8)[p] = -1; // no copy
  }
  // A plan without state reads no state slots, and the step may have none.
  const uint64_t stateSlots = batch.stateSlots.empty() ? 0 : padTo;
  // Padded steps are target decode steps: they carry no hidden rows.
  counts = {padTo, padTo,      padTo,      uint64_t{padTo} + 1, padTo, uint64_t{padTo} * width,
            padTo, stateSlots, stateSlots, 0};
  return counts;
}

} // namespace volt::cuda
