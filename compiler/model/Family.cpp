//===- Family.cpp - the family registry -----------------------------------===//
#include "compiler/model/Family.h"

#include "compiler/model/families/Families.h"

#include <algorithm>
#include <mutex>

namespace volt::model {
namespace {

std::mutex &registryMutex() {
  static std::mutex m;
  return m;
}

std::vector<const FamilyDef *> &registered() {
  static std::vector<const FamilyDef *> list;
  return list;
}

} // namespace

std::vector<const FamilyDef *> allFamilies() {
  std::vector<const FamilyDef *> all = {&families::qwen3Moe(), &families::qwen2Moe(),
                                        &families::mixtral(), &families::qwen3(),
                                        &families::llama(), &families::qwen3Next(),
                                        &families::qwen3_5(), &families::qwen3_5Moe()};
  std::lock_guard<std::mutex> lock(registryMutex());
  all.insert(all.end(), registered().begin(), registered().end());
  return all;
}

const FamilyDef *familyByArchitecture(const std::string &architecture) {
  for (const FamilyDef *f : allFamilies())
    if (std::find(f->architectures.begin(), f->architectures.end(), architecture) !=
        f->architectures.end())
      return f;
  return nullptr;
}

const FamilyDef *familyByName(const std::string &name) {
  for (const FamilyDef *f : allFamilies())
    if (f->name == name)
      return f;
  return nullptr;
}

Status registerFamily(const FamilyDef &family) {
  if (family.name.empty() || family.architectures.empty() || family.layerTypes.empty() ||
      !family.parseConfig || !family.bindLayer)
    return Error("family '" + family.name +
                 "': a family needs a name, architectures, layer types, parseConfig and bindLayer");
  if (familyByName(family.name))
    return Error("family '" + family.name + "' is already registered");
  for (const std::string &a : family.architectures)
    if (familyByArchitecture(a))
      return Error("family '" + family.name + "': architecture '" + a + "' is already read by '" +
                   familyByArchitecture(a)->name + "'");
  std::lock_guard<std::mutex> lock(registryMutex());
  registered().push_back(&family);
  return Status::success();
}

std::vector<std::string> supportedArchitectures() {
  std::vector<std::string> names;
  for (const FamilyDef *f : allFamilies())
    names.insert(names.end(), f->architectures.begin(), f->architectures.end());
  return names;
}

} // namespace volt::model
