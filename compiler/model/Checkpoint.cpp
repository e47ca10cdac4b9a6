//===- Checkpoint.cpp -----------------------------------------------------===//
#include "compiler/model/Checkpoint.h"

#include "compiler/model/ModelConfig.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

namespace volt::model {
namespace {

/// A shard name from an index must name a file inside the model directory:
/// relative, without "..", and not empty.
bool staysInside(const std::string &name) {
  if (name.empty() || name.front() == '/')
    return false;
  std::filesystem::path p(name);
  for (const auto &part : p)
    if (part == ".." || part == ".")
      return false;
  return true;
}

} // namespace

const Tensor *Checkpoint::find(const std::string &name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : &tensors_[it->second];
}

uint64_t Checkpoint::dataBytes() const {
  uint64_t total = 0;
  for (const Tensor &t : tensors_)
    total += t.entry->numBytes();
  return total;
}

Result<Checkpoint> Checkpoint::open(const std::filesystem::path &modelDir) {
  Checkpoint ckpt;
  std::error_code ec;
  std::filesystem::path index = modelDir / "model.safetensors.index.json";
  std::filesystem::path single = modelDir / "model.safetensors";

  // shard file name -> tensors the index assigns to it
  std::map<std::string, std::vector<std::string>> shards;
  bool fromIndex = false;
  if (std::filesystem::is_regular_file(index, ec)) {
    fromIndex = true;
    auto json = readJsonFile(index);
    if (!json)
      return json.error();
    if (!json->is_object() || !json->contains("weight_map") || !(*json)["weight_map"].is_object())
      return Error(index.string() + ": expected an object with a 'weight_map' object");
    for (const auto &[tensor, file] : (*json)["weight_map"].items()) {
      if (!file.is_string())
        return Error(index.string() + ": weight_map entry for '" + tensor +
                     "' must be a file name string");
      std::string name = file.get<std::string>();
      if (!staysInside(name))
        return Error(index.string() + ": shard name '" + name + "' (for tensor '" + tensor +
                     "') must name a file inside the model directory");
      shards[name].push_back(tensor);
    }
    if (shards.empty())
      return Error(index.string() + ": weight_map is empty");
    ckpt.layout_ = "model.safetensors.index.json (" + std::to_string(shards.size()) + " shard" +
                   (shards.size() == 1 ? "" : "s") + ")";
  } else if (std::filesystem::is_regular_file(single, ec)) {
    shards["model.safetensors"] = {};
    ckpt.layout_ = "model.safetensors";
  } else {
    // No index and no model.safetensors: take every *.safetensors file, as
    // vLLM does; none at all means a config-only directory.
    std::vector<std::string> found;
    for (const auto &e : std::filesystem::directory_iterator(modelDir, ec))
      if (e.is_regular_file() && e.path().extension() == ".safetensors")
        found.push_back(e.path().filename().string());
    std::sort(found.begin(), found.end());
    for (const std::string &f : found)
      shards[f] = {};
    ckpt.layout_ =
        found.empty() ? "no weight files" : std::to_string(found.size()) + " safetensors files";
  }

  for (const auto &[name, expected] : shards) {
    std::filesystem::path path = modelDir / name;
    if (!std::filesystem::is_regular_file(path, ec)) {
      std::string needed = expected.empty() ? "" : " (needed by tensor '" + expected.front() + "'";
      if (expected.size() > 1)
        needed += " and " + std::to_string(expected.size() - 1) + " more";
      if (!needed.empty())
        needed += ")";
      return Error(path.string() + ": shard is missing" + needed + "; the download is incomplete");
    }
    auto file = SafetensorsFile::open(path);
    if (!file)
      return file.error();
    // Loading reads scalars scattered over the file: no readahead.
    (*file)->mapping().advise(Access::Random);
    ckpt.files_.push_back(std::move(*file));
  }

  // tensor -> the shard the index assigns it to
  std::unordered_map<std::string_view, std::string_view> assignedShard;
  size_t expectedTensors = 0;
  for (const auto &[name, tensors] : shards) {
    expectedTensors += tensors.size();
    for (const std::string &t : tensors)
      assignedShard.emplace(t, name);
  }
  ckpt.byName_.reserve(fromIndex ? expectedTensors : 1024);

  // files_ was filled in the order of `shards`.
  auto shard = shards.begin();
  for (size_t f = 0; f < ckpt.files_.size(); ++f, ++shard) {
    const SafetensorsFile &file = *ckpt.files_[f];
    size_t found = 0;
    for (const TensorEntry &entry : file.header().tensors) {
      if (fromIndex) {
        // The index decides which file a tensor comes from.
        auto it = assignedShard.find(entry.name);
        if (it == assignedShard.end() || it->second != shard->first)
          continue;
        ++found;
      }
      auto [slot, inserted] = ckpt.byName_.emplace(entry.name, ckpt.tensors_.size());
      if (!inserted)
        return Error(file.path() + ": tensor '" + entry.name + "' also appears in " +
                     ckpt.tensors_[slot->second].file->path());
      ckpt.tensors_.push_back(Tensor{&entry, &file});
    }
    if (fromIndex && found != shard->second.size()) {
      for (const std::string &t : shard->second)
        if (!ckpt.byName_.count(t))
          return Error(file.path() + ": tensor '" + t +
                       "' is listed in model.safetensors.index.json for this shard but the "
                       "shard does not hold it");
    }
  }
  return ckpt;
}

} // namespace volt::model
