//===- BuiltinSkus.h - the SKU files built into the binary -----*- C++ -*-===//
//
// BuiltinSkus.cpp is generated at build time from specs/*.yaml by
// EmbedFiles.cmake, so built-in SKU names work from any folder and a
// deployed compiler needs no data files next to it.
//
// Private to compiler/spec.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>

namespace volt::spec::detail {

struct EmbeddedFile {
  const char *name; ///< file name without ".yaml"
  const char *data; ///< the file's bytes (NUL-terminated for convenience)
  size_t size;      ///< number of bytes, without the terminator
};

/// Sorted by name.
extern const EmbeddedFile kBuiltinSkuFiles[];
extern const size_t kBuiltinSkuFileCount;

} // namespace volt::spec::detail
