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
#include "runtime/numerics/Half.h"
#include "runtime/support/Status.h"

#include <cstring>
#include <filesystem>
#include <span>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace volt::model {

/// Element `index` of BF16, F16 or F32 tensor data, as FP32 (inline: the
/// weight packer calls it for every element it converts).
inline float floatAt(std::span<const uint8_t> data, DType dtype, size_t index) {
  const uint8_t *src = data.data() + index * (dtype == DType::F32 ? 4 : 2);
  if (dtype == DType::F32) {
    float v;
    std::memcpy(&v, src, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, src, 2);
  return dtype == DType::BF16 ? bf16ToFloat(h) : halfToFloat(h);
}

/// A tensor of the checkpoint: its header entry and the file holding it.
struct Tensor {
  const TensorEntry *entry = nullptr;
  const SafetensorsFile *file = nullptr;

  const std::string &name() const { return entry->name; }
  DType dtype() const { return entry->dtype; }
  const std::vector<int64_t> &shape() const { return entry->shape; }
  std::span<const uint8_t> data() const { return file->data(*entry); }
  /// Starts reading the whole tensor: the files are mapped without
  /// readahead (Checkpoint::advise), so a reader of a whole tensor asks for
  /// it first.
  void prefetch() const { file->prefetch(*entry, 0, entry->numBytes()); }
  /// Element `index` of a BF16, F16 or F32 tensor, as FP32.
  float floatAt(size_t index) const { return model::floatAt(data(), dtype(), index); }
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
  /// Advice for every file's mapping: Random while the model loads (the
  /// default after open: headers and scalar scales), Sequential to pack.
  void advise(Access access) const {
    for (const auto &f : files_)
      f->mapping().advise(access);
  }
  /// "model.safetensors" or "model.safetensors.index.json (3 shards)".
  const std::string &layout() const { return layout_; }

private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::vector<Tensor> tensors_;
  std::unordered_map<std::string, size_t> byName_;
  std::string layout_;
};

} // namespace volt::model
