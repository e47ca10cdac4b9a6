//===- Templates.h - the kernel templates built into voltc -----*- C++ -*-===//
//
// Every file under templates/ is compiled into the codegen library as text
// (EmbedTemplates.cmake): `<kernel>.cu` per op family, and the shared
// device helpers under `common/`. Kernels are instantiated from these, never
// from files found at run time, so a voltc binary always compiles the
// templates it was built with.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace volt::codegen {

struct TemplateFile {
  /// Path under templates/: "nvfp4_gemv.cu", "common/volt.cuh".
  std::string_view path;
  std::string_view text;
};

/// Every template file, sorted by path.
std::span<const TemplateFile> templateFiles();

/// The file at `path`, or null.
const TemplateFile *findTemplateFile(std::string_view path);

namespace detail {
extern const TemplateFile kTemplateFiles[];
extern const size_t kTemplateFileCount;
} // namespace detail

} // namespace volt::codegen
