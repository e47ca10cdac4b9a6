//===- Auth.h - API keys ---------------------------------------*- C++ -*-===//
//
// `--api-key`: every request (but the endpoints left open) must carry
// `Authorization: Bearer <key>`. The comparison takes a time that depends
// only on the configured key's length, so that response times do not tell
// an attacker how many leading characters of a guess were right.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string_view>

namespace volt::server {

/// Whether `candidate` equals `secret`, in time independent of where they
/// differ (it depends on secret's length only).
bool constantTimeEquals(std::string_view candidate, std::string_view secret);

/// Whether an Authorization header value ("Bearer <key>"; the scheme is
/// case-insensitive) carries `apiKey`.
bool bearerMatches(std::string_view authorization, std::string_view apiKey);

} // namespace volt::server
