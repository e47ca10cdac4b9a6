// Helpers for tests that write model directories and safetensors files.
#pragma once

#include <unistd.h>
#include "compiler/model/Safetensors.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace volt::model::testing {

/// Removes this process's test directories when it exits.
struct TempDirs {
  std::vector<std::filesystem::path> dirs;
  ~TempDirs() {
    std::error_code ec;
    for (const auto &d : dirs)
      std::filesystem::remove_all(d, ec);
  }
};

/// A fresh, empty directory under the system temp folder.
inline std::filesystem::path freshDir(const std::string &name) {
  static TempDirs cleanup;
  // Per process: ctest runs test cases of one binary in parallel processes.
  auto dir = std::filesystem::temp_directory_path() /
             ("volt-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  cleanup.dirs.push_back(dir);
  return dir;
}

/// A file with a u64 header length, `header` as the JSON, and `data`.
inline void writeRaw(const std::filesystem::path &path, const std::string &header,
                     const std::vector<uint8_t> &data, std::optional<uint64_t> lengthField = {}) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  uint64_t len = lengthField.value_or(header.size());
  for (int i = 0; i < 8; ++i)
    out.put(static_cast<char>(len >> (8 * i)));
  out << header;
  out.write(reinterpret_cast<const char *>(data.data()), static_cast<std::streamsize>(data.size()));
}

inline std::string slurp(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void spit(const std::filesystem::path &path, const std::string &text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

/// One tensor of a file being rewritten; edit it or return false to drop it.
struct EditableTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

/// Rewrites a safetensors file through `edit` (which may change any field).
inline void rewrite(const std::filesystem::path &path,
                    const std::function<bool(EditableTensor &)> &edit) {
  std::vector<EditableTensor> tensors;
  {
    auto file = SafetensorsFile::open(path);
    if (!file)
      throw std::runtime_error(file.message());
    for (const TensorEntry &e : (*file)->header().tensors) {
      auto data = (*file)->data(e);
      tensors.push_back({e.name, e.dtype, e.shape, {data.begin(), data.end()}});
    }
  }
  SafetensorsWriter writer;
  for (EditableTensor &t : tensors)
    if (edit(t))
      writer.add(t.name, t.dtype, t.shape, std::move(t.bytes));
  auto st = writer.write(path);
  if (!st)
    throw std::runtime_error(st.message());
}

} // namespace volt::model::testing
