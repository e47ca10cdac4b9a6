//===- Safetensors.h - safetensors files: validated reading, writing -*- C++ -*-===//
//
// A safetensors file is a u64 little-endian header length N, N bytes of JSON
// describing each tensor (dtype, shape, byte range in the data buffer), then
// the data buffer. volt validates a header completely before trusting any of
// it: size limits, known dtypes, byte ranges that match shape × dtype (with
// overflow-checked arithmetic), and ranges that tile the data buffer exactly,
// with no hole, overlap or missing tail. Validation reads only the header, so
// opening a checkpoint costs O(tensors), not O(bytes).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/MappedFile.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace volt::model {

/// The element types of safetensors that volt reads.
enum class DType : uint8_t {
  Bool,
  U8,
  I8,
  F8E5M2,
  F8E4M3,
  F8E8M0,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  F64,
  I64,
  U64,
};

/// The safetensors spelling ("BF16", "F8_E4M3", ...).
std::string_view dtypeName(DType dtype);
/// Bytes per element.
uint64_t dtypeSize(DType dtype);
/// Parses a safetensors dtype name; unknown or sub-byte types are errors.
Result<DType> parseDType(std::string_view name);
/// "[2048, 768]"
std::string formatShape(std::span<const int64_t> shape);

/// One tensor of a safetensors header. Offsets are relative to the data
/// buffer, as in the file.
struct TensorEntry {
  std::string name;
  DType dtype = DType::U8;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t numElements() const;
  uint64_t numBytes() const { return end - begin; }
};

/// A validated header.
struct SafetensorsHeader {
  /// In the order of their data offsets.
  std::vector<TensorEntry> tensors;
  std::map<std::string, std::string> metadata;
  /// Where the data buffer starts in the file: 8 + header length.
  uint64_t dataOffset = 0;
};

/// Largest header accepted, as in the reference implementation.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

/// Parses and validates the header of a safetensors file. `bytes` must hold
/// at least the header (8 + N bytes) and may hold the whole file; `fileSize`
/// is the size of the whole file. Errors start with `fileName`.
Result<SafetensorsHeader> parseSafetensorsHeader(std::span<const uint8_t> bytes, uint64_t fileSize,
                                                 std::string_view fileName);

/// A memory-mapped, validated safetensors file.
class SafetensorsFile {
public:
  static Result<std::unique_ptr<SafetensorsFile>> open(const std::filesystem::path &path);

  const std::string &path() const { return file_->path(); }
  const SafetensorsHeader &header() const { return header_; }
  /// The bytes of one tensor of this file.
  std::span<const uint8_t> data(const TensorEntry &entry) const {
    return file_->bytes().subspan(header_.dataOffset + entry.begin, entry.numBytes());
  }
  /// The mapping, for readahead advice (MappedFile::advise, prefetch).
  const MappedFile &mapping() const { return *file_; }
  /// Starts reading bytes [begin, end) of one tensor's data.
  void prefetch(const TensorEntry &entry, uint64_t begin, uint64_t end) const {
    file_->prefetch(header_.dataOffset + entry.begin + begin, end - begin);
  }

private:
  SafetensorsFile(std::unique_ptr<MappedFile> file, SafetensorsHeader header)
      : file_(std::move(file)), header_(std::move(header)) {}
  std::unique_ptr<MappedFile> file_;
  SafetensorsHeader header_;
};

/// Writes safetensors files. Tensors are laid out in the order they are
/// added; "sparse" tensors are all-zero and written as holes, so that
/// checkpoints of real models' shapes cost no disk space.
class SafetensorsWriter {
public:
  /// Adds a tensor with its bytes (size must be shape × dtype).
  void add(std::string name, DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes);
  /// Adds an all-zero tensor that is not materialised in memory.
  void addZeros(std::string name, DType dtype, std::vector<int64_t> shape);
  void setMetadata(std::string key, std::string value) {
    metadata_[std::move(key)] = std::move(value);
  }
  size_t size() const { return tensors_.size(); }
  /// Total data bytes of the tensors added so far.
  uint64_t dataBytes() const { return dataBytes_; }
  /// Writes the file (atomically: to a temporary name, then renamed).
  Status write(const std::filesystem::path &path) const;

private:
  struct Pending {
    TensorEntry entry;
    std::vector<uint8_t> bytes; ///< empty for zeros
  };
  std::vector<Pending> tensors_;
  std::map<std::string, std::string> metadata_;
  uint64_t dataBytes_ = 0;
};

} // namespace volt::model
