//===- PlanFile.h - loading and checking a plan and its weight packs -*- C++ -*-===//
//
// Nothing in a plan is trusted before it is checked: the FlatBuffers
// verifier runs over the whole buffer first, then the format version, the
// rank count, the sampler (its kernel and candidate count), every weight
// entry's range within its pack, and each pack's
// size and checksum (a changed or truncated pack is refused by its file
// name). Only a plan that passes everything is handed to a backend, so
// nothing is ever served from a partly loaded plan.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/GenerationDefaults.h"
#include "runtime/schema/PlanFormat.h"
#include "runtime/support/MappedFile.h"
#include "runtime/support/Status.h"

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace volt::plan {

struct LoadOptions {
  /// Read every byte of every pack to compare its checksum (XXH3-64). Off
  /// only for tools that inspect a plan without its weights.
  bool verifyChecksums = true;
  /// Map the weight packs. Off: the plan alone, its packs neither required
  /// nor read, for `voltc inspect` and for synthetic weights (the cuda
  /// backend's benchmarking mode, CudaBackendOptions::syntheticWeights);
  /// every pack() is then empty.
  bool loadWeights = true;
};

/// The plan's ModelInfo.generation_defaults (empty when it has none); the
/// loader checks them against vLLM's ranges.
engine::GenerationDefaults generationDefaultsOf(const Plan &plan);

class LoadedPlan {
public:
  /// Loads `path` and, beside it, the packs it names.
  static Result<std::unique_ptr<LoadedPlan>> load(const std::filesystem::path &path,
                                                  const LoadOptions &options = {});

  /// Checks a plan held in memory (no packs); `name` prefixes errors.
  static Status verifyBuffer(std::span<const uint8_t> bytes, const std::string &name);

  const Plan &plan() const { return *plan_; }
  /// XXH3-64 of the plan file's bytes (not the packs'): names this plan.
  uint64_t fileChecksum() const;
  const std::filesystem::path &path() const { return path_; }
  /// Whether the weight packs were loaded (LoadOptions::loadWeights).
  bool weightsLoaded() const { return !packs_.empty(); }
  /// The bytes of rank `rank`'s weight pack (empty when not loaded).
  std::span<const uint8_t> pack(size_t rank) const {
    return rank < packs_.size() && packs_[rank] ? packs_[rank]->bytes()
                                                : std::span<const uint8_t>();
  }
  /// Unmaps the pages of rank `rank`'s pack read so far from this process
  /// (MappedFile::dropPages), for a backend that holds a copy of it.
  void dropPackPages(size_t rank) const {
    if (rank < packs_.size() && packs_[rank])
      packs_[rank]->dropPages();
  }

private:
  LoadedPlan() = default;
  std::filesystem::path path_;
  std::unique_ptr<MappedFile> file_;
  const Plan *plan_ = nullptr;
  std::vector<std::unique_ptr<MappedFile>> packs_;
};

} // namespace volt::plan
