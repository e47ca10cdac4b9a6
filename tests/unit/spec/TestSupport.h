//===- TestSupport.h - helpers shared by the spec tests --------*- C++ -*-===//
#pragma once

#include "compiler/spec/DeploySpec.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace volt::spec::testing {

/// tests/unit/spec/Inputs in the source tree.
inline std::filesystem::path inputsDir() {
  return std::filesystem::path(VOLT_SOURCE_DIR) / "tests/unit/spec/Inputs";
}

/// A fresh folder under the system temp folder, removed at the end of the
/// test, holding a model directory `models/qwen` for specs to point at.
class TempWorkspace {
public:
  TempWorkspace() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "volt-spec-test-XXXXXX").string();
    char *made = mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr);
    root_ = pattern;
    std::filesystem::create_directories(root_ / "models/qwen");
  }
  ~TempWorkspace() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  const std::filesystem::path &root() const { return root_; }

  /// Writes `text` to `relative` under the workspace; returns the full path.
  std::filesystem::path write(const std::string &relative, const std::string &text) const {
    std::filesystem::path p = root_ / relative;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

private:
  std::filesystem::path root_;
};

/// The two keys every spec needs, pointing into a TempWorkspace.
inline const char *kMinimalSpec = "model: models/qwen\ntarget: v100-sxm2-32gb\n";

} // namespace volt::spec::testing
