//===- WeightPacker.h - one rank's weights, in the layout kernels read -*- C++ -*-===//
//
// Writes weights.rankN.bin: for each weight entry of the plan, this rank's
// slice of every checkpoint tensor it names (parts along rows, experts
// stacked), converted to the dtype and layout the kernels read, each entry
// aligned and checksummed (XXH3-64), the whole file checksummed too. The
// file is written once, sequentially, and renamed into place when complete.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/model/Checkpoint.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace volt::pack {

/// How one part splits over ranks (see #volt.shard): along `dim` of the
/// weight's logical shape into `parts` slices, rank r taking slice
/// r / replicas.
struct Shard {
  int64_t dim = 0;
  int64_t parts = 1;
  int64_t replicas = 1;
};

/// Which rows of a named checkpoint tensor a part is, when it is not the
/// whole tensor (checkpoints that store several parts in one tensor:
/// Qwen3.5's flat `in_proj_qkv` [q | k | v], Qwen3-Next's `in_proj_qkvz`
/// grouped per key head, `q_proj` rows alternating [q_h | gate_h], experts
/// fused into one [E, 2I, H] `gate_up_proj`). The part's rows (all ranks'
/// together) are `groups` runs of equal length, run g starting at row
/// `offset + g * stride`; sharding splits the runs over the ranks (with one
/// run, its rows). docs/design/hybrid.md, "Weight views".
struct RowView {
  /// The expert of a tensor stacked [E, rows, cols]; -1 for [rows, cols]
  /// (or [rows]).
  int64_t expert = -1;
  int64_t offset = 0;
  /// Rows from one run's start to the next (unused with one run).
  int64_t stride = 0;
  int64_t groups = 1;
  /// The tensor's rows (per expert): its shape must be [tensorRows, cols]
  /// (or [E, tensorRows, cols]); trailing dimensions of 1 in between (a
  /// conv weight [C, 1, K]) are allowed.
  int64_t tensorRows = 0;
};

/// One entry of a rank's pack, as the compiler describes it.
struct WeightSpec {
  std::string name;
  /// Checkpoint tensor names (dense) or module paths (NVFP4), expert-major.
  std::vector<std::string> names;
  /// This rank's rows of each part.
  std::vector<int64_t> partRows;
  bool nvfp4 = false;
  /// FP8 E4M3 names with a scale per tensor or per row (`scaleNames`),
  /// written as their bytes then one F32 scale per row (Fp8RowScaled).
  bool fp8 = false;
  /// Dense: bytes per element written (2: FP16, 4: FP32).
  int elementBytes = 2;
  /// This rank's logical shape: [rows], [rows, cols] or [experts, rows, cols].
  std::vector<int64_t> shape;
  int64_t experts = 0;
  /// One per part (empty: replicated).
  std::vector<Shard> shards;
  /// NVFP4 entries quantized here from dense tensors (`names` are tensor
  /// names), each part with its global scale from `globalScales`.
  bool fromDense = false;
  std::vector<float> globalScales;
  /// One per name (empty: every name is a whole tensor).
  std::vector<RowView> views;
  /// Dense: write 1 + each value (a zero-centred norm weight), summed in
  /// FP32 and rounded once.
  bool addOne = false;
  /// Dense entries of FP8 E4M3 tensors: per name, the F32/BF16/F16 scale
  /// tensor that multiplies it ([] per tensor, [rows] or [rows, 1] per row,
  /// [ceil(rows/128), ceil(cols/128)] per block); the product is formed in
  /// FP32 and rounded once to the entry's dtype. Empty: no FP8 names.
  std::vector<std::string> scaleNames;
};

/// Where an entry landed in the pack.
struct PackedEntry {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  /// NVFP4: where the block scales start, relative to offset.
  uint64_t scalesOffset = 0;
  /// NVFP4 MoE: where the epilogue scales start (0: none; see
  /// plan.fbs WeightEntry.epilogue_offset).
  uint64_t epilogueOffset = 0;
  uint64_t checksum = 0;
};

struct PackResult {
  std::vector<PackedEntry> entries;
  uint64_t fileBytes = 0;
  uint64_t fileChecksum = 0;
};

/// Called with (bytes written, bytes in all) as the pack grows.
using Progress = std::function<void(uint64_t, uint64_t)>;

/// The bytes `spec` takes in a pack (before alignment of the next entry).
uint64_t entryBytes(const WeightSpec &spec, uint64_t *scalesOffset = nullptr,
                    uint64_t *epilogueOffset = nullptr);


/// Writes rank `rank`'s pack to `path`.
Result<PackResult> writePack(const model::Checkpoint &checkpoint,
                             const std::vector<WeightSpec> &specs, int rank,
                             const std::filesystem::path &path, const Progress &progress = {});

/// XXH3-64 of a byte range (the checksum plans record).
uint64_t checksum(const uint8_t *data, size_t size);

} // namespace volt::pack
