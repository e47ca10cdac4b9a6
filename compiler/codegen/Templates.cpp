//===- Templates.cpp ------------------------------------------------------===//
#include "compiler/codegen/Templates.h"

namespace volt::codegen {

std::span<const TemplateFile> templateFiles() {
  return {detail::kTemplateFiles, detail::kTemplateFileCount};
}

const TemplateFile *findTemplateFile(std::string_view path) {
  for (const TemplateFile &f : templateFiles())
    if (f.path == path)
      return &f;
  return nullptr;
}

} // namespace volt::codegen
