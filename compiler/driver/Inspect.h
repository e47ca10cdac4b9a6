//===- Inspect.h - `voltc inspect`: what a plan needs, before deploying -*- C++ -*-===//
//
// Reads a compiled plan (without its weights) and reports, per rank, the
// memory plan — weights, KV cache (blocks, tokens, full-length sequences),
// activation arena against its lower bound, workspaces, reserves, total
// against the budget — the largest buffers with their lifetimes, and the
// launches of one decode step. What an operator reads before deploying.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace volt::driver {

struct InspectReport {
  nlohmann::json json;
};

Result<InspectReport> inspect(const std::filesystem::path &plan);
std::string formatInspectReport(const InspectReport &report);
/// `voltc inspect --html`: a self-contained page of the memory plan per GPU
/// (compiler/driver/InspectHtml.cpp).
std::string formatInspectHtml(const InspectReport &report);

} // namespace volt::driver
