//===- Families.h - the built-in families ------------------------*- C++ -*-===//
#pragma once

#include "compiler/model/Family.h"

namespace volt::model::families {

const FamilyDef &qwen3Moe();
const FamilyDef &qwen2Moe();
const FamilyDef &mixtral();
const FamilyDef &qwen3();
const FamilyDef &llama();
const FamilyDef &qwen3Next();
const FamilyDef &qwen3_5();
const FamilyDef &qwen3_5Moe();

} // namespace volt::model::families
