//===- KernelCache.h - compiled kernels on disk, by content hash -*- C++ -*-===//
//
// NVRTC takes seconds per kernel; a model has dozens. Every compiled kernel
// is stored under the hash of everything that decides its bytes (the
// instantiated source and its headers, the options, the target, the NVRTC
// version), so compiling a model again, or another model that shares
// kernels, reuses them without calling NVRTC. Entries are written to a
// temporary file and renamed, so concurrent compilers never read half an
// entry; an entry that does not verify is ignored and rewritten.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/codegen/Nvrtc.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace volt::codegen {

/// The environment variable that moves the cache.
inline constexpr const char *kKernelCacheEnv = "VOLT_KERNEL_CACHE";

struct CachedKernel {
  std::vector<uint8_t> cubin;
  std::string ptx;
};

class KernelCache {
public:
  /// $VOLT_KERNEL_CACHE, else $XDG_CACHE_HOME/volt/kernels, else
  /// ~/.cache/volt/kernels (empty when none of these can be formed).
  static std::filesystem::path defaultDir();

  explicit KernelCache(std::filesystem::path dir) : dir_(std::move(dir)) {}
  const std::filesystem::path &dir() const { return dir_; }

  /// The cache key of one compile: a 32-digit hex XXH3-128 digest.
  static std::string key(const NvrtcSource &source, const std::vector<std::string> &options,
                         const std::string &target, const std::string &nvrtcVersion);

  /// The entry stored under `key`, if present and intact.
  std::optional<CachedKernel> load(const std::string &key) const;
  /// Stores an entry (creating the folder).
  Status store(const std::string &key, const CachedKernel &kernel) const;

private:
  std::filesystem::path dir_;
};

} // namespace volt::codegen
