//===- Checkpoint.h - the safetensors files of a model directory -*- C++ -*-===//
//
// One table of every tensor of a model directory, over a single
// model.safetensors, a sharded checkpoint (model.safetensors.index.json), or
// no weight files at all (planning before the download). Every shard is
// mapped and its header validated when the checkpoint opens; a missing or
// truncated shard is reported by file name and by the tensor that needed it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/model/Safetensors.h"
#include "runtime/support/Status.h"

#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace volt::model {

/// A tensor of the checkpoint: its header entry and the file holding it.
struct Tensor {
  const TensorEntry *entry = nullptr;
  const SafetensorsFile *file = nullptr;

  const std::string &name() const { return entry->name; }
  DType dtype() const { return entry->dtype; }
  const std::vector<int64_t> &shape() const { return entry->shape; }
  std::span<const uint8_t> data() const { return file->data(*entry); }
};

class Checkpoint {
public:
  /// Opens every safetensors file of `modelDir`. A directory with no weight
  /// files gives an empty checkpoint (hasWeights() is false).
  static Result<Checkpoint> open(const std::filesystem::path &modelDir);

  bool hasWeights() const { return !files_.empty(); }
  /// The tensor called `name`, or nullptr.
  const Tensor *find(const std::string &name) const;
  /// All tensors, in file order then offset order.
  const std::vector<Tensor> &tensors() const { return tensors_; }
  const std::vector<std::unique_ptr<SafetensorsFile>> &files() const { return files_; }
  /// Total bytes of tensor data over all files.
  uint64_t dataBytes() const;
  /// "model.safetensors" or "model.safetensors.index.json (3 shards)".
  const std::string &layout() const { return layout_; }

private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::vector<Tensor> tensors_;
  std::unordered_map<std::string, size_t> byName_;
  std::string layout_;
};

} // namespace volt::model
