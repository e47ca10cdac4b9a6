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

/// How a mapping will be read, for the kernel's readahead (madvise).
enum class Access {
  Normal,
  /// Scattered small reads (headers, scalar scales): no readahead, so that
  /// touching a 4-byte tensor does not read the megabytes around it (a
  /// disk's read_ahead_kb can be 8 MiB; a checkpoint's thousands of
  /// scalars would otherwise read the whole file).
  Random,
  /// Front to back (packing weights): read ahead aggressively.
  Sequential,
};

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
  /// Advises the kernel how the whole mapping will be read.
  void advise(Access access) const;
  /// Starts reading [offset, offset + length) into the page cache, without
  /// waiting (MADV_WILLNEED): a prefetch for reads that come next.
  void prefetch(size_t offset, size_t length) const;
  /// Unmaps the pages read so far from this process (MADV_DONTNEED), for a
  /// reader that has copied the bytes elsewhere: they leave its resident
  /// set, stay in the page cache while the kernel keeps them, and a later
  /// read maps them again.
  void dropPages() const;

private:
  MappedFile(std::string path, const uint8_t *data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const uint8_t *data_;
  size_t size_;
};

} // namespace volt
