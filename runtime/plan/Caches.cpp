//===- Caches.cpp ---------------------------------------------------------===//
#include "runtime/plan/Caches.h"

#include <algorithm>
#include <vector>

namespace volt::plan {

uint64_t dtypeBytes(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::U8:
  case DType::F8E4M3:
    return 1;
  }
  return 0;
}

uint64_t cacheLayerBytes(const CacheGroup &g) {
  if (g.kind() == CacheKind::PagedKv)
    return 2 * uint64_t{g.num_blocks()} * g.block_size() * g.num_kv_heads() * g.head_dim() *
           dtypeBytes(g.dtype());
  return uint64_t{g.num_slots()} * g.slot_bytes();
}

uint32_t cacheLayerCount(const Rank &rank) {
  uint32_t n = 0;
  if (rank.caches())
    for (const CacheGroup *g : *rank.caches())
      n += g->layers() ? g->layers()->size() : 0;
  return n;
}

Result<CacheLayer> cacheLayer(const Rank &rank, uint32_t index) {
  uint32_t first = 0;
  if (rank.caches())
    for (uint32_t i = 0; i < rank.caches()->size(); ++i) {
      const CacheGroup *g = rank.caches()->Get(i);
      const uint32_t layers = g->layers() ? g->layers()->size() : 0;
      if (index < first + layers) {
        CacheLayer l;
        l.group = g;
        l.groupIndex = i;
        l.position = index - first;
        l.modelLayer = g->layers()->Get(l.position);
        l.bytes = cacheLayerBytes(*g);
        l.offset = g->offset() + l.position * l.bytes;
        return l;
      }
      first += layers;
    }
  return Error("cache operand " + std::to_string(index) + " is outside the rank's " +
               std::to_string(first) + " cache layers");
}

const CacheGroup *pagedKvGroup(const Rank &rank) {
  if (rank.caches())
    for (const CacheGroup *g : *rank.caches())
      if (g->kind() == CacheKind::PagedKv)
        return g;
  return nullptr;
}

uint32_t stateSlotCount(const Rank &rank) {
  if (rank.caches())
    for (const CacheGroup *g : *rank.caches())
      if (g->kind() == CacheKind::StateSlots)
        return g->num_slots();
  return 0;
}

Status checkCaches(const Rank &rank, uint32_t numStateSlots, const std::string &where) {
  if (!rank.caches())
    return Error(where + " lacks its cache groups");
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  uint32_t pagedGroups = 0;
  for (uint32_t i = 0; i < rank.caches()->size(); ++i) {
    const CacheGroup *g = rank.caches()->Get(i);
    const std::string name = where + ": cache group " + std::to_string(i) + " '" +
                             (g->name() ? g->name()->str() : "") + "'";
    if (g->kind() != CacheKind::PagedKv && g->kind() != CacheKind::StateSlots)
      return Error(name + " has an unknown kind");
    if (!g->layers() || g->layers()->size() == 0)
      return Error(name + " serves no layers");
    for (uint32_t j = 1; j < g->layers()->size(); ++j)
      if (g->layers()->Get(j) <= g->layers()->Get(j - 1))
        return Error(name + ": its layers are not ascending");
    if (dtypeBytes(g->dtype()) == 0)
      return Error(name + " has an unknown dtype");
    if (g->kind() == CacheKind::PagedKv) {
      ++pagedGroups;
      if (g->num_blocks() == 0 || g->block_size() == 0 || g->num_kv_heads() == 0 ||
          g->head_dim() == 0)
        return Error(name + ": a paged KV group needs blocks, a block size, heads and a head size");
    } else {
      if (g->num_slots() != numStateSlots)
        return Error(name + ": " + std::to_string(g->num_slots()) +
                     " state slots, expected max_num_seqs x (1 + num_speculative_tokens) (" +
                     std::to_string(numStateSlots) + ")");
      if (g->slot_bytes() == 0 || g->slot_bytes() > (uint64_t{1} << 36))
        return Error(name + ": slot_bytes " + std::to_string(g->slot_bytes()));
    }
    const uint64_t layerBytes = cacheLayerBytes(*g);
    if (layerBytes == 0 || layerBytes > (uint64_t{1} << 48) ||
        g->bytes() != layerBytes * g->layers()->size())
      return Error(name + ": " + std::to_string(g->bytes()) + " bytes for " +
                   std::to_string(g->layers()->size()) + " layers of " +
                   std::to_string(layerBytes));
    if (g->offset() > rank.cache_bytes() || g->bytes() > rank.cache_bytes() - g->offset())
      return Error(name + " lies outside the cache memory");
    ranges.emplace_back(g->offset(), g->offset() + g->bytes());
  }
  if (pagedGroups > 1)
    return Error(where + " has " + std::to_string(pagedGroups) + " paged KV groups (at most 1)");
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      return Error(where + ": two cache groups overlap");
  return Status::success();
}

} // namespace volt::plan
