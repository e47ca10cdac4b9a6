//===- HugePages.h - copies in transparent huge pages ----------*- C++ -*-===//
//
// The cpu backend streams its weights from memory every step: a token of a
// 735 M-parameter BF16 MoE reads 453 MB. Read in place from the mapped pack
// (4 KiB pages of the page cache), that is 110,000 TLB entries a token; a
// copy in 2 MiB pages needs 220. HugePageCopy makes that copy.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace volt {

/// The kernel's transparent huge page setting for anonymous memory.
enum class TransparentHugePages {
  /// Every large enough anonymous mapping may get huge pages.
  Always,
  /// Those advised MADV_HUGEPAGE.
  Madvise,
  /// None.
  Never,
  /// The setting could not be read (no such file: not Linux, or a kernel
  /// without THP).
  Unknown,
};

/// Where the setting is read from.
inline constexpr const char *kTransparentHugePagesPath =
    "/sys/kernel/mm/transparent_hugepage/enabled";

/// The setting that `text` (that file's contents, e.g. "always [madvise]
/// never") selects: the bracketed word; Unknown when there is none.
TransparentHugePages parseTransparentHugePages(std::string_view text);
/// The setting of this machine.
TransparentHugePages transparentHugePages();
const char *toString(TransparentHugePages setting);

/// MemAvailable of /proc/meminfo in bytes (the kernel's estimate of what can
/// be allocated without swapping, reclaimable page cache included); 0 when
/// it cannot be read.
uint64_t availableMemoryBytes();
/// MemAvailable of `meminfo` (the text of /proc/meminfo) in bytes; 0 when
/// the line is missing or malformed.
uint64_t parseAvailableMemory(std::string_view meminfo);

/// Whether a copy of `bytes` in huge pages is worth making where the
/// kernel's setting is `thp` and MemAvailable is `available` bytes (0:
/// unknown): the setting is "always" or "madvise" and the copy takes at
/// most 3/4 of the available memory. If not, `why` says why, naming the
/// setting's file or the sizes.
bool hugePageCopyPays(TransparentHugePages thp, uint64_t bytes, uint64_t available,
                      std::string &why);

/// The AnonHugePages of the mappings within [begin, end) in `smaps` (the
/// text of /proc/self/smaps), in bytes; a mapping that reaches past the
/// range counts at most its bytes inside it.
uint64_t parseAnonHugeBytes(std::string_view smaps, uintptr_t begin, uintptr_t end);

/// A read-only copy of some bytes in anonymous memory aligned to 2 MiB and
/// advised MADV_HUGEPAGE: where the kernel has them (transparent huge pages
/// "always" or "madvise"), it backs the copy with huge pages; elsewhere the
/// copy is in ordinary pages. Unmapped on destruction.
class HugePageCopy {
public:
  /// Copies `bytes`; `what` names them in the error when the memory cannot
  /// be had.
  static Result<std::unique_ptr<HugePageCopy>> of(std::span<const uint8_t> bytes,
                                                  const std::string &what);
  ~HugePageCopy();
  HugePageCopy(const HugePageCopy &) = delete;
  HugePageCopy &operator=(const HugePageCopy &) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  /// How many of the copy's bytes the kernel backs with huge pages now
  /// (from /proc/self/smaps, at most bytes().size(); 0 when that cannot be
  /// read).
  uint64_t hugeBytes() const;

private:
  HugePageCopy(uint8_t *mapping, size_t mappingBytes, const uint8_t *data, size_t size)
      : mapping_(mapping), mappingBytes_(mappingBytes), data_(data), size_(size) {}
  uint8_t *mapping_;
  size_t mappingBytes_;
  const uint8_t *data_;
  size_t size_;
};

} // namespace volt
