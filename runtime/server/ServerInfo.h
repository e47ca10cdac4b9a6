//===- ServerInfo.h - what volt-serve prints when it starts ----*- C++ -*-===//
#pragma once

#include "runtime/server/Server.h"
#include "runtime/serving/Session.h"

#include <string>

namespace volt::server {

/// The plan summary: model, SKU and arch, ranks and their memory plan
/// (weights, activation arena, workspace, KV cache), the engine's limits
/// and the backend. Several lines, each ending in '\n'.
std::string describePlan(const serving::Session &session);

/// The server's limits and authentication, one line each.
std::string describeLimits(const ServerOptions &options);

} // namespace volt::server
