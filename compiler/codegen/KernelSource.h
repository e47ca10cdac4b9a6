//===- KernelSource.h - a kernel template with one call site's constants -*- C++ -*-===//
//
// A kernel is instantiated by prefixing its template with `#define`s: each
// constant `name = value` becomes `#define VOLT_<NAME> value`, and the
// template turns those into `constexpr` values. Two call sites with the same
// constants share one kernel, so a request's key is what deduplicates them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/codegen/Nvrtc.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace volt::codegen {

/// One kernel to build: a template (templates/<kernel>.cu, whose entry
/// point is named `kernel` too) and its constants.
struct KernelRequest {
  std::string kernel;
  /// (name, value), lower_snake names ("k", "warps"); kept sorted by name.
  std::vector<std::pair<std::string, int64_t>> constants;
  /// Threads per block the launches use (the template's VOLT_THREADS).
  uint32_t threads = 0;
  /// Dynamic shared memory bytes the launches pass.
  uint32_t dynamicSharedBytes = 0;

  /// Adds or replaces a constant, keeping the list sorted.
  KernelRequest &set(const std::string &name, int64_t value);
  /// The value of a constant (0 when absent).
  int64_t get(const std::string &name) const;
  /// "nvfp4_gemv(k=2048, n=4096, ...)": equal for equal requests, and what
  /// `voltc inspect` shows.
  std::string key() const;
};

/// The program NVRTC compiles for `request`: a generated main file of
/// `#define`s that includes the template, with every template file
/// available as a header. Fails when the template does not exist or a
/// constant's name is not a C identifier.
Result<NvrtcSource> instantiate(const KernelRequest &request);

/// The options every kernel is compiled with (besides the architecture).
std::vector<std::string> nvrtcOptions();

} // namespace volt::codegen
