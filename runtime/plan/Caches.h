//===- Caches.h - where a rank's cache layers lie --------------*- C++ -*-===//
//
// A rank's cache memory is one region of Rank.cache_bytes holding its
// cache groups (plan.fbs: CacheGroup): the paged K and V of the
// full-attention layers and the per-sequence state of recurrent layers.
// Both backends address a Cache operand through this, so that the byte
// layout is decided in one place; the plan loader checks it with
// checkCaches() before any backend sees the plan.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/schema/PlanFormat.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <string>

namespace volt::plan {

/// Bytes of one element of `dtype`.
uint64_t dtypeBytes(DType dtype);

/// Bytes of one layer of `group`.
uint64_t cacheLayerBytes(const CacheGroup &group);

/// One layer of a cache group, as a Cache operand names it.
struct CacheLayer {
  const CacheGroup *group = nullptr;
  /// The group's index in Rank.caches and the layer's position in it.
  uint32_t groupIndex = 0;
  uint32_t position = 0;
  /// The model layer (group->layers()[position]).
  uint32_t modelLayer = 0;
  /// Where the layer starts in the rank's cache region, and its bytes.
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

/// The layer a Cache operand of `rank` with index `index` names; an error
/// when there is none.
Result<CacheLayer> cacheLayer(const Rank &rank, uint32_t index);

/// The rank's layers over all its groups.
uint32_t cacheLayerCount(const Rank &rank);

/// The rank's PagedKv group, or null (a model without attention layers).
const CacheGroup *pagedKvGroup(const Rank &rank);

/// Slots per layer of the rank's StateSlots groups (they all have
/// max_num_seqs x (1 + num_speculative_tokens)); 0 when it has none.
uint32_t stateSlotCount(const Rank &rank);

/// Checks the rank's groups: kinds, sizes, layers ascending, offsets inside
/// cache_bytes without overlap, at most one PagedKv group, StateSlots
/// groups of `numStateSlots` slots (max_num_seqs x (1 +
/// num_speculative_tokens): a slot per sequence and the copies a verify
/// step keeps). `where` prefixes errors.
Status checkCaches(const Rank &rank, uint32_t numStateSlots, const std::string &where);

} // namespace volt::plan
