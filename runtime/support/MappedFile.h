//===- MappedFile.h - read-only memory-mapped files ------------*- C++ -*-===//
//
// Checkpoints and weight packs are tens of gigabytes; they are mapped, never
// read into memory, so that opening one costs O(headers), not O(bytes).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace volt {

/// A whole file mapped read-only. Move-only; unmaps on destruction.
class MappedFile {
public:
  /// Maps `path`. An empty file maps to an empty span.
  static Result<std::unique_ptr<MappedFile>> open(const std::string &path);
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  const std::string &path() const { return path_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }

private:
  MappedFile(std::string path, const uint8_t *data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const uint8_t *data_;
  size_t size_;
};

} // namespace volt
